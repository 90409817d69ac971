package replay

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteJSON writes reports as indented JSON: one report as an object,
// several (a comparison) as {"reports": [...]}. The bytes depend only on
// the reports, so a repeated run gives an identical file.
func WriteJSON(w io.Writer, reports []*Report) error {
	var v any = reports[0]
	if len(reports) > 1 {
		v = struct {
			Reports []*Report `json:"reports"`
		}{reports}
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// csvHeader names the per-request CSV columns.
var csvHeader = []string{"index", "arrival_ms", "worker", "prompt_tokens", "cached_tokens", "output_tokens",
	"queue_ms", "ttft_ms", "e2e_ms", "itl_mean_ms", "itl_min_ms", "itl_max_ms", "preemptions", "finish_reason", "error"}

// CSVWriter writes per-request rows as CSV, streaming.
type CSVWriter struct {
	w   *csv.Writer
	rec []string
}

// NewCSVWriter writes the header and returns the writer; call Flush at the end.
func NewCSVWriter(w io.Writer, withLabel bool) (*CSVWriter, error) {
	c := &CSVWriter{w: csv.NewWriter(w)}
	header := csvHeader
	if withLabel {
		header = append([]string{"setup"}, header...)
	}
	return c, c.w.Write(header)
}

// Row returns a row function for Options.Rows; label, when not empty, is
// written in a leading "setup" column (comparisons share one file).
func (c *CSVWriter) Row(label string) func(*RequestRow) error {
	return func(r *RequestRow) error {
		f := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
		c.rec = c.rec[:0]
		if label != "" {
			c.rec = append(c.rec, label)
		}
		c.rec = append(c.rec, strconv.Itoa(r.Index), f(r.Arrival), r.Worker, strconv.Itoa(r.PromptTokens),
			strconv.Itoa(r.CachedTokens), strconv.Itoa(r.OutputTokens), f(r.QueueMs), f(r.TTFTMs), f(r.E2EMs),
			f(r.ITLMeanMs), f(r.ITLMinMs), f(r.ITLMaxMs), strconv.Itoa(r.Preemptions), r.FinishReason, r.Error)
		return c.w.Write(c.rec)
	}
}

// Flush writes buffered rows and reports any write error.
func (c *CSVWriter) Flush() error {
	c.w.Flush()
	return c.w.Error()
}

// metricRow is one line of the terminal table.
type metricRow struct {
	name string
	// value formats one report's figure; lowerBetter orients the delta.
	value func(*Report) float64
	unit  string
}

func statRows(name string, get func(*Summary) *Stat, unit string) []metricRow {
	parts := []struct {
		suffix string
		pick   func(*Stat) float64
	}{
		{"mean", func(s *Stat) float64 { return s.Mean }},
		{"p50", func(s *Stat) float64 { return s.P50 }},
		{"p90", func(s *Stat) float64 { return s.P90 }},
		{"p95", func(s *Stat) float64 { return s.P95 }},
		{"p99", func(s *Stat) float64 { return s.P99 }},
		{"max", func(s *Stat) float64 { return s.Max }},
	}
	var rows []metricRow
	for _, p := range parts {
		rows = append(rows, metricRow{name + " " + p.suffix, func(r *Report) float64 { return p.pick(get(&r.Summary)) }, unit})
	}
	return rows
}

func tableRows() []metricRow {
	rows := []metricRow{
		{"requests completed", func(r *Report) float64 { return float64(r.Summary.Completed) }, ""},
		{"requests rejected", func(r *Report) float64 { return float64(r.Summary.Rejected) }, ""},
		{"requests unfinished", func(r *Report) float64 { return float64(r.Summary.Unfinished) }, ""},
		{"duration", func(r *Report) float64 { return r.Summary.DurationS }, "s"},
		{"request throughput", func(r *Report) float64 { return r.Summary.RequestThroughput }, "req/s"},
		{"output token throughput", func(r *Report) float64 { return r.Summary.OutputTokenThroughput }, "tok/s"},
		{"GPUs", func(r *Report) float64 { return float64(r.Summary.GPUs) }, ""},
		{"output tok/s per GPU", func(r *Report) float64 { return r.Summary.OutputTokenThroughputPerGPU }, "tok/s"},
		{"prefix cache hit rate", func(r *Report) float64 { return 100 * r.Summary.PrefixCacheHitRate }, "%"},
		{"preemptions", func(r *Report) float64 { return float64(r.Summary.Preemptions) }, ""},
	}
	rows = append(rows, statRows("TTFT", func(s *Summary) *Stat { return &s.TTFTMs }, "ms")...)
	rows = append(rows, statRows("ITL", func(s *Summary) *Stat { return &s.ITLMs }, "ms")...)
	rows = append(rows, statRows("token gap", func(s *Summary) *Stat { return &s.InterTokenGapMs }, "ms")...)
	rows = append(rows, statRows("E2E", func(s *Summary) *Stat { return &s.E2EMs }, "ms")...)
	rows = append(rows, statRows("queue", func(s *Summary) *Stat { return &s.QueueMs }, "ms")...)
	rows = append(rows, statRows("output tok/s per user", func(s *Summary) *Stat { return &s.OutputThroughputPerUser }, "tok/s")...)
	return rows
}

func formatValue(v float64) string {
	switch {
	case v == float64(int64(v)) && v < 1e12 && v > -1e12:
		return strconv.FormatInt(int64(v), 10)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// WriteTable writes the reports as a terminal table: one column per report
// and, for two or more, the change of each against the first.
func WriteTable(w io.Writer, reports []*Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"metric"}
	for i, r := range reports {
		head = append(head, r.Label)
		if i > 0 {
			head = append(head, "Δ vs "+reports[0].Label)
		}
	}
	head = append(head, "unit")
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, row := range tableRows() {
		cells := []string{row.name}
		base := row.value(reports[0])
		for i, r := range reports {
			v := row.value(r)
			cells = append(cells, formatValue(v))
			if i > 0 {
				cells = append(cells, delta(base, v))
			}
		}
		cells = append(cells, row.unit)
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range reports {
		fmt.Fprintf(w, "\nworkers of %s (router %s):\n", r.Label, r.Router)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "worker\trouted\tcompleted\trejected\toutput tok\thit rate %\tpreemptions\tpeak KV %\t")
		for _, wr := range r.Workers {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.1f\t%d\t%.1f\t\n", wr.Name, wr.Routed, wr.Completed, wr.Rejected,
				wr.OutputTokens, 100*wr.PrefixCacheHitRate, wr.Preemptions, 100*wr.KVUsageMax)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return writeRejections(w, reports)
}

// delta formats the relative change from base to v.
func delta(base, v float64) string {
	if base == 0 {
		if v == 0 {
			return "0%"
		}
		return "n/a"
	}
	return fmt.Sprintf("%+.1f%%", 100*(v-base)/base)
}
