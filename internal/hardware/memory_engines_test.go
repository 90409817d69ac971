package hardware

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// Each engine's pool from the same GPU, model and settings, by hand:
// vLLM requested − weights − activations − runtime; TensorRT-LLM 0.9 of
// what is free once those are in place; SGLang total × 0.87 (its TP 2
// default) − weights − runtime.
func TestMemory_EnginePoolSizing(t *testing.T) {
	m := mustNew(t, Options{GPU: "h100_sxm", Shape: known(t, "meta-llama/Llama-3.3-70B-Instruct"), TP: 2, Quantization: "fp8", KVCacheDtype: "fp8"})
	mo := MemoryOptions{GPUMemoryUtilization: 0.9, MaxModelLen: 8192, MaxNumBatchedTokens: 8192, MaxNumSeqs: 256, BlockSize: 16}
	v, err := m.Memory(mo)
	if err != nil {
		t.Fatal(err)
	}
	total, w, a, n := float64(v.Total), float64(v.Weights), float64(v.Activations), float64(v.NonTorch)
	mo.Sizing = PoolTRTLLM
	tr, err := m.Memory(mo)
	if err != nil {
		t.Fatal(err)
	}
	mo.Sizing, mo.GPUMemoryUtilization = PoolSGLang, 0
	sg, err := m.Memory(mo)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		got  int64
		want float64
	}{
		{"vllm", v.KVCache, 0.9*total - w - a - n},
		{"trtllm", tr.KVCache, 0.9 * (total - w - a - n)},
		{"sglang", sg.KVCache, 0.87*total - w - n},
	} {
		if math.Abs(float64(c.got)-c.want) > 2 {
			t.Errorf("%s pool %d bytes, want %.0f", c.name, c.got, c.want)
		}
	}
	// 80 GiB, 37 GiB of FP8 weights: TensorRT-LLM's 0.9 of the free memory
	// is ≈ 10 % more than vLLM's 0.9 of the total minus the same.
	if r := float64(tr.KVCache) / float64(v.KVCache); r < 1.05 || r > 1.2 {
		t.Errorf("trtllm / vllm pool = %.3f, want 1.05–1.2", r)
	}
	t.Logf("pools (GiB): vllm %.2f, trtllm %.2f, sglang %.2f", float64(v.KVCache)/(1<<30), float64(tr.KVCache)/(1<<30), float64(sg.KVCache)/(1<<30))
}

func TestSGLangMemFractionStatic(t *testing.T) {
	for tp, want := range map[int]float64{1: 0.88, 2: 0.87, 4: 0.85, 8: 0.81, 16: 0.79} {
		if got := SGLangMemFractionStatic(tp); got != want {
			t.Errorf("TP %d: %v, want %v", tp, got, want)
		}
	}
}

// Llama 3.1 405B in BF16 on 8 × H200 under SGLang keeps 0.81 of 141 GiB
// for weights (94.5 GiB per GPU) and KV: about 18 GiB of pool, where
// vLLM's 0.9 leaves ≈ 30. 70B in BF16 on one H100 leaves SGLang nothing:
// its own error.
func TestMemory_SGLangStatic(t *testing.T) {
	m := mustNew(t, Options{GPU: "h200_sxm", Shape: known(t, "meta-llama/Llama-3.1-405B-Instruct"), TP: 8})
	mo := MemoryOptions{GPUMemoryUtilization: 0.9, MaxModelLen: 8192, MaxNumBatchedTokens: 8192, MaxNumSeqs: 256, BlockSize: 16}
	v, _ := m.Memory(mo)
	mo.Sizing, mo.GPUMemoryUtilization = PoolSGLang, 0
	sg, err := m.Memory(mo)
	if err != nil {
		t.Fatal(err)
	}
	if g := float64(sg.KVCache) / (1 << 30); g < 15 || g > 21 {
		t.Errorf("SGLang pool %.1f GiB, want ≈ 18", g)
	}
	if !(sg.KVCache < v.KVCache) {
		t.Errorf("SGLang pool %d ≥ vLLM pool %d", sg.KVCache, v.KVCache)
	}
	small := mustNew(t, Options{GPU: "h100_sxm", Shape: known(t, "meta-llama/Llama-3.1-70B-Instruct")})
	_, err = small.Memory(mo)
	if !errors.Is(err, ErrDoesNotFit) || !strings.Contains(err.Error(), "Not enough memory. Please try to increase --mem-fraction-static.") {
		t.Errorf("70B BF16 on one H100 under SGLang: %v", err)
	}
}

// The profiling run's activations are the larger of its two phases, by
// hand for Llama 3.1 8B on one GPU (32 heads, 8 KV heads, head_dim 128,
// hidden 4096, MLP 14336, vocab 128256): the forward pass of 8192 tokens
// holds 2 × (4·4096 + 48·128 + 3·14336) = 131,072 bytes a token = 1 GiB; the
// sampler holds that pass's hidden states (8192 × 4096 × 2 bytes) and two
// float32 vocab rows per sequence. At 256 sequences the forward pass sets
// the peak; at vLLM's 1024 on an H100 the sampler does. A sum would count
// both.
func TestMemory_ActivationsArePeakOfForwardOrSampler(t *testing.T) {
	m := mustNew(t, Options{GPU: "h100_sxm", Shape: known(t, "meta-llama/Llama-3.1-8B-Instruct"), TP: 1})
	for _, c := range []struct {
		seqs int
		want int64
	}{
		{256, 1 << 30},
		{1024, 8192*4096*2 + 2*1024*128256*4},
	} {
		mem, err := m.Memory(MemoryOptions{GPUMemoryUtilization: 0.9, MaxModelLen: 8192, MaxNumBatchedTokens: 8192, MaxNumSeqs: c.seqs, BlockSize: 16})
		if err != nil {
			t.Fatal(err)
		}
		if mem.Activations != c.want {
			t.Errorf("max_num_seqs %d: activations %d bytes, want %d", c.seqs, mem.Activations, c.want)
		}
	}
}
