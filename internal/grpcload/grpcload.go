// Package grpcload is the gRPC load client of `mocker-bench grpc`: a closed
// loop of streaming Generate calls over the gateway protocols the mock
// serves (SGLang's scheduler service, vLLM's engine service), written with
// the Go code generated from the upstream protos. Token ids in, token ids
// out, as a gateway sends them; the latencies are those of internal/loadgen
// (TTFT, per-chunk ITL, end to end), so the two paths compare directly
// (docs/BENCHMARKS.md).
package grpcload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	sgl "github.com/mocker-server/mocker-server/internal/grpcfront/sglang/sglangpb"
	"github.com/mocker-server/mocker-server/internal/grpcfront/vllm/vllmpb"
	"github.com/mocker-server/mocker-server/internal/loadgen"
)

// Protocol is the gRPC service the client speaks.
type Protocol string

// The protocols.
const (
	SGLang Protocol = "sglang" // sglang.grpc.scheduler.SglangScheduler
	VLLM   Protocol = "vllm"   // vllm.grpc.engine.VllmEngine
)

// Config is one run. The zero value of every field but Addr has a default
// (Defaults).
type Config struct {
	Addr         string        `json:"addr"`
	Protocol     Protocol      `json:"protocol"`
	Concurrency  int           `json:"concurrency"`   // streams in flight
	Conns        int           `json:"conns"`         // HTTP/2 connections the streams share (0: one per 64 streams)
	Requests     int           `json:"requests"`      // stop after this many (0: Duration only)
	Duration     time.Duration `json:"duration"`      // stop starting requests after this long (0: Requests only)
	PromptTokens int           `json:"prompt_tokens"` // ids per prompt
	MaxTokens    int           `json:"max_tokens"`    // new tokens per request
	Seed         int64         `json:"seed"`          // prompt ids
	Timeout      time.Duration `json:"timeout"`       // per request
	Ramp         time.Duration `json:"ramp"`          // spread the streams' first requests over this long
}

// Defaults returns the configuration of scenario 1 of docs/BENCHMARKS.md.
func Defaults() Config {
	return Config{Protocol: SGLang, Concurrency: 256, PromptTokens: 32, MaxTokens: 1000, Seed: 1,
		Timeout: 5 * time.Minute}
}

func (c *Config) normalize() error {
	switch {
	case c.Addr == "":
		return errors.New("--addr is required (host:port of the gRPC port)")
	case c.Protocol != SGLang && c.Protocol != VLLM:
		return fmt.Errorf("--protocol %q: want sglang or vllm", c.Protocol)
	case c.Concurrency < 1:
		return fmt.Errorf("--concurrency %d: want at least 1", c.Concurrency)
	case c.Requests <= 0 && c.Duration <= 0:
		return errors.New("give --requests or --duration")
	case c.PromptTokens < 1 || c.MaxTokens < 1:
		return errors.New("--prompt-tokens and --max-tokens must be at least 1")
	case c.Ramp < 0:
		return fmt.Errorf("--ramp %v: want 0 or more", c.Ramp)
	case c.Conns < 0:
		return fmt.Errorf("--conns %d: want 0 (automatic) or more", c.Conns)
	}
	if c.Conns == 0 {
		c.Conns = (c.Concurrency + 63) / 64
	}
	if c.Timeout <= 0 {
		c.Timeout = 5 * time.Minute
	}
	return nil
}

// Result is the outcome of a run.
type Result struct {
	Config             Config         `json:"config"`
	WallSeconds        float64        `json:"wall_seconds"`
	Requests           int            `json:"requests"` // completed without error
	Errors             int            `json:"errors"`
	ErrorKinds         map[string]int `json:"error_kinds,omitempty"`
	RequestsPerSecond  float64        `json:"requests_per_second"`
	OutputTokens       int64          `json:"output_tokens"`
	OutputTokensPerSec float64        `json:"output_tokens_per_second"`
	Chunks             int64          `json:"chunks"`
	// MismatchedLengths counts successful requests that did not return
	// max_tokens tokens.
	MismatchedLengths int `json:"mismatched_lengths"`

	TTFT loadgen.Dist `json:"ttft"`
	ITL  loadgen.Dist `json:"itl"`
	E2E  loadgen.Dist `json:"e2e"`
}

