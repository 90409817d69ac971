package hardware

import (
	"errors"
	"testing"

	"github.com/mocker-server/mocker-server/internal/engine"
)

const (
	scout    = "meta-llama/Llama-4-Scout-17B-16E-Instruct"
	maverick = "meta-llama/Llama-4-Maverick-17B-128E-Instruct"
)

func prefillPass(m *Model, n int) float64 {
	return m.PassMs(&engine.PassContents{Prefills: []engine.PrefillChunk{{NewTokens: n}}})
}

// Llama 4's chunked layers (36 of 48) attend within their chunk of 8192
// positions: up to the chunk the model prices as if every layer were
// global; past it only the 12 global layers' attention keeps growing with
// the context, and a sequence that has just entered a new chunk attends
// to fewer positions in the chunked layers than one at its chunk's end.
// TensorRT-LLM chunks only the prompts' attention.
func TestPhysics_Llama4ChunkedAttentionCapsTheContext(t *testing.T) {
	s := known(t, scout)
	global := *s
	global.ChunkedLayers = 0
	for _, engineType := range []string{"vllm", "sglang", "trtllm"} {
		o := Options{GPU: "h200_sxm", Shape: s, TP: 4, Quantization: "fp8", EngineType: engineType}
		m := mustNew(t, o)
		o.Shape = &global
		g := mustNew(t, o)
		for _, ctx := range []int{512, 4096, 8192} {
			if a, b := decodePass(m, 64, ctx), decodePass(g, 64, ctx); a != b {
				t.Errorf("%s, context %d within the chunk: %.3f ms, all-global %.3f ms", engineType, ctx, a, b)
			}
		}
		if a, b := prefillPass(m, 8192), prefillPass(g, 8192); a != b {
			t.Errorf("%s, an 8192-token prompt: %.2f ms, all-global %.2f ms", engineType, a, b)
		}
		if engineType == "trtllm" {
			// TensorRT-LLM chunks the prompts' attention only.
			if a, b := decodePass(m, 64, 65536), decodePass(g, 64, 65536); a != b {
				t.Errorf("trtllm, 64 decodes at context 65536: %.2f ms, all-global %.2f ms", a, b)
			}
			if a, b := prefillPass(m, 32768), prefillPass(g, 32768); a >= b {
				t.Errorf("trtllm: a 32768-token prompt takes %.2f ms, all-global %.2f ms", a, b)
			}
			continue
		}
		grow := decodePass(m, 64, 65536) - decodePass(m, 64, 8192)
		growGlobal := decodePass(g, 64, 65536) - decodePass(g, 64, 8192)
		if r := grow / growGlobal; r < 0.2 || r > 0.35 {
			t.Errorf("%s: 64 decodes from context 8192 to 65536 grow by %.2f ms, all-global by %.2f ms: %.2f×, want ≈ 12/48 of the layers",
				engineType, grow, growGlobal, r)
		}
		if a, b := decodePass(m, 1, 8192+16), decodePass(m, 1, 8192); a >= b {
			t.Errorf("%s: a decode 16 positions into the second chunk takes %.3f ms, at the end of the first %.3f ms", engineType, a, b)
		}
		if a, b := prefillPass(m, 32768), prefillPass(g, 32768); a >= b {
			t.Errorf("%s: a 32768-token prompt takes %.2f ms, all-global %.2f ms", engineType, a, b)
		}
	}
}

// Scout and Maverick both run 17B parameters a token: a batch-1 decode
// (memory-bound: it reads the weights it uses) takes about as long on
// either, though Maverick's weights are 3.7× Scout's; a batch of 256 hits
// most of Maverick's 128 experts and so reads more than Scout's 16 (by how
// much depends on the measured MoE kernels: 1.8× on H100 and H200, 1.1× on
// B200, whose FP8 kernels run Scout's batch near Maverick's time).
func TestPhysics_Llama4DecodeReadsTheActiveExperts(t *testing.T) {
	for _, gpu := range []string{"h100_sxm", "h200_sxm", "b200_sxm"} {
		ms := mustNew(t, Options{GPU: gpu, Shape: known(t, scout), TP: 8, Quantization: "fp8"})
		mm := mustNew(t, Options{GPU: gpu, Shape: known(t, maverick), TP: 8, Quantization: "fp8"})
		if r := float64(mm.WeightBytes()) / float64(ms.WeightBytes()); r < 3.5 || r > 3.9 {
			t.Errorf("%s: Maverick's weights are %.2f× Scout's", gpu, r)
		}
		a, b := decodePass(ms, 1, 1024), decodePass(mm, 1, 1024)
		if r := b / a; r < 0.67 || r > 1.5 {
			t.Errorf("%s: batch-1 decode Maverick %.2f ms, Scout %.2f ms (%.2f×)", gpu, b, a, r)
		}
		a, b = decodePass(ms, 256, 1024), decodePass(mm, 256, 1024)
		if b <= a {
			t.Errorf("%s: batch-256 decode Maverick %.2f ms, Scout %.2f ms", gpu, b, a)
		}
		t.Logf("%s TP 8 FP8: batch 1 Scout %.2f ms, Maverick %.2f ms; batch 256 %.2f, %.2f ms", gpu, decodePass(ms, 1, 1024), decodePass(mm, 1, 1024), a, b)
	}
}

// vLLM keeps every layer's KV cache whole for Llama 4 (it turns the hybrid
// KV cache manager off for chunked local attention by default), so a
// token costs 48 layers × KV heads × 128 × 2; the weights decide where the
// models fit.
func TestMemory_Llama4(t *testing.T) {
	mo := MemoryOptions{GPUMemoryUtilization: 0.9, MaxModelLen: 8192, MaxNumBatchedTokens: 8192, MaxNumSeqs: 256, BlockSize: 16}
	m := mustNew(t, Options{GPU: "h100_sxm", Shape: known(t, scout), TP: 4, KVCacheDtype: "fp8"})
	if got, want := m.KVBytesPerToken(), int64(48*2*128*2*1); got != want {
		t.Errorf("Scout TP 4, FP8 KV: %d bytes a token, want %d", got, want)
	}
	if mem, err := m.Memory(mo); err != nil || mem.Blocks*16 < 500000 {
		t.Errorf("Scout BF16 on 4 H100: %+v, %v", mem, err)
	}
	for _, c := range []struct {
		model, gpu string
		tp         int
		quant      string
		fits       bool
	}{
		{scout, "h100_sxm", 1, "", false},
		{scout, "h200_sxm", 1, "fp8", true},
		{maverick, "h100_sxm", 8, "", false},
		{maverick, "h100_sxm", 8, "fp8", true},
		{maverick, "b200_sxm", 8, "", true},
	} {
		_, err := mustNew(t, Options{GPU: c.gpu, Shape: known(t, c.model), TP: c.tp, Quantization: c.quant}).Memory(mo)
		if c.fits != (err == nil) || (err != nil && !errors.Is(err, ErrDoesNotFit)) {
			t.Errorf("%s on %d × %s, quantization %q: %v, want fits = %v", c.model, c.tp, c.gpu, c.quant, err, c.fits)
		}
	}
}
