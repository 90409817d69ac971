package ui

import (
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// BenchmarkDecodePass256 is the engine's 256-request decode pass with no
// inspector, with a hub (state snapshots at most every 100 ms of wall
// time, as served) and with a snapshot after every pass (the worst case):
// what the live view costs the engine goroutine per pass
// (docs/BENCHMARKS.md, "Live UI").
func BenchmarkDecodePass256(b *testing.B) {
	for _, bc := range []struct {
		name     string
		interval time.Duration // 0: no hub
	}{{"none", 0}, {"hub", defaultStateInterval}, {"hub-state-every-pass", time.Nanosecond}} {
		b.Run(bc.name, func(b *testing.B) {
			var insp engine.Inspector
			if bc.interval > 0 {
				insp = NewHub(Options{StateInterval: bc.interval}).Inspector(0)
			}
			decodePasses(b, insp)
		})
	}
}

func decodePasses(b *testing.B, insp engine.Inspector) {
	cfg := engine.DefaultConfig()
	cfg.MaxNumSeqs = 256
	cfg.MaxModelLen = 1 << 24
	bs := engine.EngineVLLM.DefaultBlockSize()
	cfg.NumBlocks = 256*((512+b.N+64+bs-1)/bs) + 64
	core, err := engine.NewCore(cfg, engine.CoreOptions{Inspector: insp})
	if err != nil {
		b.Fatal(err)
	}
	planned := make([]uint32, b.N+64)
	out := engine.NewOutput()
	for i := range 256 {
		prompt := make([]uint32, 512)
		for j := range prompt {
			prompt[j] = uint32(10_000 + i*512 + j)
		}
		core.Submit(&engine.Request{ID: engine.NewRequestID(), Label: "cmpl-bench", Prompt: prompt, PlannedOutput: planned, Out: out})
	}
	now := engine.VirtualEpoch
	var buf []engine.OutputItem
	pass := func() {
		d := core.BeginPass(now)
		now = now.Add(d)
		core.EndPass(now, now)
		buf = out.Drain(buf)
	}
	for core.NumWaiting() > 0 || core.NumRunning() < 256 {
		pass()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		pass()
	}
}

// BenchmarkEncodeEngine is one update of the engine page of a busy worker:
// 1000 running requests, 500 finished ones, a 16,384-block pool, 120
// passes of history. Encoded once per change whatever the viewer count.
func BenchmarkEncodeEngine(b *testing.B) {
	hub := NewHub(Options{StateInterval: time.Hour})
	cfg := engine.DefaultConfig()
	cfg.MaxNumSeqs = 1024
	cfg.NumBlocks = 65536
	core, err := engine.NewCore(cfg, engine.CoreOptions{Inspector: hub.Inspector(0)})
	if err != nil {
		b.Fatal(err)
	}
	sim := engine.NewSimulator(core)
	for i := range 1500 {
		planned := 50
		if i >= 500 {
			planned = 100_000 // still running at the end
		}
		prompt := make([]uint32, 32)
		for j := range prompt {
			prompt[j] = uint32(i*32 + j + 1)
		}
		sim.SubmitAt(time.Duration(i)*100*time.Microsecond, &engine.Request{ID: engine.NewRequestID(),
			Label: "chatcmpl-0123456789abcdef0123456789abcdef", Prompt: prompt,
			PlannedOutput: make([]uint32, planned), Out: engine.NewOutput()})
	}
	sim.Run(300)
	core.InspectState(sim.Clock.Now())
	if s := hub.Summary(); s.Running != 1000 || s.FinishedRequests != 500 {
		b.Fatalf("setup: %+v", s)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var size int
	for range b.N {
		hub.version.Add(1)
		_, enc := hub.encodeEngine()
		size = len(enc)
	}
	b.ReportMetric(float64(size), "bytes/update")
}
