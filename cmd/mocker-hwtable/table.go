package main

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// targets are issue 27's median-APE targets per family (0 = none).
var targets = map[Family]float64{FamilyITL: 8, FamilyTTFT: 15, FamilyThroughput: 10}

// explainAbove is the median APE above which a slice must be explained.
const explainAbove = 25

// median returns the median of xs (the mean of the middle two for an even
// count); xs is sorted in place.
func median(xs []float64) float64 {
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// slice is a named subset of the evaluated results.
type slice struct {
	name string
	keep func(Result) bool
}

// slices are the table's rows: everything, then per GPU, engine, model,
// load and source, each in sorted order. The source slice separates engine
// releases: each source measured one release line (the points' README names
// it), and the same engine moves by tens of percent between releases.
func slices(results []Result) []slice {
	out := []slice{{"all", func(Result) bool { return true }}}
	by := func(label string, get func(Result) string) {
		seen := map[string]bool{}
		var vals []string
		for _, r := range results {
			if v := get(r); !seen[v] {
				seen[v] = true
				vals = append(vals, v)
			}
		}
		sort.Strings(vals)
		for _, v := range vals {
			out = append(out, slice{label + " " + v, func(r Result) bool { return get(r) == v }})
		}
	}
	by("gpu", func(r Result) string { return r.GPU })
	by("engine", func(r Result) string { return r.Engine })
	by("model", func(r Result) string { return r.Model })
	by("load", func(r Result) string { return string(r.Load) })
	by("source", func(r Result) string { return r.Source })
	return out
}

// cell formats one slice × family: median APE, count and a mark against
// the target.
func cell(apes []float64, f Family) string {
	if len(apes) == 0 {
		return "—"
	}
	m := median(apes)
	mark := ""
	switch t := targets[f]; {
	case m > explainAbove:
		mark = " ‼"
	case t > 0 && m <= t:
		mark = " ✓"
	case t > 0:
		mark = " ✗"
	}
	return fmt.Sprintf("%.1f %% (n=%d)%s", m, len(apes), mark)
}

// WriteTable writes the markdown error table of results.
func WriteTable(w io.Writer, results []Result, pointsFile string) error {
	var done, skipped []Result
	for _, r := range results {
		if r.Skipped != "" {
			skipped = append(skipped, r)
		} else {
			done = append(done, r)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Hardware timing model against published measurements\n\n")
	fmt.Fprintf(&b, "%d points from `%s`: %d compared, %d skipped.\n", len(results), pointsFile, len(done), len(skipped))
	fmt.Fprintf(&b, "Median absolute percentage error (APE = |predicted − published| / published); targets (issue 27): "+
		"TPOT/ITL ≤ 8 %%, TTFT ≤ 15 %%, output throughput ≤ 10 %%. ✓ within the target, ✗ above it, "+
		"‼ above %d %% (to be explained).\n\n", explainAbove)

	b.WriteString("## Error by slice\n\n| slice |")
	for _, f := range Families {
		fmt.Fprintf(&b, " %s |", f)
	}
	b.WriteString(" skipped |\n|---|" + strings.Repeat("---|", len(Families)+1) + "\n")
	// Slices over every point, so a slice whose points were all skipped
	// still shows, with its count.
	for _, s := range slices(results) {
		apes := map[Family][]float64{}
		skips := 0
		for _, r := range results {
			switch {
			case !s.keep(r):
			case r.Skipped != "":
				skips++
			default:
				f := metricFamily[r.Metric]
				apes[f] = append(apes[f], r.APE)
			}
		}
		fmt.Fprintf(&b, "| %s |", s.name)
		for _, f := range Families {
			fmt.Fprintf(&b, " %s |", cell(apes[f], f))
		}
		fmt.Fprintf(&b, " %d |\n", skips)
	}

	b.WriteString("\n## Points\n\n| id | model | GPU | TP | weights / KV | engine | ISL / OSL | load | metric | published | predicted | APE |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range done {
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %s / %s | %s | %s | %s | %s (%s) | %s | %s | %.1f %% |\n",
			r.ID, r.Model, r.GPU, r.TP, r.Weights, r.KVDType, r.Engine, lengths(r.Point), load(r.Point),
			r.Metric, r.Statistic, num(r.Value), num(r.Predicted), r.APE)
	}

	if len(skipped) > 0 {
		b.WriteString("\n## Skipped\n\nPoints the model could not run, with replay's reason.\n\n" +
			"| points | model | GPU | TP | weights / KV | engine | ISL / OSL | load | reason |\n|---|---|---|---|---|---|---|---|---|\n")
		// One row per configuration and reason: a run's points share both.
		type group struct {
			ids []string
			r   Result
		}
		var groups []*group
		byKey := map[string]*group{}
		for _, r := range skipped {
			k := strings.Join(r.Run, " ") + "\x00" + r.Skipped
			g, ok := byKey[k]
			if !ok {
				g = &group{r: r}
				byKey[k] = g
				groups = append(groups, g)
			}
			g.ids = append(g.ids, r.ID)
		}
		for _, g := range groups {
			r := g.r
			fmt.Fprintf(&b, "| %s | %s | %s | %d | %s / %s | %s | %s | %s | %s |\n", strings.Join(g.ids, ", "), r.Model, r.GPU, r.TP,
				r.Weights, r.KVDType, r.Engine, lengths(r.Point), load(r.Point), strings.ReplaceAll(r.Skipped, "|", "\\|"))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// lengths is a point's ISL / OSL cell; a trace point's lengths are its
// file's, named once.
func lengths(p Point) string {
	if p.Trace != "" {
		return p.ISL
	}
	return p.ISL + " / " + p.OSL
}

func load(p Point) string {
	switch p.Load {
	case LoadMax:
		return fmt.Sprintf("max (%d req.)", p.Requests)
	case LoadRate:
		return strconv.FormatFloat(p.Rate, 'g', -1, 64) + " req/s"
	}
	return "C=" + strconv.Itoa(p.Concurrency)
}

// num formats a figure with four significant digits.
func num(x float64) string { return strconv.FormatFloat(x, 'g', 4, 64) }
