package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/replay"
)

// replayFlags are replay's own flags; the fleet's engine settings are
// serve's flags (registered beside them).
type replayFlags struct {
	configs       []string
	compare       []string
	fleets        []string
	workers       int
	routers       []string
	overlapWeight float64
	prefixBlocks  int

	traceBlockSize int
	timeScale      float64
	maxRequests    int
	skipBadLines   bool

	requests     int
	rate         float64
	arrival      string
	inputLen     string
	outputLen    string
	prefixGroups int
	prefixLen    int
	turns        int
	turnGap      time.Duration
	concurrency  int
	clientDelay  time.Duration

	json       bool
	csv        string
	html       string
	noProgress bool
}

// traceOnlyFlags shape how a trace is read; without a TRACE they would do
// nothing, so they are refused.
var traceOnlyFlags = []string{"trace-block-size", "time-scale", "max-requests", "skip-bad-lines"}

func newReplayCmd(stdout, stderr io.Writer) *cobra.Command {
	var f replayFlags
	cmd := &cobra.Command{
		Use:   "replay [flags] [TRACE]",
		Short: "Replay a trace or a synthetic workload through a simulated fleet in virtual time and report",
		Long: "replay runs a Mooncake JSONL trace (or, without TRACE, a synthetic workload) through\n" +
			"--workers simulated engines configured like serve, routes it with --router, and reports\n" +
			"latencies, throughput, prefix-cache hits and load per worker. Nothing sleeps: a run takes\n" +
			"only the engines' own work. --compare A.yaml B.yaml TRACE (or --config repeated) runs the\n" +
			"same workload on each setup and shows them side by side.",
		Example: "  mocker-server replay --workers 4 --router kv_aware --max-model-len 262144 testdata/mooncake-synthetic-head400.jsonl\n" +
			"  mocker-server replay --requests 500 --rate 20 --input-len 1000 --output-len 200 --workers 2\n" +
			"  mocker-server replay --compare configs/vllm-default.yaml configs/prefix-cache-off.yaml --requests 500 --prefix-groups 8 --prefix-len 1536 --html report.html",
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReplay(cmd, &f, args, stdout, stderr)
		},
	}
	fs := cmd.Flags()
	serveFlags := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	config.RegisterFlags(serveFlags)
	serveFlags.VisitAll(func(fl *pflag.Flag) {
		if fl.Name != config.FlagConfig {
			fs.AddFlag(fl)
		}
	})
	fs.SetNormalizeFunc(serveFlags.GetNormalizeFunc())
	// Settings of a running server (HTTP, ZMQ, text, faults) mean nothing
	// offline: accepted with a warning, not listed.
	config.HideOutOfScope(fs, config.ScopeReplay)
	fs.StringArrayVar(&f.configs, config.FlagConfig, nil, "YAML or JSON configuration file of the fleet's workers; repeat it to compare setups")
	fs.StringSliceVar(&f.compare, "compare", nil, "compare setups: --compare A.yaml B.yaml TRACE (same as --config A.yaml --config B.yaml)")
	fs.StringArrayVar(&f.fleets, "fleet-file", nil, "fleet file, as for mocker-server fleet (workers: [{count, config, args}]); repeat it to compare fleets")
	fs.IntVar(&f.workers, "workers", 1, "number of workers, each with the configured engine (× its data-parallel ranks)")
	// A slice, not a string: a repeated --router adds a policy instead of
	// silently replacing the last one.
	fs.StringSliceVar(&f.routers, "router", []string{string(replay.RoundRobin)},
		fmt.Sprintf("routing policy: %v; several (a,b or repeated) replay the workload with each and compare them", replay.RouterKinds))
	fs.Float64Var(&f.overlapWeight, "kv-overlap-score-weight", 1, "kv_aware: weight of the prefill blocks against the decode blocks (Dynamo's overlap_score_weight)")
	fs.IntVar(&f.prefixBlocks, "prefix-hash-blocks", 4, "prefix_hash: number of leading blocks whose hash picks the worker")
	fs.IntVar(&f.traceBlockSize, "trace-block-size", replay.DefaultTraceBlockSize, "tokens per hash id in the trace")
	fs.Float64Var(&f.timeScale, "time-scale", 1, "multiply the trace's timestamps (0.5 = arrivals twice as fast)")
	fs.IntVar(&f.maxRequests, "max-requests", 0, "replay at most this many requests of the trace (0 = all)")
	fs.BoolVar(&f.skipBadLines, "skip-bad-lines", false, "skip malformed trace lines (counted on stderr) instead of stopping")
	fs.IntVar(&f.requests, "requests", 0, "synthetic workload (no TRACE): number of requests")
	fs.Float64Var(&f.rate, "rate", 10, "synthetic: sessions started per second")
	fs.StringVar(&f.arrival, "arrival", string(replay.ArrivalPoisson), "synthetic: arrival process, poisson or fixed")
	fs.StringVar(&f.inputLen, "input-len", "512", "synthetic: input length: N, uniform:MIN:MAX, normal:MEAN:STD, lognormal:MEAN:STD or empirical:FILE")
	fs.StringVar(&f.outputLen, "output-len", "128", "synthetic: output length (same forms as --input-len)")
	fs.IntVar(&f.prefixGroups, "prefix-groups", 0, "synthetic: number of shared-prefix groups (0 = none)")
	fs.IntVar(&f.prefixLen, "prefix-len", 0, "synthetic: tokens of each group's shared prefix")
	fs.IntVar(&f.turns, "turns", 1, "synthetic: turns per session; each turn's prompt extends the previous turn's prompt and output")
	fs.DurationVar(&f.turnGap, "turn-gap", 10*time.Second, "synthetic: time between a session's turns")
	fs.IntVar(&f.concurrency, "concurrency", 0, "closed loop (with --requests): this many clients, each sending its next request when its previous one finishes; every request has --input-len prompt tokens and generates exactly --output-len tokens")
	fs.DurationVar(&f.clientDelay, "client-delay", 0, "closed loop: time from a response's last token to its client's next request (0: that instant, joining the engine's next pass; a live client's HTTP round trip misses it)")
	fs.BoolVar(&f.json, "json", false, "write the JSON report on stdout instead of the table")
	fs.StringVar(&f.csv, "csv", "", "write one CSV row per request to this file")
	fs.StringVar(&f.html, "html", "", "write a self-contained HTML report with charts to this file")
	fs.BoolVar(&f.noProgress, "no-progress", false, "no progress bar on stderr (it is shown only when stderr is a terminal)")
	setGroup(fs, "Workload", "trace-block-size", "time-scale", "max-requests", "skip-bad-lines", "requests", "rate", "arrival",
		"input-len", "output-len", "prefix-groups", "prefix-len", "turns", "turn-gap", "concurrency", "client-delay")
	setGroup(fs, "Fleet and routing", config.FlagConfig, "compare", "fleet-file", "workers", "router", "kv-overlap-score-weight",
		"prefix-hash-blocks")
	setGroup(fs, "Report", "json", "csv", "html", "no-progress")
	setGroupedHelp(cmd, "Workload", "Fleet and routing", "Report")
	return cmd
}

