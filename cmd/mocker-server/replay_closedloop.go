package main

import (
	"strconv"
	"time"

	"github.com/spf13/pflag"

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
		return nil
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
		Input: in, Output: out, PrefixGroups: f.prefixGroups, PrefixTokens: f.prefixLen, Seed: seed})
	if err != nil {
		return nil, nil, 0, usageErr("%v", err)
	}
	return src, func() {}, 0, nil
}

// gpusPerRank is the number of GPUs behind each DP rank for the report's
// per-GPU throughput: vLLM's --tensor-parallel-size (default 1).
func gpusPerRank(fs *pflag.FlagSet) (int, error) {
	fl := fs.Lookup("tensor-parallel-size")
	if fl == nil || !fl.Changed {
		return 1, nil
	}
	n, err := strconv.Atoi(fl.Value.String())
	if err != nil || n < 1 {
		return 0, usageErr("--tensor-parallel-size must be an integer ≥ 1, got %q", fl.Value.String())
	}
	return n, nil
}
