package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mocker-server/mocker-server/internal/hardware"
)

// Options configure a table run. The zero value of each field but Replay
// is its default.
type Options struct {
	// Replay is the mocker-server binary whose replay subcommand predicts.
	Replay string
	// RequestsPerClient and MinRequests size a closed-loop point whose
	// source does not state its request count: max(MinRequests,
	// RequestsPerClient × concurrency) requests (defaults 10 and 100).
	RequestsPerClient int
	MinRequests       int
	// Timeout bounds one replay run (default 10 minutes).
	Timeout time.Duration
	// Jobs is the number of replay runs at once (default 1).
	Jobs int
	// ClientDelay is replay's --client-delay for closed-loop points: a
	// benchmark client's turnaround between an answer and its next
	// request. Any value shorter than a pass gives the same schedule (the
	// next request misses the pass already running); 0 sends it into that
	// pass. The command's -client-delay defaults to 1 ms.
	ClientDelay time.Duration
	// MeasuredAllReduce keeps the measured all-reduce table for every
	// point. By default a point at TP > 1 on a GPU linked over PCIe (the
	// catalogue's PCIeGen: L40S, L4, the PCIe cards) runs with
	// --gpu-interconnect pcie: the measured L40S table is a machine whose
	// 4 and 8 GPUs cross CPU sockets (docs/hardware.md).
	MeasuredAllReduce bool
}

func (o *Options) defaults() {
	if o.RequestsPerClient <= 0 {
		o.RequestsPerClient = 10
	}
	if o.MinRequests <= 0 {
		o.MinRequests = 100
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Minute
	}
	if o.Jobs <= 0 {
		o.Jobs = 1
	}
}

// Result is one point with its prediction, or the reason it has none.
type Result struct {
	Point
	Predicted float64
	// APE is |predicted − published| / published × 100.
	APE float64
	// Skipped, when not empty, says why the point has no prediction.
	Skipped string
	// Run is the replay command line (without the binary).
	Run []string
}

// runKey is one replay configuration; points with equal keys (a source's
// TTFT, ITL and throughput of one setup) share a run.
type runKey struct {
	model, gpu          string
	tp                  int
	weights, kv, engine string
	isl, osl            string
	// trace is the trace file replayed instead of synthetic lengths.
	trace         string
	conc, request int
	rate          float64
	clientDelay   time.Duration
	args          string
	// interconnect is replay's --gpu-interconnect ("" leaves its default).
	interconnect string
	// maxSeqs, maxTokens and maxLen are the engine limits the benchmark
	// ran with when the source's tool derives them (trtllmbench.go); 0
	// leaves replay's defaults.
	maxSeqs, maxTokens, maxLen int
}

func (o *Options) key(p Point) runKey {
	n := p.Requests
	if n == 0 {
		n = max(o.MinRequests, o.RequestsPerClient*p.Concurrency)
	}
	conc, delay := p.Concurrency, o.ClientDelay
	switch p.Load {
	case LoadMax:
		conc, delay = n, 0 // every request queued at once; no client sends twice
	case LoadRate:
		conc, delay = 0, 0 // an open loop
	}
	if p.Trace != "" {
		conc, delay = 0, 0 // the trace's timestamps are the arrivals
	}
	k := runKey{model: p.Model, gpu: p.GPU, tp: p.TP, weights: p.Weights, kv: p.KVDType, engine: p.Engine,
		isl: p.ISL, osl: p.OSL, trace: p.Trace, conc: conc, request: n, rate: p.Rate, clientDelay: delay, args: strings.Join(p.Args, " ")}
	if g, err := hardware.Lookup(p.GPU); err == nil && g.PCIeGen > 0 && p.TP > 1 && !o.MeasuredAllReduce {
		k.interconnect = string(hardware.InterconnectPCIe)
	}
	if bs, tok, ok := trtllmBenchLimits(p); ok {
		// trtllm-bench also builds for the dataset's longest sequence.
		isl, _ := strconv.Atoi(p.ISL)
		osl, _ := strconv.Atoi(p.OSL)
		k.maxSeqs, k.maxTokens, k.maxLen = bs, tok, isl+osl
	}
	return k
}

// replayArgs is the replay command line of k (without the binary).
func (k runKey) replayArgs() []string {
	a := []string{"replay", "--json", "--no-progress", "--hardware", k.gpu, "--model", k.model,
		"--tensor-parallel-size", strconv.Itoa(k.tp), "--engine-type", k.engine}
	a = append(a, weightFlags[k.weights]...)
	if k.kv == "fp8" {
		a = append(a, "--kv-cache-dtype", "fp8")
	}
	if k.interconnect != "" {
		a = append(a, "--gpu-interconnect", k.interconnect)
	}
	if k.trace != "" {
		// The trace is the workload: its lengths and arrivals.
		return append(append(a, strings.Fields(k.args)...), k.trace)
	}
	if k.rate > 0 {
		a = append(a, "--rate", strconv.FormatFloat(k.rate, 'g', -1, 64), "--arrival", "poisson")
	} else {
		a = append(a, "--concurrency", strconv.Itoa(k.conc))
		if k.clientDelay > 0 {
			a = append(a, "--client-delay", k.clientDelay.String())
		}
	}
	a = append(a, "--requests", strconv.Itoa(k.request), "--input-len", k.isl, "--output-len", k.osl)
	if k.maxSeqs > 0 {
		a = append(a, "--max-num-seqs", strconv.Itoa(k.maxSeqs), "--max-num-batched-tokens", strconv.Itoa(k.maxTokens),
			"--max-model-len", strconv.Itoa(k.maxLen))
	}
	return append(a, strings.Fields(k.args)...)
}

