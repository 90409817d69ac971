package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/mocker-server/mocker-server/internal/calibrate"
)

type calibrateFlags struct {
	url            string
	apiKey         string
	model          string
	out            string
	budget         time.Duration
	maxConcurrency int
	requestTimeout time.Duration
	dryRun         bool
	json           bool
	html           string
	progress       bool
	noProgress     bool
}

func newCalibrateCmd(stdout, stderr io.Writer) *cobra.Command {
	var f calibrateFlags
	cmd := &cobra.Command{
		Use:   "calibrate --url URL --out PROFILE [flags]",
		Short: "Measure an OpenAI-compatible endpoint and fit a timing profile the mock loads",
		Long: "calibrate probes a live OpenAI-compatible server with designed streamed /v1/completions\n" +
			"experiments (prefill sweep with and without a cached prefix, decode batches, prefills\n" +
			"arriving during decodes), fits the interpolated timing profile through the engine's own\n" +
			"scheduler in virtual time, and writes a profile that serve, fleet and replay load with\n" +
			"--planner-profile-data PROFILE. It reports the fit's error on the experiments it fitted and\n" +
			"on held-out ones (docs/calibration.md).",
		Example: "  mocker-server calibrate --url http://127.0.0.1:8000 --out profile.json --budget 5m\n" +
			"  mocker-server calibrate --url http://127.0.0.1:8000 --out profile.json --dry-run",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCalibrate(cmd.Context(), &f, stdout, stderr)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.url, "url", "", "base URL of the server to calibrate (e.g. http://127.0.0.1:8000)")
	fs.StringVar(&f.apiKey, "api-key", "", "bearer token sent to the server (default: $OPENAI_API_KEY)")
	fs.StringVar(&f.model, "model", "", "model name to request (default: the first one /v1/models lists)")
	fs.StringVar(&f.out, "out", "", "profile file to write (JSON, the interpolated profile format)")
	fs.DurationVar(&f.budget, "budget", 10*time.Minute, "time budget of the whole run, fit included")
	fs.IntVar(&f.maxConcurrency, "max-concurrency", 64, "most requests ever in flight at once")
	fs.DurationVar(&f.requestTimeout, "request-timeout", 2*time.Minute, "bound on one request, retries included")
	fs.BoolVar(&f.dryRun, "dry-run", false, "print the experiment plan and exit (no request is sent)")
	fs.BoolVar(&f.json, "json", false, "print the report as JSON on stdout instead of the table")
	fs.StringVar(&f.html, "html", "", "also write a self-contained HTML report to this file")
	fs.BoolVar(&f.progress, "progress", false, "draw the progress bar on stderr even when it is not a terminal")
	fs.BoolVar(&f.noProgress, "no-progress", false, "never draw the progress bar")
	setGroup(fs, "Target", "url", "api-key", "model")
	setGroup(fs, "Experiments", "budget", "max-concurrency", "request-timeout", "dry-run")
	setGroup(fs, "Output", "out", "json", "html", "progress", "no-progress")
	setGroupedHelp(cmd, "Target", "Experiments", "Output")
	return cmd
}

func runCalibrate(ctx context.Context, f *calibrateFlags, stdout, stderr io.Writer) error {
	if f.maxConcurrency < 1 {
		return usageErr("--max-concurrency must be ≥ 1, got %d", f.maxConcurrency)
	}
	if f.budget <= 0 {
		return usageErr("--budget must be > 0, got %v", f.budget)
	}
	if f.requestTimeout <= 0 {
		return usageErr("--request-timeout must be > 0, got %v", f.requestTimeout)
	}
	popts := calibrate.PlanOptions{MaxConcurrency: f.maxConcurrency, Quick: f.budget < 5*time.Minute}
	if f.dryRun {
		calibrate.NewPlan(popts).Write(stdout)
		fmt.Fprintln(stdout, "(for a server with vLLM's defaults; a live run keeps the plan within the server's model length and KV capacity)")
		return nil
	}
	if f.url == "" {
		return usageErr("calibrate needs --url URL (the server to measure)")
	}
	if u, err := url.Parse(f.url); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageErr("--url %q: want http://HOST:PORT or https://HOST", f.url)
	}
	if f.out == "" {
		return usageErr("calibrate needs --out PROFILE (the profile file to write)")
	}
	if dir := filepath.Dir(f.out); dir != "" {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return usageErr("--out %q: directory %q does not exist", f.out, dir)
		}
	}
	if f.apiKey == "" {
		f.apiKey = os.Getenv("OPENAI_API_KEY")
	}
	c := calibrate.NewClient(f.url, f.apiKey, f.model)
	defer c.Close()
	c.RequestTimeout = f.requestTimeout
	opts := calibrate.Options{Budget: f.budget, MaxConcurrency: f.maxConcurrency}
	var bar *progressLine
	if !f.noProgress && (f.progress || isTerminal(stderr)) {
		bar = &progressLine{w: stderr, start: time.Now(), budget: f.budget}
		opts.Progress = bar.update
	}
	m, err := calibrate.Measure(ctx, c, opts)
	if bar != nil {
		bar.finish()
	}
	var setup *calibrate.SetupError
	if errors.As(err, &setup) {
		return usageErr("calibrate: %v", setup)
	}
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("calibrate interrupted: nothing written")
		}
		return err
	}
	fit, err := calibrate.FitProfile(m, calibrate.FitOptions{})
	if err != nil {
		return fmt.Errorf("calibrate: fit: %w", err)
	}
	rep := calibrate.NewReport(f.url, m, fit)
	if ctx.Err() != nil {
		return fmt.Errorf("calibrate interrupted: nothing written")
	}
	if err := writeAtomic(f.out, func(w io.Writer) error { return calibrate.WriteProfile(w, rep, time.Now()) }); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if f.html != "" {
		if err := writeAtomic(f.html, func(w io.Writer) error { return calibrate.WriteHTML(w, rep) }); err != nil {
			return fmt.Errorf("--html: %w", err)
		}
	}
	if f.json {
		return rep.WriteJSON(stdout)
	}
	rep.WriteTable(stdout)
	fmt.Fprintf(stdout, "\nprofile written to %s; load it with: mocker-server serve --planner-profile-data %s\n", f.out, f.out)
	return nil
}

// writeAtomic writes path through a temporary file in the same directory
// and renames it into place, so an interrupted run never leaves a
// half-written file.
func writeAtomic(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	bw := bufio.NewWriter(tmp)
	if err := write(bw); err != nil {
		tmp.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// progressLine draws requests done out of planned and the budget used.
type progressLine struct {
	mu     sync.Mutex
	w      io.Writer
	start  time.Time
	budget time.Duration
	last   time.Time
	drawn  bool
}

func (p *progressLine) update(done, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if now.Sub(p.last) < 100*time.Millisecond && done < total {
		return
	}
	p.last = now
	frac := float64(done) / float64(max(total, 1))
	n := int(min(frac, 1) * 30)
	fmt.Fprintf(p.w, "\rcalibrate [%s%s] %d/%d requests  %s of %s budget", strings.Repeat("#", n),
		strings.Repeat(".", 30-n), done, total, now.Sub(p.start).Truncate(time.Second), p.budget)
	p.drawn = true
}

func (p *progressLine) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprintln(p.w)
	}
}
