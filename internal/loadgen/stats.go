package loadgen

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// Dist summarises a latency distribution in milliseconds.
type Dist struct {
	Count int     `json:"count"`
	Mean  float64 `json:"mean_ms"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}

// Percentile returns the q-quantile (0 ≤ q ≤ 1) of sorted values by linear
// interpolation between closest ranks (numpy's default "linear" method).
// It returns NaN for an empty slice.
func Percentile(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	if q <= 0 {
		return sorted[0]
	}
	if q >= 1 {
		return sorted[n-1]
	}
	pos := q * float64(n-1)
	lo := int(math.Floor(pos))
	hi := lo + 1
	if hi >= n {
		return sorted[n-1]
	}
	frac := pos - float64(lo)
	return sorted[lo] + (sorted[hi]-sorted[lo])*frac
}

// Summarize sorts ds in place and returns its distribution in ms.
func Summarize(ds []time.Duration) Dist {
	if len(ds) == 0 {
		return Dist{}
	}
	slices.Sort(ds)
	ms := make([]float64, len(ds))
	sum := 0.0
	for i, d := range ds {
		ms[i] = float64(d) / float64(time.Millisecond)
		sum += ms[i]
	}
	return Dist{
		Count: len(ms),
		Mean:  sum / float64(len(ms)),
		P50:   Percentile(ms, 0.50),
		P90:   Percentile(ms, 0.90),
		P99:   Percentile(ms, 0.99),
		Max:   ms[len(ms)-1],
	}
}

// Result is the outcome of a run.
type Result struct {
	Config Config `json:"config"`

	WallSeconds        float64        `json:"wall_seconds"`
	Requests           int            `json:"requests"` // completed without error
	Errors             int            `json:"errors"`
	ErrorKinds         map[string]int `json:"error_kinds,omitempty"`
	RequestsPerSecond  float64        `json:"requests_per_second"`
	OutputTokens       int64          `json:"output_tokens"`
	OutputTokensPerSec float64        `json:"output_tokens_per_second"`
	// TokenChunks counts the content chunks seen (the per-chunk token count);
	// OutputTokens prefers the server's usage.completion_tokens.
	TokenChunks      int64   `json:"token_chunks"`
	PromptTokensMean float64 `json:"prompt_tokens_mean"`
	// MismatchedLengths counts successful requests whose completion_tokens
	// differed from max_tokens (with ignore_eos they should not).
	MismatchedLengths int `json:"mismatched_lengths"`

	TTFT Dist `json:"ttft"`
	ITL  Dist `json:"itl"`
	E2E  Dist `json:"e2e"`
}

// WriteJSON writes the result as indented JSON.
func (r *Result) WriteJSON(w io.Writer) error { return writeIndentedJSON(w, r) }

// writeIndentedJSON writes v as JSON indented by two spaces.
func writeIndentedJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// WriteTable writes a human-readable report.
func (r *Result) WriteTable(w io.Writer) {
	c := &r.Config
	mode := fmt.Sprintf("closed-loop, concurrency %d", c.Concurrency)
	if c.Rate > 0 {
		mode = fmt.Sprintf("open-loop, Poisson %.1f req/s (max %d in flight)", c.Rate, c.Concurrency)
	}
	fmt.Fprintf(w, "mocker-bench: %s %s, %s\n", c.URL, c.endpointPath(), mode)
	fmt.Fprintf(w, "  prompt ≈%d words (server counted %.1f tokens), max_tokens %d, stream %v\n",
		c.PromptTokens, r.PromptTokensMean, c.MaxTokens, !c.NoStream)
	fmt.Fprintf(w, "requests    %d ok, %d errors in %.2f s\n", r.Requests, r.Errors, r.WallSeconds)
	WriteErrorKinds(w, r.ErrorKinds)
	if r.MismatchedLengths > 0 {
		fmt.Fprintf(w, "  warning: %d requests returned completion_tokens != max_tokens\n", r.MismatchedLengths)
	}
	fmt.Fprintf(w, "throughput  %.1f req/s, %.0f output tok/s (%d tokens)\n",
		r.RequestsPerSecond, r.OutputTokensPerSec, r.OutputTokens)
	WriteLatencies(w, r.TTFT, r.ITL, r.E2E)
}

// WriteErrorKinds writes one table line per error kind, sorted by kind, so
// every load client's report lists its errors alike.
func WriteErrorKinds(w io.Writer, kinds map[string]int) {
	keys := make([]string, 0, len(kinds))
	for k := range kinds {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  %6d × %s\n", kinds[k], k)
	}
}

// WriteLatencies writes the latency table (milliseconds) of TTFT, ITL and
// end to end, the same columns for every load client so runs compare line
// by line.
func WriteLatencies(w io.Writer, ttft, itl, e2e Dist) {
	fmt.Fprintf(w, "%-10s %10s %10s %10s %10s %10s %10s\n", "latency ms", "mean", "p50", "p90", "p99", "max", "n")
	row := func(name string, d Dist) {
		fmt.Fprintf(w, "%-10s %10.2f %10.2f %10.2f %10.2f %10.2f %10d\n", name, d.Mean, d.P50, d.P90, d.P99, d.Max, d.Count)
	}
	row("TTFT", ttft)
	row("ITL", itl)
	row("E2E", e2e)
}

// errKind shortens an error to a stable kind for counting.
func errKind(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 && strings.Contains(s[i:], "connection reset") {
		return "connection reset"
	}
	if len(s) > 120 {
		s = s[:120]
	}
	return s
}