// stat is the part of a replay Stat the table reads.
type stat struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
}

// summary is the part of replay's JSON summary the table reads.
type summary struct {
	Requests         int     `json:"requests"`
	Completed        int     `json:"completed"`
	Rejected         int     `json:"rejected"`
	Unfinished       int     `json:"unfinished"`
	OutputTokS       float64 `json:"output_token_throughput"`
	OutputTokSPerGPU float64 `json:"output_token_throughput_per_gpu"`
	TTFT             stat    `json:"ttft_ms"`
	ITL              stat    `json:"itl_ms"`
	E2E              stat    `json:"e2e_ms"`
	Gap              stat    `json:"inter_token_gap_ms"`
}

// predicted is the replay's figure comparable with p.
func predicted(p Point, s *summary) float64 {
	pick := func(st stat) float64 {
		if p.Statistic == "median" {
			return st.P50
		}
		return st.Mean
	}
	switch p.Metric {
	case MetricTTFT:
		return pick(s.TTFT)
	case MetricITL, MetricTPOT:
		return pick(s.ITL)
	case MetricGap:
		return pick(s.Gap)
	case MetricE2E:
		return pick(s.E2E)
	case MetricOutputTokS:
		return s.OutputTokS
	case MetricOutputTokSPerGP:
		return s.OutputTokSPerGPU
	}
	return 0
}

// Predict runs replay once per configuration and returns one result per
// point, in the points' order. Only a replay binary that cannot be started
// is an error: a run that fails or cannot complete every request skips its
// points with the reason.
func Predict(ctx context.Context, points []Point, o Options) ([]Result, error) {
	o.defaults()
	var keys []runKey
	index := map[runKey]int{}
	for _, p := range points {
		k := o.key(p)
		if _, ok := index[k]; !ok {
			index[k] = len(keys)
			keys = append(keys, k)
		}
	}
	type outcome struct {
		s    *summary
		skip string
		err  error
	}
	outs := make([]outcome, len(keys))
	sem := make(chan struct{}, o.Jobs)
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			s, skip, err := o.replay(ctx, k.replayArgs())
			if s != nil && k.trace != "" && s.Requests != k.request {
				// A trace that is not the source's run compares nothing.
				s, skip = nil, fmt.Sprintf("trace %s has %d requests, the point %d", k.trace, s.Requests, k.request)
			}
			outs[i] = outcome{s, skip, err}
		}()
	}
	wg.Wait()
	results := make([]Result, len(points))
	for i, p := range points {
		k := o.key(p)
		out := outs[index[k]]
		if out.err != nil {
			return nil, out.err
		}
		r := Result{Point: p, Skipped: out.skip, Run: k.replayArgs()}
		if r.Skipped == "" {
			r.Predicted = predicted(p, out.s)
			if !(r.Predicted > 0) {
				r.Skipped = fmt.Sprintf("replay reported no %s", p.Metric)
			} else {
				r.APE = 100 * math.Abs(r.Predicted-p.Value) / p.Value
			}
		}
		results[i] = r
	}
	return results, nil
}

// replay runs one replay and returns its summary, or the reason its points
// are skipped.
func (o *Options) replay(parent context.Context, args []string) (*summary, string, error) {
	ctx, cancel := context.WithTimeout(parent, o.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, o.Replay, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case parent.Err() != nil:
		return nil, "", fmt.Errorf("interrupted: %w", parent.Err())
	case ctx.Err() != nil:
		return nil, fmt.Sprintf("replay did not finish within %v", o.Timeout), nil
	case errors.As(err, &exit):
		return nil, fmt.Sprintf("replay exit status %d: %s", exit.ExitCode(), lastLine(stderr.String())), nil
	case err != nil:
		return nil, "", fmt.Errorf("run %s: %w", o.Replay, err)
	}
	var rep struct {
		Summary summary `json:"summary"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		return nil, fmt.Sprintf("replay printed no JSON report (%v)", err), nil
	}
	s := &rep.Summary
	if s.Requests == 0 || s.Completed != s.Requests {
		return nil, fmt.Sprintf("replay completed %d of %d requests (%d rejected, %d unfinished)",
			s.Completed, s.Requests, s.Rejected, s.Unfinished), nil
	}
	return s, "", nil
}

// lastLine is the last non-empty line of s: a replay error is one line,
// after any warnings.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	return "(no message)"
}