// setup is one fleet to replay on.
type setup struct {
	label string
	opts  replay.Options
}

func runReplay(cmd *cobra.Command, f *replayFlags, args []string, stdout, stderr io.Writer) error {
	tuneGC()
	configs := append(slices.Clone(f.compare), f.configs...)
	trace := ""
	switch {
	case len(f.compare) > 0 && len(args) >= 1 && cmd.Flags().Changed("requests"):
		// --compare A.yaml B.yaml --requests N: a synthetic workload has no
		// TRACE, so every argument pflag left over is a configuration.
		configs = append(configs, args...)
	case len(f.compare) > 0 && len(args) >= 1:
		// --compare A.yaml B.yaml TRACE: pflag takes only A.yaml as the value.
		configs = append(configs, args[:len(args)-1]...)
		trace = args[len(args)-1]
	case len(args) == 1:
		trace = args[0]
	case len(args) > 1:
		return usageErr("replay takes one TRACE, got %d arguments: %q", len(args), args)
	}
	if len(f.compare) == 1 && len(configs) < 2 {
		return usageErr("--compare needs two or more configuration files")
	}
	if len(configs) == 0 {
		configs = []string{""}
	}
	if f.workers < 1 {
		return usageErr("--workers must be ≥ 1, got %d", f.workers)
	}
	var routers []replay.RouterKind
	for _, name := range f.routers {
		router, err := replay.ParseRouterKind(strings.TrimSpace(name))
		if err != nil {
			return usageErr("--router: %v", err)
		}
		if slices.Contains(routers, router) {
			return usageErr("--router: %s is given twice", router)
		}
		routers = append(routers, router)
	}
	if f.overlapWeight < 0 {
		return usageErr("--kv-overlap-score-weight must be ≥ 0, got %g", f.overlapWeight)
	}
	weight := f.overlapWeight
	if weight == 0 {
		weight = replay.NoOverlapWeight
	}
	if f.prefixBlocks < 1 {
		return usageErr("--prefix-hash-blocks must be ≥ 1, got %d", f.prefixBlocks)
	}
	if err := checkClosedLoopFlags(cmd.Flags(), f, trace); err != nil {
		return err
	}
	if trace == "" {
		for _, name := range traceOnlyFlags {
			if cmd.Flags().Changed(name) {
				return usageErr("--%s applies to a TRACE; a synthetic or closed-loop workload (--requests) has none", name)
			}
		}
	}
	if trace == "" && f.requests == 0 {
		return usageErr("replay needs a TRACE file or a synthetic workload (--requests N)")
	}
	if trace != "" && cmd.Flags().Changed("requests") {
		return usageErr("--requests makes a synthetic workload: give it or a TRACE, not both")
	}

	for _, name := range config.ChangedOutOfScope(cmd.Flags(), config.ScopeReplay) {
		fmt.Fprintf(stderr, "warning: %s has no effect in replay (no HTTP, ZMQ, text or faults offline)\n", name)
	}
	if cmd.Flags().Changed("model") && !cmd.Flags().Changed("hardware") {
		// --model is the hardware timing model's shape (docs/hardware.md).
		fmt.Fprintln(stderr, "warning: replay reads --model only with --hardware")
	}
	// Each setup is a fleet: --fleet files, else one group of --workers
	// workers per --config (or the defaults).
	var fleets []fleetSpec
	if len(f.fleets) > 0 {
		if len(configs) > 1 || configs[0] != "" || cmd.Flags().Changed("workers") {
			return usageErr("--fleet-file describes the whole fleet: give it instead of --config, --compare and --workers")
		}
		for _, path := range f.fleets {
			fl, err := readFleetSpec(path)
			if err != nil {
				return err
			}
			fleets = append(fleets, fl)
		}
	} else {
		for _, path := range configs {
			label := "default"
			if path != "" {
				label = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
			}
			fleets = append(fleets, fleetSpec{label: label, count: f.workers, config: path})
		}
	}
	var setups []setup
	files := loaders(stderr).Shared()
	for i, fl := range fleets {
		workers, seed, err := buildWorkers(cmd, fl, files, stderr)
		if err != nil {
			return err
		}
		label := fl.label
		if slices.ContainsFunc(setups, func(s setup) bool { return s.label == label }) {
			label = fmt.Sprintf("%s#%d", label, i+1)
		}
		// Every fleet replays the workload once per policy; with several
		// policies each setup is named after its policy too.
		for _, router := range routers {
			name := label
			if len(routers) > 1 {
				name = label + "/" + string(router)
				if len(fleets) == 1 {
					name = string(router)
				}
			}
			setups = append(setups, setup{label: name, opts: replay.Options{
				Workers: workers, Router: router, OverlapWeight: weight, PrefixHashBlocks: f.prefixBlocks, Seed: seed,
			}})
		}
	}

	var csvw *replay.CSVWriter
	if f.csv != "" {
		file, err := os.Create(f.csv)
		if err != nil {
			return fmt.Errorf("--csv: %w", err)
		}
		defer file.Close()
		bw := bufio.NewWriterSize(file, 1<<20)
		defer bw.Flush()
		if csvw, err = replay.NewCSVWriter(bw, len(setups) > 1); err != nil {
			return fmt.Errorf("--csv: %w", err)
		}
	}

	var reports []*replay.Report
	for _, s := range setups {
		src, closeSrc, total, err := openWorkload(f, trace, s.opts.Seed)
		if err != nil {
			return err
		}
		if csvw != nil {
			label := ""
			if len(setups) > 1 {
				label = s.label
			}
			s.opts.Rows = csvw.Row(label)
		}
		if !f.noProgress && isTerminal(stderr) {
			s.opts.Progress = replay.NewProgressBar(stderr, s.label, total).Update
		}
		rep, err := replay.Run(src, s.opts)
		closeSrc()
		var lineErr *replay.LineError
		if errors.As(err, &lineErr) {
			// Bad input, like a bad flag: one line, exit status 2.
			return usageErr("%v (--skip-bad-lines skips such lines)", err)
		}
		if err != nil {
			return err
		}
		if m, ok := src.(*replay.MooncakeSource); ok && m.Skipped() > 0 {
			fmt.Fprintf(stderr, "%s: skipped %d malformed line(s)\n", trace, m.Skipped())
		}
		rep.Label = s.label
		reports = append(reports, rep)
	}
	if csvw != nil {
		if err := csvw.Flush(); err != nil {
			return fmt.Errorf("--csv: %w", err)
		}
	}
	if f.html != "" {
		if err := writeFile(f.html, func(w io.Writer) error { return replay.WriteHTML(w, reports) }); err != nil {
			return fmt.Errorf("--html: %w", err)
		}
	}
	if f.json {
		return replay.WriteJSON(stdout, reports)
	}
	return replay.WriteTable(stdout, reports)
}