// generator is one protocol's streaming call.
type generator interface {
	// stream starts a streaming Generate of prompt; next returns the
	// token ids of the next chunk (io.EOF at the end).
	stream(ctx context.Context, id string, prompt []uint32, maxTokens int) (next func() ([]uint32, error), err error)
	vocab(ctx context.Context) (int, error)
}

type sglangGen struct{ c sgl.SglangSchedulerClient }

func (g sglangGen) vocab(ctx context.Context) (int, error) {
	mi, err := g.c.GetModelInfo(ctx, &sgl.GetModelInfoRequest{})
	return int(mi.GetVocabSize()), err
}

func (g sglangGen) stream(ctx context.Context, id string, prompt []uint32, maxTokens int) (func() ([]uint32, error), error) {
	m := uint32(maxTokens)
	s, err := g.c.Generate(ctx, &sgl.GenerateRequest{RequestId: id, Stream: true,
		Tokenized: &sgl.TokenizedInput{InputIds: prompt},
		SamplingParams: &sgl.SamplingParams{Temperature: 1, TopP: 1, TopK: -1, RepetitionPenalty: 1,
			MaxNewTokens: &m, IgnoreEos: true}})
	if err != nil {
		return nil, err
	}
	return chunkIDs(s.Recv), nil
}

type vllmGen struct{ c vllmpb.VllmEngineClient }

func (g vllmGen) vocab(ctx context.Context) (int, error) {
	mi, err := g.c.GetModelInfo(ctx, &vllmpb.GetModelInfoRequest{})
	return int(mi.GetVocabSize()), err
}

func (g vllmGen) stream(ctx context.Context, id string, prompt []uint32, maxTokens int) (func() ([]uint32, error), error) {
	m := uint32(maxTokens)
	s, err := g.c.Generate(ctx, &vllmpb.GenerateRequest{RequestId: id, Stream: true,
		Input:          &vllmpb.GenerateRequest_Tokenized{Tokenized: &vllmpb.TokenizedInput{InputIds: prompt}},
		SamplingParams: &vllmpb.SamplingParams{MaxTokens: &m, IgnoreEos: true}})
	if err != nil {
		return nil, err
	}
	return chunkIDs(s.Recv), nil
}

// chunkIDs turns a Generate stream's Recv into a generator's next: the token
// ids of each response's chunk in turn. Both protocols' generated responses
// have the same getters, on different types.
func chunkIDs[R interface{ GetChunk() C }, C interface{ GetTokenIds() []uint32 }](recv func() (R, error)) func() ([]uint32, error) {
	return func() ([]uint32, error) {
		r, err := recv()
		if err != nil {
			return nil, err
		}
		return r.GetChunk().GetTokenIds(), nil
	}
}

// worker is one stream slot's measurements.
type worker struct {
	ttft, itl, e2e []time.Duration
	tokens, chunks int64
	ok, mismatch   int
	errs           map[string]int
}

// Run drives cfg's closed loop until its request count or duration is
// reached, or ctx ends.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	gens := make([]generator, cfg.Conns)
	for i := range gens {
		conn, err := grpc.NewClient(cfg.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return nil, fmt.Errorf("connect %s: %w", cfg.Addr, err)
		}
		defer conn.Close()
		conn.Connect()
		if cfg.Protocol == SGLang {
			gens[i] = sglangGen{sgl.NewSglangSchedulerClient(conn)}
		} else {
			gens[i] = vllmGen{vllmpb.NewVllmEngineClient(conn)}
		}
	}
	ictx, cancel := context.WithTimeout(ctx, 30*time.Second)
	vocab, err := gens[0].vocab(ictx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("GetModelInfo: %w", err)
	}
	if vocab < 2 {
		return nil, fmt.Errorf("GetModelInfo: vocab_size %d", vocab)
	}

	var started, seq atomic.Int64
	claim := func() bool {
		if cfg.Requests > 0 && started.Add(1) > int64(cfg.Requests) {
			return false
		}
		return true
	}
	start := time.Now()
	var stop time.Time
	if cfg.Duration > 0 {
		stop = start.Add(cfg.Duration)
	}
	workers := make([]*worker, cfg.Concurrency)
	var wg sync.WaitGroup
	for i := range workers {
		w := &worker{errs: map[string]int{}}
		workers[i] = w
		g := gens[i%len(gens)]
		rng := rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(i)))
		wg.Add(1)
		delay := cfg.Ramp * time.Duration(i) / time.Duration(cfg.Concurrency)
		go func() {
			defer wg.Done()
			if delay > 0 {
				select {
				case <-time.After(delay):
				case <-ctx.Done():
					return
				}
			}
			prompt := make([]uint32, cfg.PromptTokens)
			for ctx.Err() == nil && (stop.IsZero() || time.Now().Before(stop)) && claim() {
				for k := range prompt {
					prompt[k] = uint32(1 + rng.IntN(vocab-1))
				}
				w.one(ctx, g, cfg, fmt.Sprintf("bench-%d", seq.Add(1)), prompt)
			}
		}()
	}
	wg.Wait()
	return merge(cfg, workers, time.Since(start)), nil
}

