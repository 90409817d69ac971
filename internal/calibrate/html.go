package calibrate

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strings"
)

// The HTML report is one self-contained page, like replay's: the report's
// JSON embedded in the page and charts drawn from it. replay embeds
// Chart.js for interactive charts over many series; these charts are a
// few dozen points each, so they are drawn here as inline SVG and the page
// needs no script at all.

var htmlTemplate = template.Must(template.New("calibration").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>calibration of {{.URL}}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;max-width:1100px}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}
th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}.held{background:#fff8e0}
.charts{display:flex;flex-wrap:wrap;gap:1em}figure{margin:0}figcaption{font-weight:600}
.warn{color:#a40}
</style></head><body>
<h1>Calibration of {{.URL}}</h1>
<p>Model <b>{{.Model}}</b>: {{.Rounds}} rounds, {{.Runs}} experiment runs, {{.Requests}} requests in {{.Elapsed}} s.
Simulated engine: {{.Engine}}. Client-side TTFT overhead: {{.Overhead}}.</p>
{{range .Warnings}}<p class="warn">warning: {{.}}</p>{{end}}
<h2>Error</h2>
<table><tr><th></th><th>experiments</th><th>TTFT median</th><th>TTFT p90</th><th>ITL median</th><th>ITL p90</th></tr>
{{range .Summary}}<tr><td>{{.Name}}</td><td>{{.N}}</td><td>{{.TM}}</td><td>{{.TP}}</td><td>{{.IM}}</td><td>{{.IP}}</td></tr>{{end}}
</table>
<p>Absolute percentage error of the fitted profile's prediction (the mock's scheduler in virtual time, fed the
requests as they were sent) against each experiment's measured median; held-out experiments (shaded) were not
used in the fit.</p>
<div class="charts">{{range .Charts}}<figure><figcaption>{{.Title}}</figcaption>{{.SVG}}</figure>{{end}}</div>
<h2>Experiments</h2>
<table><tr><th>experiment</th><th>kind</th><th>runs</th><th>TTFT measured ms</th><th>TTFT predicted ms</th><th>error</th>
<th>ITL measured ms</th><th>ITL predicted ms</th><th>error</th></tr>
{{range .Rows}}<tr{{if .Held}} class="held"{{end}}><td>{{.ID}}</td><td>{{.Kind}}</td><td>{{.Runs}}</td><td>{{.TM}}</td><td>{{.TP}}</td><td>{{.TE}}</td><td>{{.IM}}</td><td>{{.IP}}</td><td>{{.IE}}</td></tr>{{end}}
</table>
<h2>Fitted profile</h2>
<p>prefill_isl: {{.PrefillISL}}<br>prefill_ttft_ms: {{.PrefillMs}}<br>prefill_cached_ms_per_mtok: {{.CachedMs}} (per million new × cached token pairs of a pass)</p>
<table><tr><th>active KV tokens \ context</th>{{range .CtxAxis}}<th>{{.}}</th>{{end}}</tr>
{{range .Grid}}<tr><td>{{.KV}}</td>{{range .Cells}}<td>{{.}}</td>{{end}}</tr>{{end}}</table>
<script type="application/json" id="report">{{.Data}}</script>
</body></html>
`))

// WriteHTML writes the self-contained HTML report of r.
func WriteHTML(w io.Writer, r *Report) error {
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	f := r.Fit
	type sumRow struct {
		Name           string
		N              int
		TM, TP, IM, IP string
	}
	type expRow struct {
		ID, Kind               string
		Runs                   int
		Held                   bool
		TM, TP, TE, IM, IP, IE string
	}
	type gridRow struct {
		KV    string
		Cells []string
	}
	type chart struct {
		Title string
		SVG   template.HTML
	}
	v := map[string]any{
		"URL": r.URL, "Model": r.Server.Model, "Rounds": r.Rounds, "Runs": r.Runs, "Requests": r.Requests,
		"Elapsed":  fmt.Sprintf("%.1f", r.ElapsedSeconds),
		"Engine":   fmt.Sprintf("block_size %d, num_gpu_blocks %d, max_num_seqs %d, max_num_batched_tokens %d", f.Engine.BlockSize, f.Engine.NumGPUBlocks, f.Engine.MaxNumSeqs, f.Engine.MaxNumBatchedTokens),
		"Warnings": r.Warnings,
		"Overhead": fmt.Sprintf("%.2f ms + %.3f ms per 1000 prompt tokens (%s)", r.ClientOverheadMs, r.ClientOverheadPerKTokMs, r.ClientOverheadNote),
		"Data":     template.JS(data),
	}
	var sums []sumRow
	for _, s := range []struct {
		n string
		e ErrorSummary
	}{{"in-sample", f.InSample}, {"held-out", f.HeldOut}} {
		sums = append(sums, sumRow{s.n, s.e.Experiments, pctCell(s.e.TTFTMedian), pctCell(s.e.TTFTP90), pctCell(s.e.ITLMedian), pctCell(s.e.ITLP90)})
	}
	v["Summary"] = sums
	var rows []expRow
	for _, e := range f.Experiments {
		rows = append(rows, expRow{e.ID, string(e.Kind), e.Runs, e.HeldOut, msCell(e.TTFTMeasured), msCell(e.TTFTPredicted),
			pctCell(e.TTFTAPE), msCell(e.ITLMeasured), msCell(e.ITLPredicted), pctCell(e.ITLAPE)})
	}
	v["Rows"] = rows
	p := f.Profile
	v["PrefillISL"] = joinFloats(p.PrefillISL, "%.0f")
	v["PrefillMs"] = joinFloats(p.PrefillTTFTMs, "%.2f")
	v["CachedMs"] = fmt.Sprintf("%.3f", p.PrefillCachedMsPerMTok)
	var ctx []string
	for _, c := range p.DecodeContextLength {
		ctx = append(ctx, fmt.Sprintf("%.0f", c))
	}
	v["CtxAxis"] = ctx
	var grid []gridRow
	for i, kv := range p.DecodeActiveKVTokens {
		g := gridRow{KV: fmt.Sprintf("%.0f", kv)}
		for _, c := range p.DecodeITL[i] {
			g.Cells = append(g.Cells, fmt.Sprintf("%.2f", c))
		}
		grid = append(grid, g)
	}
	v["Grid"] = grid

	// Chart 1: TTFT of the prefill probes against prompt length, measured
	// (points) and predicted (line). Chart 2: decode ITL against batch
	// size per context length. Chart 3: predicted against measured, all.
	var pre []series
	pm, pp, ph := series{Name: "measured (fit)", Color: "#1f77b4"}, series{Name: "predicted", Color: "#d62728", Line: true},
		series{Name: "measured (held out)", Color: "#ff7f0e"}
	var dec []series
	decBy := map[int]*[2]series{}
	var ctxs []int
	var all []series
	am, ah := series{Name: "fitted experiments", Color: "#1f77b4"}, series{Name: "held out", Color: "#ff7f0e"}
	for _, e := range f.Experiments {
		switch e.Kind {
		case KindPrefill:
			pt := [2]float64{float64(e.PromptTokens), e.TTFTMeasured}
			if e.HeldOut {
				ph.Points = append(ph.Points, pt)
			} else {
				pm.Points = append(pm.Points, pt)
			}
			pp.Points = append(pp.Points, [2]float64{float64(e.PromptTokens), e.TTFTPredicted})
		case KindDecode:
			var ctxLen int
			fmt.Sscanf(e.ID[strings.LastIndex(e.ID, "ctx")+3:], "%d", &ctxLen)
			s := decBy[ctxLen]
			if s == nil {
				s = &[2]series{{Name: fmt.Sprintf("measured, context %d", ctxLen), Color: palette[len(ctxs)%len(palette)]},
					{Name: fmt.Sprintf("predicted, context %d", ctxLen), Color: palette[len(ctxs)%len(palette)], Line: true}}
				decBy[ctxLen] = s
				ctxs = append(ctxs, ctxLen)
			}
			s[0].Points = append(s[0].Points, [2]float64{float64(e.Batch), e.ITLMeasured})
			s[1].Points = append(s[1].Points, [2]float64{float64(e.Batch), e.ITLPredicted})
		}
		for _, q := range [][2]float64{{e.TTFTMeasured, e.TTFTPredicted}, {e.ITLMeasured, e.ITLPredicted}} {
			if q[0] > 0 && q[1] > 0 {
				if e.HeldOut {
					ah.Points = append(ah.Points, q)
				} else {
					am.Points = append(am.Points, q)
				}
			}
		}
	}
	pre = append(pre, pp, pm, ph)
	for _, c := range ctxs {
		dec = append(dec, decBy[c][1], decBy[c][0])
	}
	lo, hi := math.Inf(1), 0.0
	for _, s := range []series{am, ah} {
		for _, q := range s.Points {
			lo, hi = min(lo, q[0], q[1]), max(hi, q[0], q[1])
		}
	}
	all = append(all, series{Name: "y = x", Color: "#999", Line: true, Points: [][2]float64{{lo, lo}, {hi, hi}}}, am, ah)
	v["Charts"] = []chart{
		{"TTFT vs prompt tokens (single requests)", svgChart(pre, "prompt tokens", "TTFT ms", false)},
		{"ITL vs batch size (decode batches)", svgChart(dec, "batch size", "ITL ms", true)},
		{"predicted vs measured (TTFT and ITL medians, ms)", svgChart(all, "measured ms", "predicted ms", true)},
	}
	return htmlTemplate.Execute(w, v)
}

var palette = []string{"#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2"}

type series struct {
	Name   string
	Color  string
	Line   bool
	Points [][2]float64
}

func joinFloats(v []float64, format string) string {
	var s []string
	for _, x := range v {
		s = append(s, fmt.Sprintf(format, x))
	}
	return strings.Join(s, ", ")
}

// svgChart draws series as points or lines on linear (or log-log) axes.
func svgChart(ss []series, xlabel, ylabel string, logScale bool) template.HTML {
	const W, H, L, R, T, B = 440.0, 300.0, 55.0, 30.0, 10.0, 60.0
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		for _, p := range s.Points {
			if logScale && (p[0] <= 0 || p[1] <= 0) {
				continue
			}
			xmin, xmax, ymin, ymax = min(xmin, p[0]), max(xmax, p[0]), min(ymin, p[1]), max(ymax, p[1])
		}
	}
	if math.IsInf(xmin, 0) {
		return template.HTML("<p>no data</p>")
	}
	tr := func(v float64) float64 {
		if logScale {
			return math.Log10(v)
		}
		return v
	}
	if !logScale {
		xmin, ymin = 0, 0
	}
	x0, x1, y0, y1 := tr(xmin), tr(xmax), tr(ymin), tr(ymax)
	if x1 <= x0 {
		x1 = x0 + 1
	}
	if y1 <= y0 {
		y1 = y0 + 1
	}
	px := func(v float64) float64 { return L + (tr(v)-x0)/(x1-x0)*(W-L-R) }
	py := func(v float64) float64 { return H - B - (tr(v)-y0)/(y1-y0)*(H-T-B) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-size="11">`, W, H+14*float64(len(ss)))
	fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#888"/>`, L, T, W-L-R, H-T-B)
	for k := 0; k <= 4; k++ {
		fx, fy := x0+(x1-x0)*float64(k)/4, y0+(y1-y0)*float64(k)/4
		if logScale {
			fx, fy = math.Pow(10, fx), math.Pow(10, fy)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, px(fx), H-B+14, tick(fx))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`, L-4, py(fy)+4, tick(fy))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, (L+W-R)/2, H-B+30, template.HTMLEscapeString(xlabel))
	fmt.Fprintf(&b, `<text x="12" y="%.1f" transform="rotate(-90 12 %.1f)" text-anchor="middle">%s</text>`, (T+H-B)/2, (T+H-B)/2, template.HTMLEscapeString(ylabel))
	for si, s := range ss {
		pts := append([][2]float64(nil), s.Points...)
		if s.Line {
			sort.Slice(pts, func(i, j int) bool { return pts[i][0] < pts[j][0] })
			var d []string
			for _, p := range pts {
				if !logScale || p[0] > 0 && p[1] > 0 {
					d = append(d, fmt.Sprintf("%.1f,%.1f", px(p[0]), py(p[1])))
				}
			}
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`, s.Color, strings.Join(d, " "))
		} else {
			for _, p := range pts {
				if !logScale || p[0] > 0 && p[1] > 0 {
					fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`, px(p[0]), py(p[1]), s.Color)
				}
			}
		}
		ly := H + 2 + 14*float64(si)
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.1f" width="10" height="10" fill="%s"/><text x="%.0f" y="%.1f">%s</text>`,
			L, ly, s.Color, L+14, ly+9, template.HTMLEscapeString(s.Name))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func tick(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}
