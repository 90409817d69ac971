package engine

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkDecodePass256 measures one scheduler pass (BeginPass + EndPass)
// with 256 running requests in decode.
func BenchmarkDecodePass256(b *testing.B) { benchDecodePasses(b, nil) }

// benchDecodePasses times b.N passes of a core (DefaultConfig adjusted by
// mutate) once 256 requests of 512 prompt tokens all decode.
func benchDecodePasses(b *testing.B, mutate func(c *Config)) {
	cfg := DefaultConfig()
	cfg.MaxNumSeqs = 256
	cfg.MaxModelLen = 1 << 24 // never the reason a request ends here
	if mutate != nil {
		mutate(&cfg)
	}
	// Enough blocks that nobody is preempted however many passes run.
	cfg.NumBlocks = 256*ceilDiv(512+b.N+64, cfg.resolvedBlockSize()) + 64
	core, err := NewCore(cfg, CoreOptions{})
	if err != nil {
		b.Fatal(err)
	}
	planned := seqTokens(1000, b.N+64) // outlives the ~17 admission passes
	out := NewOutput()
	for i := 0; i < 256; i++ {
		core.Submit(&Request{ID: uint64(i + 1), Prompt: seqTokens(10_000+i*512, 512), PlannedOutput: planned, Out: out})
	}
	now := VirtualEpoch
	var buf []OutputItem
	for core.NumWaiting() > 0 || core.NumRunning() < 256 { // admit everyone (prefill passes)
		d := core.BeginPass(now)
		now = now.Add(d)
		core.EndPass(now, now)
		buf = out.Drain(buf)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d := core.BeginPass(now)
		now = now.Add(d)
		core.EndPass(now, now)
		buf = out.Drain(buf)
	}
	b.StopTimer()
	if len(buf) != 256 {
		b.Fatalf("pass delivered %d tokens, want 256 (N=%d running=%d waiting=%d)", len(buf), b.N, core.NumRunning(), core.NumWaiting())
	}
}

// syntheticTrace shapes a virtual-time benchmark workload: n requests
// arriving every gap, each prompt a shared prefix (one of prefixes) followed
// by unique tokens, each generating out tokens.
type syntheticTrace struct {
	n, shared, unique, prefixes, out int
	gap                              time.Duration
	maxNumSeqs                       int
	// adapters > 0 spreads the requests round robin over that many LoRA
	// adapters, with maxLoRAs GPU slots.
	adapters, maxLoRAs int
}

// runTrace simulates the trace b.N times in virtual time and reports
// simulated tokens and requests per wall-clock second.
func runTrace(b *testing.B, tr syntheticTrace) {
	var simulated float64
	for i := 0; i < b.N; i++ {
		cfg := DefaultConfig()
		cfg.MaxNumSeqs = tr.maxNumSeqs
		cfg.LoRA = LoRAConfig{MaxLoRAs: tr.maxLoRAs, LoadTime: time.Millisecond}
		core, err := NewCore(cfg, CoreOptions{})
		if err != nil {
			b.Fatal(err)
		}
		sim := NewSimulator(core)
		planned := seqTokens(1000, tr.out)
		for j := 0; j < tr.n; j++ {
			prompt := append(seqTokens(1+(j%tr.prefixes)*tr.shared, tr.shared),
				seqTokens(1_000_000+j*tr.unique, tr.unique)...)
			r := &Request{ID: uint64(j + 1), Prompt: prompt, PlannedOutput: planned}
			if tr.adapters > 0 {
				id := j%tr.adapters + 1
				r.Adapter = Adapter{ID: id, Name: fmt.Sprintf("adapter-%d", id)}
			}
			sim.SubmitAt(time.Duration(j)*tr.gap, r)
		}
		sim.Run(0)
		simulated += sim.Now().Seconds()
	}
	b.ReportMetric(float64(tr.n*tr.out*b.N)/b.Elapsed().Seconds(), "sim_tokens/s")
	b.ReportMetric(float64(tr.n*b.N)/b.Elapsed().Seconds(), "sim_requests/s")
	b.ReportMetric(simulated/float64(b.N), "virtual_s/run")
}

// BenchmarkVirtualRun10k simulates 10,000 requests (512-token prompts with
// shared 256-token prefixes, 128 output tokens, 50 req/s arrivals).
func BenchmarkVirtualRun10k(b *testing.B) {
	runTrace(b, syntheticTrace{n: 10_000, shared: 256, unique: 256, prefixes: 16, out: 128,
		gap: 20 * time.Millisecond, maxNumSeqs: 256})
}

// BenchmarkVirtualRun10kLoRA is BenchmarkVirtualRun10k with the requests
// spread over 8 LoRA adapters and 4 GPU slots (docs/BENCHMARKS.md, LoRA).
func BenchmarkVirtualRun10kLoRA(b *testing.B) {
	runTrace(b, syntheticTrace{n: 10_000, shared: 256, unique: 256, prefixes: 16, out: 128,
		gap: 20 * time.Millisecond, maxNumSeqs: 256, adapters: 8, maxLoRAs: 4})
}

// BenchmarkVirtualRun100k simulates a 100,000-request synthetic trace
// (256-token prompts, the first 128 shared by one of 32 prefixes, 64 output
// tokens, arrivals at 200 req/s, max_num_seqs 1024; docs/BENCHMARKS.md,
// scenario 4).
func BenchmarkVirtualRun100k(b *testing.B) {
	runTrace(b, syntheticTrace{n: 100_000, shared: 128, unique: 128, prefixes: 32, out: 64,
		gap: 5 * time.Millisecond, maxNumSeqs: 1024})
}

// BenchmarkAdmit10k measures admitting 10,000 queued requests into an
// empty rank (max_num_seqs 16384): the admission passes until all run.
func BenchmarkAdmit10k(b *testing.B) {
	const n = 10_000
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		cfg := DefaultConfig()
		cfg.MaxNumSeqs = 16384
		cfg.NumBlocks = 65536
		cfg.MaxNumBatchedTokens = 1 << 20
		core, err := NewCore(cfg, CoreOptions{})
		if err != nil {
			b.Fatal(err)
		}
		planned := seqTokens(1000, 1000)
		for j := 0; j < n; j++ {
			core.Submit(&Request{ID: uint64(j + 1), Prompt: seqTokens(300_000+j*16, 16), PlannedOutput: planned})
		}
		b.StartTimer()
		now := VirtualEpoch
		for core.NumRunning() < n {
			d := core.BeginPass(now)
			now = now.Add(d)
			core.EndPass(now, now)
		}
	}
}
