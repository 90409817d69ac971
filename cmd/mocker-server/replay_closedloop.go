package main

import (
	"io"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/replay"
)

// openLoopFlags are the synthetic workload's flags that describe arrivals
// or sessions; a closed loop's arrivals are its clients' completions, so
// they make no sense with --concurrency.
var openLoopFlags = []string{"rate", "arrival", "turns", "turn-gap"}

// checkClosedLoopFlags refuses --concurrency where it means nothing: with a
// trace, without --requests, or with an open-loop arrival flag.
func checkClosedLoopFlags(fs *pflag.FlagSet, f *replayFlags, trace string) error {
	if !fs.Changed("concurrency") {
		if fs.Changed("client-delay") {
			return usageErr("--client-delay applies to the closed loop: give it with --concurrency")
		}
		return nil
	}
	if f.clientDelay < 0 {
		return usageErr("--client-delay must be ≥ 0, got %v", f.clientDelay)
	}
	switch {
	case f.concurrency < 1:
		return usageErr("--concurrency must be ≥ 1, got %d", f.concurrency)
	case trace != "":
		return usageErr("--concurrency makes a closed-loop workload: give it with --requests, not with a TRACE (a trace has its own arrival times)")
	case f.requests == 0:
		return usageErr("--concurrency needs --requests N (the total number of requests the clients send)")
	}
	for _, name := range openLoopFlags {
		if fs.Changed(name) {
			return usageErr("--%s sets open-loop arrivals; with --concurrency each client sends when its previous request finishes", name)
		}
	}
	return nil
}

// openClosedLoop builds the closed-loop generator of --concurrency. Its
// expected duration is unknown (it depends on the engines), so the progress
// bar counts requests only.
func openClosedLoop(f *replayFlags, seed uint64) (replay.Source, func(), time.Duration, error) {
	in, err := replay.ParseDist(f.inputLen)
	if err != nil {
		return nil, nil, 0, usageErr("--input-len: %v", err)
	}
	out, err := replay.ParseDist(f.outputLen)
	if err != nil {
		return nil, nil, 0, usageErr("--output-len: %v", err)
	}
	src, err := replay.NewClosedLoop(replay.ClosedLoopOptions{Concurrency: f.concurrency, Requests: f.requests,
		Input: in, Output: out, PrefixGroups: f.prefixGroups, PrefixTokens: f.prefixLen, ClientDelay: f.clientDelay, Seed: seed})
	if err != nil {
		return nil, nil, 0, usageErr("%v", err)
	}
	return src, func() {}, 0, nil
}

// memberGPUs returns each of the fleet's n workers' GPUs per DP rank, for
// the report's per-GPU throughput: a fleet-file group's own
// --tensor-parallel-size, else the command line's, else 1. Members come in
// group order, as fleet.Plan lays them out.
func memberGPUs(cmdline *pflag.FlagSet, fl fleetSpec, n int) ([]int, error) {
	base, err := gpusPerRank(cmdline, 1)
	if err != nil {
		return nil, err
	}
	out := make([]int, 0, n)
	if fl.file != nil {
		for gi, g := range fl.file.Workers {
			gpus := base
			if len(g.Args) > 0 {
				fs := pflag.NewFlagSet("fleet group", pflag.ContinueOnError)
				fs.SetOutput(io.Discard)
				config.RegisterFlags(fs)
				if err := fs.Parse(config.RewriteArgs(g.Args)); err != nil {
					return nil, usageErr("fleet file group %d: args: %v", gi+1, err)
				}
				if gpus, err = gpusPerRank(fs, base); err != nil {
					return nil, err
				}
			}
			for range g.Count {
				out = append(out, gpus)
			}
		}
	}
	for len(out) < n {
		out = append(out, base)
	}
	return out[:n], nil
}

// gpusPerRank is vLLM's --tensor-parallel-size on fs, or def when unset.
func gpusPerRank(fs *pflag.FlagSet, def int) (int, error) {
	fl := fs.Lookup("tensor-parallel-size")
	if fl == nil || !fl.Changed {
		return def, nil
	}
	n, err := strconv.Atoi(fl.Value.String())
	if err != nil || n < 1 {
		return 0, usageErr("--tensor-parallel-size must be an integer ≥ 1, got %q", fl.Value.String())
	}
	return n, nil
}
