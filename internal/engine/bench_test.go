package engine

import (
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/config"
)

// BenchmarkDecodePass256 measures one scheduler pass (BeginPass + EndPass)
// with 256 running requests in decode.
func BenchmarkDecodePass256(b *testing.B) {
	cfg := config.Default()
	cfg.MaxNumSeqs = 256
	cfg.MaxModelLen = 1 << 24 // never the reason a request ends here
	// Enough blocks that nobody is preempted however many passes run.
	cfg.NumGPUBlocks = 256*ceilDiv(512+b.N+64, cfg.EffectiveBlockSize()) + 64
	core, err := NewCore(&cfg, CoreOptions{})
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

// BenchmarkVirtualRun10k simulates 10,000 requests (512-token prompts with
// shared 256-token prefixes, 128 output tokens, 50 req/s arrivals) in
// virtual time and reports simulated tokens per wall-clock second.
func BenchmarkVirtualRun10k(b *testing.B) {
	const n = 10_000
	var tokens, simulated float64
	for i := 0; i < b.N; i++ {
		cfg := config.Default()
		core, err := NewCore(&cfg, CoreOptions{})
		if err != nil {
			b.Fatal(err)
		}
		sim := NewSimulator(core)
		planned := seqTokens(1000, 128)
		for j := 0; j < n; j++ {
			prompt := append(seqTokens(1+(j%16)*256, 256), seqTokens(100_000+j*256, 256)...)
			sim.SubmitAt(time.Duration(j)*20*time.Millisecond, &Request{ID: uint64(j + 1), Prompt: prompt, PlannedOutput: planned})
		}
		sim.Run(0)
		tokens += n * 128
		simulated += sim.Now().Seconds()
	}
	b.ReportMetric(tokens/b.Elapsed().Seconds(), "sim_tokens/s")
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "sim_requests/s")
	b.ReportMetric(simulated/float64(b.N), "virtual_s/run")
}

// BenchmarkVirtualRun100k simulates a 100,000-request synthetic trace in
// virtual time (no HTTP): 256-token prompts (the first 128 shared by one of
// 32 prefixes), 64 output tokens, Poisson-free arrivals at 200 req/s, with
// max_num_seqs 1024. It reports simulated requests and tokens per
// wall-clock second (docs/BENCHMARKS.md, scenario 4).
func BenchmarkVirtualRun100k(b *testing.B) {
	const n, out = 100_000, 64
	var simulated float64
	for i := 0; i < b.N; i++ {
		cfg := config.Default()
		cfg.MaxNumSeqs = 1024
		core, err := NewCore(&cfg, CoreOptions{})
		if err != nil {
			b.Fatal(err)
		}
		sim := NewSimulator(core)
		planned := seqTokens(1000, out)
		for j := 0; j < n; j++ {
			prompt := append(seqTokens(1+(j%32)*128, 128), seqTokens(200_000+j*128, 128)...)
			sim.SubmitAt(time.Duration(j)*5*time.Millisecond, &Request{ID: uint64(j + 1), Prompt: prompt, PlannedOutput: planned})
		}
		sim.Run(0)
		simulated += sim.Now().Seconds()
	}
	b.ReportMetric(float64(n*out*b.N)/b.Elapsed().Seconds(), "sim_tokens/s")
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "sim_requests/s")
	b.ReportMetric(simulated/float64(b.N), "virtual_s/run")
}

// BenchmarkAdmit10k measures admitting 10,000 queued requests into an
// empty rank (max_num_seqs 16384): the admission passes until all run.
func BenchmarkAdmit10k(b *testing.B) {
	const n = 10_000
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		cfg := config.Default()
		cfg.MaxNumSeqs = 16384
		cfg.NumGPUBlocks = 65536
		cfg.MaxNumBatchedTokens = 1 << 20
		core, err := NewCore(&cfg, CoreOptions{})
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
