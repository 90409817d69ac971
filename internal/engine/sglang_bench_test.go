package engine

import "testing"

// BenchmarkSGLangDecodePass256 measures one SGLang decode pass (BeginPass +
// EndPass) with 256 running requests, page size 1: the prefill attempt that
// finds no waiting request, the decode memory check, one page per request,
// the pass's timing and delivery.
func BenchmarkSGLangDecodePass256(b *testing.B) {
	cfg := DefaultConfig()
	cfg.Type = EngineSGLang
	cfg.BlockSize = 1
	cfg.MaxNumSeqs = 256
	cfg.MaxModelLen = 1 << 24
	cfg.NumBlocks = 256*(512+b.N+64) + 64 // nobody is ever retracted
	cfg.SGLang.ClipMaxNewTokens = 1       // admit all 256 at once
	core, err := NewCore(cfg, CoreOptions{})
	if err != nil {
		b.Fatal(err)
	}
	planned := seqTokens(1000, b.N+64)
	out := NewOutput()
	for i := range 256 {
		core.Submit(&Request{ID: uint64(i + 1), Prompt: seqTokens(10_000+i*512, 512), PlannedOutput: planned, Out: out})
	}
	now := VirtualEpoch
	var buf []OutputItem
	for core.NumWaiting() > 0 {
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
		buf = out.Drain(buf[:0])
	}
	b.StopTimer()
	if len(buf) != 256 || core.NumRunning() != 256 {
		b.Fatalf("pass delivered %d tokens with %d running, want 256", len(buf), core.NumRunning())
	}
}
