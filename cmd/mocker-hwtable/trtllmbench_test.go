package main

import (
	"strconv"
	"strings"
	"testing"
)

// trtllm-bench's limits, worked out by hand from its published procedure
// (tuning.py) for Llama 3.1 8B (32 layers, 8 KV heads of 128, 8.03 B
// parameters) in FP8 with an FP8 KV cache on one 80 GiB H100:
// engine 8.03e9 B = 7.48 GiB, KV room (80 − 7.48) × 0.95 = 68.9 GiB,
// 2 × 32 × 8 × 128 × 1 B = 64 KiB a token, so 518.7 requests of 2176
// tokens: batch 518.7 → 640 (rounded up to 128); tokens 518.7 × (1 + ISL/OSL).
func TestTRTLLMBenchLimits(t *testing.T) {
	base := Point{Source: "trtllm-perf-overview", Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "h100_sxm", TP: 1,
		Weights: "fp8", KVDType: "fp8", Engine: "trtllm", Load: LoadMax, Concurrency: 3000, Requests: 3000}
	for _, tt := range []struct {
		isl, osl         string
		wantBS, wantToks int
	}{
		{"2048", "128", 640, 9216}, // 518.7 × 17 = 8818 → 9216 (rounded up to 1024)
		{"128", "2048", 640, 2048}, // 518.7 × 1.0625 = 551 → the 2048 floor
	} {
		p := base
		p.ISL, p.OSL = tt.isl, tt.osl
		bs, toks, ok := trtllmBenchLimits(p)
		if !ok || bs != tt.wantBS || toks != tt.wantToks {
			t.Errorf("%s/%s: limits %d, %d, %v; want %d, %d", tt.isl, tt.osl, bs, toks, ok, tt.wantBS, tt.wantToks)
		}
		args := (&Options{}).key(p).replayArgs()
		joined := strings.Join(args, " ")
		want := "--max-num-seqs " + itoa(tt.wantBS) + " --max-num-batched-tokens " + itoa(tt.wantToks) + " --max-model-len 2176"
		if !strings.Contains(joined, want) {
			t.Errorf("%s/%s: replay args %q lack %q", tt.isl, tt.osl, joined, want)
		}
	}

	// Points not measured with trtllm-bench throughput keep replay's
	// defaults: a closed loop, another source, another engine.
	for name, mod := range map[string]func(*Point){
		"closed loop":   func(p *Point) { p.Load, p.Concurrency, p.Requests = LoadClosed, 16, 0 },
		"online source": func(p *Point) { p.Source = "trtllm-online-serving-v0.14" },
		"sglang":        func(p *Point) { p.Engine = "sglang" },
		"unknown model": func(p *Point) { p.Model = "unknown/model" },
		"random length": func(p *Point) { p.ISL = "uniform:1:1024" },
	} {
		p := base
		p.ISL, p.OSL = "128", "128"
		mod(&p)
		if _, _, ok := trtllmBenchLimits(p); ok {
			t.Errorf("%s: got trtllm-bench limits", name)
		}
		if args := (&Options{}).key(p).replayArgs(); strings.Contains(strings.Join(args, " "), "--max-num-seqs") {
			t.Errorf("%s: replay args %q set --max-num-seqs", name, args)
		}
	}
}

// The rounding's edges: the 64 floor and the 4096 cap of the batch, the
// 2048 floor of the tokens.
func TestFinetuneLimits(t *testing.T) {
	for _, tt := range []struct {
		requests         float64
		isl, osl         int
		wantBS, wantToks int
	}{
		{10, 128, 128, 64, 2048},     // 10 → the 64 floor; 20 tokens → 2048
		{200, 1000, 1000, 224, 2048}, // 200 → 224 (32s); 400 tokens → 2048
		{5000, 128, 128, 4096, 8192}, // capped at 4096; 8192 tokens stay 8192
		{3000, 5000, 500, 3072, 32768},
	} {
		bs, toks, _ := finetuneLimits(tt.requests, tt.isl, tt.osl)
		if bs != tt.wantBS || toks != tt.wantToks {
			t.Errorf("%.0f requests of %d/%d: %d, %d; want %d, %d", tt.requests, tt.isl, tt.osl, bs, toks, tt.wantBS, tt.wantToks)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// A point at TP > 1 on a GPU linked over PCIe replays with
// --gpu-interconnect pcie unless -measured-allreduce; TP 1 and NVLink GPUs
// never do.
func TestPCIeInterconnectArgs(t *testing.T) {
	p := Point{Source: "trtllm-perf-overview-v0.17", Model: "meta-llama/Llama-3.1-70B-Instruct", GPU: "l40s", TP: 4,
		Weights: "fp8", KVDType: "fp8", Engine: "trtllm", Load: LoadMax, Concurrency: 3000, Requests: 3000, ISL: "128", OSL: "128"}
	has := func(o Options, p Point) bool {
		return strings.Contains(strings.Join(o.key(p).replayArgs(), " "), "--gpu-interconnect pcie")
	}
	if !has(Options{}, p) {
		t.Error("L40S TP 4: no --gpu-interconnect pcie")
	}
	if has(Options{MeasuredAllReduce: true}, p) {
		t.Error("L40S TP 4 with MeasuredAllReduce: --gpu-interconnect pcie")
	}
	tp1, nvl := p, p
	tp1.TP, nvl.GPU = 1, "h100_sxm"
	if has(Options{}, tp1) || has(Options{}, nvl) {
		t.Error("TP 1 or an NVLink GPU got --gpu-interconnect pcie")
	}
}