// openWorkload opens the trace (streamed) or builds the synthetic
// generator. total is the workload's expected virtual duration for the
// progress bar (0 = unknown).
func openWorkload(f *replayFlags, trace string, seed uint64) (replay.Source, func(), time.Duration, error) {
	if trace == "" && f.concurrency > 0 {
		return openClosedLoop(f, seed)
	}
	if trace == "" {
		in, err := replay.ParseDist(f.inputLen)
		if err != nil {
			return nil, nil, 0, usageErr("--input-len: %v", err)
		}
		out, err := replay.ParseDist(f.outputLen)
		if err != nil {
			return nil, nil, 0, usageErr("--output-len: %v", err)
		}
		src, err := replay.NewSynthetic(replay.SyntheticOptions{Requests: f.requests, Rate: f.rate,
			Arrival: replay.ArrivalKind(f.arrival), Input: in, Output: out, PrefixGroups: f.prefixGroups,
			PrefixTokens: f.prefixLen, Turns: f.turns, TurnGap: f.turnGap, Seed: seed})
		if err != nil {
			return nil, nil, 0, usageErr("%v", err)
		}
		sessions := float64(f.requests) / float64(max(1, f.turns))
		return src, func() {}, time.Duration(sessions / f.rate * float64(time.Second)), nil
	}
	file, err := os.Open(trace)
	if err != nil {
		return nil, nil, 0, usageErr("trace: %v", err)
	}
	src, err := replay.NewMooncakeSource(bufio.NewReaderSize(file, 1<<20), trace, replay.TraceOptions{
		BlockSize: f.traceBlockSize, TimeScale: f.timeScale, MaxRequests: f.maxRequests, SkipBadLines: f.skipBadLines})
	if err != nil {
		file.Close()
		return nil, nil, 0, usageErr("%v", err)
	}
	total := time.Duration(0)
	if f.maxRequests == 0 {
		total = replay.TraceEnd(trace, f.timeScale)
	}
	return src, func() { file.Close() }, total, nil
}

func usageErr(format string, args ...any) error {
	return &config.Error{Problems: []string{fmt.Sprintf(format, args...)}}
}

// writeFile writes a file through a buffer and reports the first error.
func writeFile(path string, write func(io.Writer) error) error {
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(file)
	if err := write(bw); err != nil {
		file.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		file.Close()
		return err
	}
	return file.Close()
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	file, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := file.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// tuneGC trades memory for speed unless GOGC says otherwise: a replay
// allocates per request and keeps little, so collecting at 4× the live heap
// cuts the collector's work; the soft limit keeps a million-request run
// within its 1 GiB budget (docs/BENCHMARKS.md).
func tuneGC() {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	debug.SetGCPercent(400)
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(768 << 20)
	}
}
