package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mocker-server/mocker-server/internal/replay"
	"github.com/mocker-server/mocker-server/internal/routerlab"
)

// listFlag is a flag that may be repeated and takes comma lists: every
// value is kept (a repeated flag that kept only the last would silently
// drop policies).
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// runTrace is `mocker-bench trace`: a workload through a router, scored
// against offline replays (internal/routerlab, docs/router-lab.md).
func runTrace(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mocker-bench trace", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: mocker-bench trace --url ROUTER [--fleet-admin ADMIN] [flags] [TRACE.jsonl]")
		fmt.Fprintln(stderr, "Without TRACE, --requests N makes replay's synthetic workload.")
		fs.PrintDefaults()
	}
	var o routerlab.Options
	fs.StringVar(&o.URL, "url", "", "the router's base URL (required)")
	fs.StringVar(&o.Model, "model", "", "model name (default: the fleet's, else the router's first /v1/models entry)")
	fs.StringVar(&o.APIKey, "api-key", os.Getenv("OPENAI_API_KEY"), "Bearer API key for the router (default $OPENAI_API_KEY)")
	fs.StringVar(&o.Admin, "fleet-admin", "", "the fleet's admin API URL: worker configurations, load samples, faults, offline comparison")
	fs.StringVar(&o.AdminKey, "admin-key", "", "the admin API's key")
	fs.Float64Var(&o.TimeScale, "time-scale", 1, "multiply arrival times (0.5 = twice as fast)")
	fs.IntVar(&o.MaxInflight, "max-inflight", 256, "requests in flight (and connections) at most")
	fs.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "per-request timeout")
	fs.DurationVar(&o.SampleEvery, "sample-every", 500*time.Millisecond, "interval of the workers' load samples (with --fleet-admin)")
	fs.IntVar(&o.VocabSize, "vocab-size", 0, "map token ids into [0, N) (default: the fleet's vocabulary, else the built-in one)")
	faultsFile := fs.String("faults", "", "schedule of admin actions: lines of `AT WORKER ACTION [JSON]`, e.g. `60s 3 kill`")
	var routers listFlag
	fs.Var(&routers, "router", "offline policies to compare with (comma list or repeated; default round_robin,least_loaded,prefix_hash,kv_aware)")
	fs.Float64Var(&o.Offline.OverlapWeight, "kv-overlap-score-weight", 1, "offline kv_aware's overlap_score_weight")
	fs.IntVar(&o.Offline.PrefixHashBlocks, "prefix-hash-blocks", 4, "offline prefix_hash's leading blocks")
	fs.BoolVar(&o.Offline.Skip, "no-offline", false, "no offline comparison")

	traceBlock := fs.Int("trace-block-size", replay.DefaultTraceBlockSize, "tokens per hash id in the trace")
	maxRequests := fs.Int("max-requests", 0, "send at most this many requests of the trace (0 = all)")
	skipBad := fs.Bool("skip-bad-lines", false, "skip malformed trace lines instead of stopping")
	requests := fs.Int("requests", 0, "synthetic workload (no TRACE): number of requests")
	rate := fs.Float64("rate", 10, "synthetic: sessions started per second")
	arrival := fs.String("arrival", string(replay.ArrivalPoisson), "synthetic: poisson or fixed")
	inputLen := fs.String("input-len", "512", "synthetic: input length (N, uniform:MIN:MAX, normal:M:S, lognormal:M:S, empirical:FILE)")
	outputLen := fs.String("output-len", "128", "synthetic: output length (same forms)")
	prefixGroups := fs.Int("prefix-groups", 0, "synthetic: shared-prefix groups")
	prefixLen := fs.Int("prefix-len", 0, "synthetic: tokens of each shared prefix")
	turns := fs.Int("turns", 1, "synthetic: turns per session; a turn waits for the previous answer and includes it")
	turnGap := fs.Duration("turn-gap", 10*time.Second, "synthetic: planned time between a session's turns (a turn is never sent before the previous answer)")
	seed := fs.Uint64("seed", 0, "synthetic: workload seed")

	jsonOut := fs.Bool("json", false, "write the JSON report on stdout instead of the table")
	csvOut := fs.String("csv", "", "write one CSV row per request to this file")
	htmlOut := fs.String("html", "", "write a self-contained HTML report to this file")
	progress := fs.Bool("progress", false, "show the progress line even when stderr is not a terminal")
	noProgress := fs.Bool("no-progress", false, "never show the progress line")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "mocker-bench trace: "+format+"\n", a...)
		return 2
	}
	if o.URL == "" {
		return bad("--url is required (the router in front of the fleet)")
	}
	if fs.NArg() > 1 {
		return bad("one TRACE at most, got %q", fs.Args())
	}
	if !(o.TimeScale > 0) {
		return bad("--time-scale must be > 0, got %g", o.TimeScale)
	}
	if o.MaxInflight < 1 {
		return bad("--max-inflight must be ≥ 1, got %d", o.MaxInflight)
	}
	if o.VocabSize < 0 {
		return bad("--vocab-size must be ≥ 0, got %d", o.VocabSize)
	}
	if o.Offline.OverlapWeight < 0 {
		return bad("--kv-overlap-score-weight must be ≥ 0, got %g", o.Offline.OverlapWeight)
	}
	if o.Offline.OverlapWeight == 0 {
		o.Offline.OverlapWeight = replay.NoOverlapWeight
	}
	if o.Offline.PrefixHashBlocks < 1 {
		return bad("--prefix-hash-blocks must be ≥ 1, got %d", o.Offline.PrefixHashBlocks)
	}
	for _, r := range routers {
		k, err := replay.ParseRouterKind(r)
		if err != nil {
			return bad("--router: %v", err)
		}
		for _, have := range o.Offline.Routers {
			if have == k {
				return bad("--router: %s is given twice", k)
			}
		}
		o.Offline.Routers = append(o.Offline.Routers, k)
	}
	if *faultsFile != "" {
		if o.Admin == "" {
			return bad("--faults needs --fleet-admin (actions go through the fleet's admin API)")
		}
		f, err := os.Open(*faultsFile)
		if err != nil {
			return bad("--faults: %v", err)
		}
		o.Faults, err = routerlab.ParseFaults(f, *faultsFile)
		f.Close()
		if err != nil {
			return bad("--faults: %v", err)
		}
	}

	var src replay.Source
	switch {
	case fs.NArg() == 1:
		if *requests > 0 {
			return bad("--requests makes a synthetic workload: give it or a TRACE, not both")
		}
		f, err := os.Open(fs.Arg(0))
		if err != nil {
			return bad("trace: %v", err)
		}
		defer f.Close()
		// The driver applies --time-scale to the arrivals itself.
		m, err := replay.NewMooncakeSource(bufio.NewReaderSize(f, 1<<20), fs.Arg(0), replay.TraceOptions{
			BlockSize: *traceBlock, MaxRequests: *maxRequests, SkipBadLines: *skipBad})
		if err != nil {
			return bad("%v", err)
		}
		src = m
	case *requests > 0:
		in, err := replay.ParseDist(*inputLen)
		if err != nil {
			return bad("--input-len: %v", err)
		}
		out, err := replay.ParseDist(*outputLen)
		if err != nil {
			return bad("--output-len: %v", err)
		}
		src, err = replay.NewSynthetic(replay.SyntheticOptions{Requests: *requests, Rate: *rate, Arrival: replay.ArrivalKind(*arrival),
			Input: in, Output: out, PrefixGroups: *prefixGroups, PrefixTokens: *prefixLen, Turns: *turns, TurnGap: *turnGap, Seed: *seed})
		if err != nil {
			return bad("%v", err)
		}
	default:
		return bad("give a TRACE file or a synthetic workload (--requests N)")
	}
	if !*noProgress && (*progress || isTerminal(os.Stderr)) {
		o.Progress = stderr
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := routerlab.Run(ctx, src, o)
	var lineErr *replay.LineError
	if errors.As(err, &lineErr) {
		return bad("%v (--skip-bad-lines skips such lines)", err)
	}
	if err != nil {
		fmt.Fprintf(stderr, "mocker-bench trace: %v\n", err)
		return 1
	}
	if *csvOut != "" {
		if err := writeTo(*csvOut, rep.WriteCSV); err != nil {
			fmt.Fprintf(stderr, "mocker-bench trace: --csv: %v\n", err)
			return 1
		}
	}
	if *htmlOut != "" {
		if err := writeTo(*htmlOut, rep.WriteHTML); err != nil {
			fmt.Fprintf(stderr, "mocker-bench trace: --html: %v\n", err)
			return 1
		}
	}
	if *jsonOut {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteTable(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "mocker-bench trace: %v\n", err)
		return 1
	}
	return 0
}

// writeTo writes a file through a buffer and reports the first error.
func writeTo(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := write(bw); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