// one runs one request and records it.
func (w *worker) one(ctx context.Context, g generator, cfg Config, id string, prompt []uint32) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	t0 := time.Now()
	next, err := g.stream(ctx, id, prompt, cfg.MaxTokens)
	if err != nil {
		w.errs[kind(err)]++
		return
	}
	var n int
	var last time.Time
	var ttft time.Duration
	for {
		ids, err := next()
		if err == io.EOF {
			break
		}
		if err != nil {
			w.errs[kind(err)]++
			return
		}
		if len(ids) == 0 {
			continue // the final GenerateComplete
		}
		now := time.Now()
		if n == 0 {
			ttft = now.Sub(t0)
		} else {
			w.itl = append(w.itl, now.Sub(last))
		}
		last = now
		n += len(ids)
		w.chunks++
	}
	w.ok++
	w.ttft = append(w.ttft, ttft)
	w.e2e = append(w.e2e, time.Since(t0))
	w.tokens += int64(n)
	if n != cfg.MaxTokens {
		w.mismatch++
	}
}

// kind shortens an error to a stable kind for counting.
func kind(err error) string {
	if s, ok := status.FromError(err); ok {
		return s.Code().String()
	}
	return strings.SplitN(err.Error(), ":", 2)[0]
}

func merge(cfg Config, ws []*worker, wall time.Duration) *Result {
	r := &Result{Config: cfg, WallSeconds: wall.Seconds(), ErrorKinds: map[string]int{}}
	var ttft, itl, e2e []time.Duration
	for _, w := range ws {
		r.Requests += w.ok
		r.OutputTokens += w.tokens
		r.Chunks += w.chunks
		r.MismatchedLengths += w.mismatch
		for k, v := range w.errs {
			r.ErrorKinds[k] += v
			r.Errors += v
		}
		ttft = append(ttft, w.ttft...)
		itl = append(itl, w.itl...)
		e2e = append(e2e, w.e2e...)
	}
	if len(r.ErrorKinds) == 0 {
		r.ErrorKinds = nil
	}
	r.RequestsPerSecond = float64(r.Requests) / wall.Seconds()
	r.OutputTokensPerSec = float64(r.OutputTokens) / wall.Seconds()
	r.TTFT, r.ITL, r.E2E = loadgen.Summarize(ttft), loadgen.Summarize(itl), loadgen.Summarize(e2e)
	return r
}

// WriteTable writes a human-readable report.
func (r *Result) WriteTable(w io.Writer) {
	c := &r.Config
	fmt.Fprintf(w, "mocker-bench grpc: %s %s Generate, closed-loop, %d streams over %d connections\n",
		c.Addr, c.Protocol, c.Concurrency, c.Conns)
	fmt.Fprintf(w, "  prompt %d ids, max_tokens %d\n", c.PromptTokens, c.MaxTokens)
	fmt.Fprintf(w, "requests    %d ok, %d errors in %.2f s\n", r.Requests, r.Errors, r.WallSeconds)
	loadgen.WriteErrorKinds(w, r.ErrorKinds)
	if r.MismatchedLengths > 0 {
		fmt.Fprintf(w, "  warning: %d requests returned another token count than max_tokens\n", r.MismatchedLengths)
	}
	fmt.Fprintf(w, "throughput  %.1f req/s, %.0f output tok/s (%d tokens, %d chunks)\n",
		r.RequestsPerSecond, r.OutputTokensPerSec, r.OutputTokens, r.Chunks)
	loadgen.WriteLatencies(w, r.TTFT, r.ITL, r.E2E)
}
