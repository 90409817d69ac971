package routerlab

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"

	"github.com/mocker-server/mocker-server/internal/replay"
)

var labTemplate = template.Must(template.New("lab").Funcs(template.FuncMap{
	"hit":  hit,
	"secs": secs,
	"f1":   func(v float64) string { return fmt.Sprintf("%.1f", v) },
	"f2":   func(v float64) string { return fmt.Sprintf("%.2f", v) },
	"pct":  func(v float64) string { return fmt.Sprintf("%.0f%%", 100*v) },
}).Parse(labHTML))

// WriteHTML writes one self-contained page (nothing fetched from the
// network): the comparison table, verdict, per-worker load, faults, and
// charts of the in-flight imbalance over time and the sampled KV usage,
// drawn by the Chart.js replay embeds.
func (r *Report) WriteHTML(w io.Writer) error {
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode report data: %w", err)
	}
	return labTemplate.Execute(w, map[string]any{
		"R":       r,
		"Sides":   r.sides(),
		"Data":    template.JS(data),
		"ChartJS": template.JS(replay.ChartJS()),
	})
}

const labHTML = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>router lab: {{.R.URL}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:right}
th:first-child,td:first-child{text-align:left}.chart{height:320px;margin:1em 0}
</style></head><body>
<h1>Router lab</h1>
<p>router <code>{{.R.URL}}</code>, model <code>{{.R.Model}}</code>, {{f1 .R.WallS}} s{{if .R.Interrupted}} (interrupted: partial report){{end}}</p>
<h2>Online against offline policies</h2>
<table><tr><th></th><th>requests</th><th>failed</th><th>hit rate</th><th>TTFT p50 ms</th><th>TTFT p99 ms</th><th>ITL p50 ms</th><th>E2E p50 ms</th><th>requests max/mean</th><th>tokens max/mean</th><th>in-flight max/mean</th><th>same worker</th></tr>
{{range .Sides}}<tr><td>{{.Name}}</td><td>{{.Requests}}</td><td>{{.Failed}}</td><td>{{hit .PrefixCacheHitRate}}</td><td>{{f1 .TTFTMs.P50}}</td><td>{{f1 .TTFTMs.P99}}</td><td>{{f2 .ITLMs.P50}}</td><td>{{f1 .E2EMs.P50}}</td><td>{{f2 .Imbalance.Requests}}</td><td>{{f2 .Imbalance.Tokens}}</td><td>{{f2 .Imbalance.InFlight}}</td><td>{{if eq .Name "online"}}-{{else}}{{pct .SameRouting}}{{end}}</td></tr>
{{end}}{{with .R.Bound}}<tr><td>clairvoyant bound</td><td></td><td></td><td>{{hit .HitRate}}</td><td colspan="8"></td></tr>{{end}}
</table>
{{range .R.Verdict}}<p><b>{{.}}</b></p>{{end}}
<h2>Load per worker (online)</h2>
<table><tr><th>worker</th><th>requests</th><th>failed</th><th>prompt tokens</th><th>output tokens</th><th>hit rate</th></tr>
{{range .R.Online.Workers}}<tr><td>{{.Worker}}</td><td>{{.Requests}}</td><td>{{.Failed}}</td><td>{{.PromptTokens}}</td><td>{{.OutputTokens}}</td><td>{{hit .HitRate}}</td></tr>{{end}}
</table>
<div class="chart"><canvas id="imbalance"></canvas></div>
{{if .R.Samples}}<div class="chart"><canvas id="kv"></canvas></div><div class="chart"><canvas id="queues"></canvas></div>{{end}}
{{if .R.Faults}}<h2>Faults</h2>
<table><tr><th>at s</th><th>worker</th><th>action</th><th>window s</th><th>served</th><th>failed at worker</th><th>cut in flight</th><th>cut, no worker</th><th>failed, no worker</th><th>last failure s</th><th>first served s</th><th>error</th></tr>
{{range .R.Faults}}<tr><td>{{f1 .SentS}}</td><td>{{.Worker}}</td><td>{{.Action}}</td><td>{{f1 .WindowS}}</td><td>{{.Served}}</td><td>{{.FailedAtWorker}}</td><td>{{.CutInFlight}}</td><td>{{.CutUnattributed}}</td><td>{{.FailedUnattributed}}</td><td>{{secs .LastFailureS}}</td><td>{{secs .FirstServedS}}</td><td>{{.Error}}</td></tr>{{end}}
</table>{{end}}
{{if .R.Notes}}<h2>Notes</h2><ul>{{range .R.Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
<script>{{.ChartJS}}</script>
<script>
const R = {{.Data}};
function line(id, title, yLabel, series) {
  const el = document.getElementById(id);
  if (!el) return;
  new Chart(el, {type: 'line', data: {datasets: series.map(s => ({label: s.label, data: s.values.map((v, i) => ({x: (i + 0.5) * s.step, y: v})), pointRadius: 0, borderWidth: 1.5}))},
    options: {animation: false, maintainAspectRatio: false, parsing: false, plugins: {title: {display: true, text: title}},
      scales: {x: {type: 'linear', title: {display: true, text: 'seconds'}}, y: {beginAtZero: true, title: {display: true, text: yLabel}}}}});
}
const sides = [R.online].concat(R.offline || []);
line('imbalance', 'In-flight requests, max / mean over workers', 'max / mean', sides.map(s => ({label: s.name, values: s.imbalance.over_time || [], step: s.imbalance.bucket_s})));
if (R.samples) {
  line('kv', 'KV usage per worker (sampled)', 'fraction', R.samples.map(s => ({label: 'worker ' + s.worker, values: s.kv_usage, step: s.interval_s})));
  line('queues', 'Running + waiting requests per worker (sampled)', 'requests', R.samples.map(s => ({label: 'worker ' + s.worker, values: s.running.map((r, i) => r + s.waiting[i]), step: s.interval_s})));
}
</script>
</body></html>
`
