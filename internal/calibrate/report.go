package calibrate

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// Report is a calibration's outcome: what was measured, what was fitted
// and how well the fitted profile predicts, in-sample and held out.
type Report struct {
	URL      string     `json:"url"`
	Server   ServerInfo `json:"server"`
	Rounds   int        `json:"rounds"`
	Runs     int        `json:"experiment_runs"`
	Requests int        `json:"requests"`
	// ElapsedSeconds is the measuring time.
	ElapsedSeconds float64  `json:"elapsed_s"`
	Warnings       []string `json:"warnings,omitempty"`
	// ClientOverheadMs is Measurements.OverheadMs, with its note.
	ClientOverheadMs        float64 `json:"client_overhead_ms"`
	ClientOverheadPerKTokMs float64 `json:"client_overhead_per_1k_prompt_tokens_ms"`
	ClientOverheadNote      string  `json:"client_overhead_note"`
	Fit                     *Fit    `json:"fit"`
	// Probes summarise every measured request (provenance).
	Probes []ProbeRow `json:"probes"`
}

// ProbeRow is one measured request, summarised.
type ProbeRow struct {
	Experiment   string  `json:"experiment"`
	Round        int     `json:"round"`
	Stream       int     `json:"stream"`
	Role         Role    `json:"role"`
	SentMs       float64 `json:"sent_ms"`
	TTFTMs       float64 `json:"ttft_ms,omitempty"`
	ITLMeanMs    float64 `json:"itl_mean_ms,omitempty"`
	PromptTokens int     `json:"prompt_tokens"`
	OutputTokens int     `json:"output_tokens"`
	Error        string  `json:"error,omitempty"`
}

// NewReport assembles the report of m and fit.
func NewReport(url string, m *Measurements, fit *Fit) *Report {
	r := &Report{URL: url, Server: m.Server, Rounds: m.Rounds, Runs: len(m.Runs), ElapsedSeconds: m.Elapsed.Seconds(),
		Warnings: m.Warnings, ClientOverheadMs: m.OverheadMs, ClientOverheadPerKTokMs: m.OverheadPerKTokMs, ClientOverheadNote: m.OverheadNote, Fit: fit}
	for _, run := range m.Runs {
		e := m.Plan.Experiments[run.Experiment]
		for si, res := range run.Results {
			r.Requests++
			row := ProbeRow{Experiment: e.ID, Round: run.Round, Stream: si, Role: e.Streams[si].Role,
				SentMs: ms(res.Sent), PromptTokens: res.PromptTokens, OutputTokens: max(res.CompletionTokens, res.Tokens()),
				Error: res.Err}
			if n := res.Tokens(); n > 0 {
				row.TTFTMs = ms(res.TTFT())
				if n > 1 {
					row.ITLMeanMs = ms(res.TokenTimes[n-1]-res.TokenTimes[0]) / float64(n-1)
				}
			}
			r.Probes = append(r.Probes, row)
		}
	}
	return r
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the terminal report: per experiment measured against
// predicted, then the error summary.
func (r *Report) WriteTable(w io.Writer) {
	f := r.Fit
	fmt.Fprintf(w, "calibrated %s (model %s): %d rounds, %d experiment runs, %d requests in %.1f s\n",
		r.URL, r.Server.Model, r.Rounds, r.Runs, r.Requests, r.ElapsedSeconds)
	fmt.Fprintf(w, "simulated engine: block_size %d, num_gpu_blocks %d, max_num_seqs %d, max_num_batched_tokens %d\n",
		f.Engine.BlockSize, f.Engine.NumGPUBlocks, f.Engine.MaxNumSeqs, f.Engine.MaxNumBatchedTokens)
	fmt.Fprintf(w, "client-side TTFT overhead: %.2f ms + %.3f ms per 1000 prompt tokens (%s)\n",
		r.ClientOverheadMs, r.ClientOverheadPerKTokMs, r.ClientOverheadNote)
	fmt.Fprintf(w, "attention over cached prompt tokens: %.3f ms per million new × cached token pairs (prefill_cached_ms_per_mtok)\n",
		f.Profile.PrefillCachedMsPerMTok)
	fmt.Fprintf(w, "\n%-26s %-8s %-4s %10s %10s %7s %9s %9s %7s\n", "experiment", "kind", "use",
		"TTFT meas", "TTFT fit", "err", "ITL meas", "ITL fit", "err")
	for _, e := range f.Experiments {
		use := "fit"
		if e.HeldOut {
			use = "held"
		}
		fmt.Fprintf(w, "%-26s %-8s %-4s %10s %10s %7s %9s %9s %7s\n", e.ID, e.Kind, use,
			msCell(e.TTFTMeasured), msCell(e.TTFTPredicted), pctCell(e.TTFTAPE),
			msCell(e.ITLMeasured), msCell(e.ITLPredicted), pctCell(e.ITLAPE))
	}
	fmt.Fprintf(w, "\n%-10s %5s %12s %10s %12s %10s\n", "error", "exps", "TTFT median", "TTFT p90", "ITL median", "ITL p90")
	for _, s := range []struct {
		name string
		e    ErrorSummary
	}{{"in-sample", f.InSample}, {"held-out", f.HeldOut}} {
		fmt.Fprintf(w, "%-10s %5d %12s %10s %12s %10s\n", s.name, s.e.Experiments,
			pctCell(s.e.TTFTMedian), pctCell(s.e.TTFTP90), pctCell(s.e.ITLMedian), pctCell(s.e.ITLP90))
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
}

func msCell(v float64) string {
	if v <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}

func pctCell(v float64) string {
	if v < 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*v)
}

// ProfileFile is the written profile: the interpolated model's five arrays
// (what internal/profile reads) and, under keys the reader ignores, the
// calibration that produced them.
type ProfileFile struct {
	engine.Profile
	Calibration *Report `json:"calibration"`
	// CreatedAt is when the profile was written (RFC 3339, UTC).
	CreatedAt string `json:"created_at"`
}

// WriteProfile writes the profile JSON of r's fit.
func WriteProfile(w io.Writer, r *Report, now time.Time) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(ProfileFile{Profile: *r.Fit.Profile, Calibration: r, CreatedAt: now.UTC().Format(time.RFC3339)})
}
