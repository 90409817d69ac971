package hardware

import (
	"errors"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/modelshape"
)

func known(t testing.TB, id string) *modelshape.Shape {
	t.Helper()
	s, ok := modelshape.Known(id)
	if !ok {
		t.Fatalf("no catalogue shape for %s", id)
	}
	return s
}

func mustNew(t testing.TB, o Options) *Model {
	t.Helper()
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func decodePass(m *Model, batch, ctx int) float64 {
	return m.PassMs(&engine.PassContents{Decodes: batch, DecodeCtxSum: batch * ctx, DecodeCtxMax: ctx})
}

// A decode pass reads every weight once whatever the batch: while the
// GEMMs are memory-bound (batch below H100's FLOPS ÷ bandwidth ≈ 295
// tokens) time barely grows; once compute-bound it doubles with the batch.
func TestPhysics_DecodeGrowsWithBatchOnlyOnceComputeBound(t *testing.T) {
	m := mustNew(t, Options{GPU: "h100_sxm", Shape: known(t, "meta-llama/Llama-3.1-8B-Instruct")})
	const ctx = 16 // short contexts: the GEMMs dominate
	b1, b64 := decodePass(m, 1, ctx), decodePass(m, 64, ctx)
	b2k, b4k := decodePass(m, 2048, ctx), decodePass(m, 4096, ctx)
	if r := b64 / b1; r > 1.3 {
		t.Errorf("memory-bound: batch 64 takes %.2f ms, %.2f× batch 1 (%.2f ms); want < 1.3×", b64, r, b1)
	}
	if r := b4k / b2k; r < 1.8 || r > 2.2 {
		t.Errorf("compute-bound: batch 4096 takes %.2f ms, %.2f× batch 2048 (%.2f ms); want ≈ 2×", b4k, r, b2k)
	}
	for b, prev := 2, b1; b <= 4096; b *= 2 {
		cur := decodePass(m, b, ctx)
		if cur < prev {
			t.Errorf("batch %d: %.3f ms < batch %d: %.3f ms", b, cur, b/2, prev)
		}
		prev = cur
	}
}

// Splitting the weights over twice the GPUs halves each GPU's GEMM time,
// and every layer gains two all-reduces of the hidden states.
func TestPhysics_TensorParallelHalvesGEMMsAndAddsAllReduces(t *testing.T) {
	s := known(t, "meta-llama/Llama-3.1-70B-Instruct")
	const T = 4096.0
	gemms := func(m *Model) float64 {
		return float64(m.layers) * (m.qkv.at(T) + m.o.at(T) + m.gateUp.at(T) + m.down.at(T))
	}
	prev := mustNew(t, Options{GPU: "h100_sxm", Shape: s, TP: 1})
	if prev.ar.xs != nil {
		t.Error("TP 1 has an all-reduce")
	}
	for _, tp := range []int{2, 4, 8} {
		m := mustNew(t, Options{GPU: "h100_sxm", Shape: s, TP: tp})
		if r := gemms(prev) / gemms(m); r < 1.8 || r > 2.3 {
			t.Errorf("TP %d → %d: GEMM time %.1f → %.1f ms (÷%.2f), want ÷≈2", tp/2, tp, gemms(prev), gemms(m), r)
		}
		if ar := m.ar.at(T * float64(s.Hidden)); ar <= 0 {
			t.Errorf("TP %d: all-reduce of %v elements costs %v ms", tp, T*float64(s.Hidden), ar)
		}
		prev = m
	}
}

// FP8 weights halve the bytes a memory-bound decode pass reads. The
// 70B model's GEMMs are large enough to be bandwidth-bound on every GPU; on
// Blackwell the 8B model's are not (their measured latencies sit at the
// kernels' floor of about 9 µs, where FP8 saves nothing), so it is checked
// on the others only.
func TestPhysics_FP8WeightsCutMemoryBoundDecode(t *testing.T) {
	for _, c := range []struct {
		model string
		gpus  []string
	}{
		{"meta-llama/Llama-3.1-70B-Instruct", []string{"h100_sxm", "h200_sxm", "b200_sxm", "gb200", "l40s"}},
		{"meta-llama/Llama-3.1-8B-Instruct", []string{"h100_sxm", "h200_sxm", "l40s"}},
	} {
		s := known(t, c.model)
		for _, gpu := range c.gpus {
			bf16 := decodePass(mustNew(t, Options{GPU: gpu, Shape: s}), 8, 1024)
			fp8 := decodePass(mustNew(t, Options{GPU: gpu, Shape: s, Quantization: "fp8"}), 8, 1024)
			if fp8 > 0.85*bf16 {
				t.Errorf("%s on %s, batch 8: FP8 %.2f ms vs BF16 %.2f ms, want at most 0.85×", c.model, gpu, fp8, bf16)
			}
		}
	}
}

// NVFP4 weights (Blackwell) halve the bytes again: a memory-bound decode
// of the 70B model is faster than with FP8, and the weights take a
// quarter of their 16-bit size.
func TestPhysics_NVFP4WeightsOnBlackwell(t *testing.T) {
	s := known(t, "meta-llama/Llama-3.1-70B-Instruct")
	for _, gpu := range []string{"b200_sxm", "gb200"} {
		f8 := mustNew(t, Options{GPU: gpu, Shape: s, Quantization: "fp8"})
		f4 := mustNew(t, Options{GPU: gpu, Shape: s, Quantization: "modelopt_fp4"})
		bf := mustNew(t, Options{GPU: gpu, Shape: s})
		if a, b := decodePass(f8, 8, 1024), decodePass(f4, 8, 1024); b > 0.9*a {
			t.Errorf("%s batch 8: NVFP4 %.2f ms vs FP8 %.2f ms, want at most 0.9×", gpu, b, a)
		}
		if r := float64(f4.WeightBytes()) / float64(bf.WeightBytes()); r < 0.25 || r > 0.3 {
			t.Errorf("%s: NVFP4 weights %.3f of BF16's", gpu, r)
		}
	}
}

// Llama-3.1-70B in BF16 is 131 GiB of weights: one 80 GB GPU refuses it
// with vLLM's message; four hold it with room for the KV cache.
func TestPhysics_70BInBF16DoesNotFitOneH100(t *testing.T) {
	s := known(t, "meta-llama/Llama-3.1-70B-Instruct")
	mo := MemoryOptions{GPUMemoryUtilization: 0.9, MaxModelLen: 8192, MaxNumBatchedTokens: 8192, MaxNumSeqs: 256, BlockSize: 16}
	_, err := mustNew(t, Options{GPU: "h100_sxm", Shape: s}).Memory(mo)
	if !errors.Is(err, ErrDoesNotFit) || !strings.Contains(err.Error(), "ValueError: No available memory for the cache blocks.") {
		t.Fatalf("TP 1: %v", err)
	}
	mem, err := mustNew(t, Options{GPU: "h100_sxm", Shape: s, TP: 4}).Memory(mo)
	if err != nil || mem.Blocks*16 < 100000 {
		t.Fatalf("TP 4: %+v, %v", mem, err)
	}
	// FP8 weights fit one GPU, but not a 128k-token request beside them.
	mo.MaxModelLen = 131072
	_, err = mustNew(t, Options{GPU: "h100_sxm", Shape: s, Quantization: "fp8"}).Memory(mo)
	if !errors.Is(err, ErrDoesNotFit) || !strings.Contains(err.Error(), "To serve at least one request with the models's max seq len (131072)") {
		t.Fatalf("FP8 TP 1 at 128k: %v", err)
	}
}

// The KV pool follows the memory settings as vLLM's does.
func TestMemory_FollowsSettings(t *testing.T) {
	s := known(t, "meta-llama/Llama-3.1-8B-Instruct")
	mo := MemoryOptions{GPUMemoryUtilization: 0.9, MaxModelLen: 8192, MaxNumBatchedTokens: 8192, MaxNumSeqs: 256, BlockSize: 16}
	m := mustNew(t, Options{GPU: "h100_sxm", Shape: s})
	base, err := m.Memory(mo)
	if err != nil {
		t.Fatal(err)
	}
	// 32 layers × 8 KV heads × 128 × 2 (K, V) × 2 bytes.
	if base.KVBytesPerToken != 131072 {
		t.Errorf("KV bytes per token = %d, want 131072", base.KVBytesPerToken)
	}
	if base.Blocks != int(base.KVCache/(16*131072)) {
		t.Errorf("blocks %d for %d bytes", base.Blocks, base.KVCache)
	}
	mo2 := mo
	mo2.GPUMemoryUtilization = 0.5
	if low, _ := m.Memory(mo2); low.Blocks >= base.Blocks {
		t.Errorf("utilization 0.5: %d blocks, 0.9: %d", low.Blocks, base.Blocks)
	}
	fp8, _ := mustNew(t, Options{GPU: "h100_sxm", Shape: s, KVCacheDtype: "fp8"}).Memory(mo)
	if fp8.KVBytesPerToken != 65536 || fp8.Blocks < 2*base.Blocks-1 {
		t.Errorf("fp8 KV: %d bytes/token, %d blocks (bf16 %d)", fp8.KVBytesPerToken, fp8.Blocks, base.Blocks)
	}
	tp2, _ := mustNew(t, Options{GPU: "h100_sxm", Shape: s, TP: 2}).Memory(mo)
	if tp2.KVBytesPerToken != 65536 || tp2.Blocks <= 2*base.Blocks {
		t.Errorf("TP 2: %d bytes/token, %d blocks (TP 1 %d)", tp2.KVBytesPerToken, tp2.Blocks, base.Blocks)
	}
	// DeepSeek's MLA keeps one 576-wide latent per token and layer on
	// every rank.
	ds, _ := mustNew(t, Options{GPU: "h200_sxm", Shape: known(t, "deepseek-ai/DeepSeek-V3"), TP: 8}).Memory(mo)
	if ds.KVBytesPerToken != 61*576*2 {
		t.Errorf("DeepSeek-V3 KV bytes per token = %d, want %d", ds.KVBytesPerToken, 61*576*2)
	}
}

// A GPU without tables borrows a measured one's efficiencies and says so;
// its lower bandwidth makes a memory-bound pass slower.
func TestBorrowedGPU_RooflineFromNearestMeasured(t *testing.T) {
	s := known(t, "meta-llama/Llama-3.1-8B-Instruct")
	sxm := mustNew(t, Options{GPU: "h100_sxm", Shape: s})
	pcie := mustNew(t, Options{GPU: "h100_pcie", Shape: s})
	if n := pcie.Notes(); len(n) != 1 || !strings.Contains(n[0], "h100_pcie has no measured operator tables: roofline with h100_sxm's measured efficiencies") {
		t.Errorf("notes = %q", n)
	}
	if len(sxm.Notes()) != 0 {
		t.Errorf("h100_sxm notes = %q", sxm.Notes())
	}
	a, b := decodePass(sxm, 1, 1024), decodePass(pcie, 1, 1024)
	// 3.35 vs 2.0 TB/s: the weight reads take 1.675× as long.
	if r := b / a; r < 1.4 || r > 1.8 {
		t.Errorf("batch-1 decode: pcie %.2f ms, sxm %.2f ms (%.2f×), want ≈ bandwidth ratio 1.675", b, a, r)
	}
}

func TestNew_BadInput(t *testing.T) {
	s := known(t, "meta-llama/Llama-3.1-8B-Instruct")
	awq := *s
	awq.QuantMethod = "awq"
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{GPU: "h300", Shape: s}, `unknown GPU "h300" (known: a100_pcie, a100_sxm,`},
		{Options{GPU: "h100_sxm", Shape: s, Quantization: "awq"}, "quantization awq: no operator tables for it (supported: fp8, nvfp4 / modelopt_fp4)"},
		{Options{GPU: "a100_sxm", Shape: s, Quantization: "fp8"}, "quantization fp8 on a100_sxm: no operator tables for FP8 GEMMs"},
		{Options{GPU: "h100_sxm", Shape: s, Dtype: "float32"}, "dtype float32: no operator tables for it"},
		{Options{GPU: "h100_sxm", Shape: s, KVCacheDtype: "fp8_inc"}, "kv cache dtype fp8_inc: no operator tables"},
		{Options{GPU: "h100_sxm", Shape: s, TP: 3}, "tensor parallel size 3 does not divide num_attention_heads 32"},
		{Options{GPU: "h100_sxm"}, "no model shape"},
		{Options{GPU: "h100_sxm", Shape: s, Quantization: "modelopt_fp4"}, "quantization nvfp4 on h100_sxm: no operator tables for NVFP4 GEMMs"},
		{Options{GPU: "h100_sxm", Shape: &awq}, "meta-llama/Llama-3.1-8B-Instruct is quantized with awq: no operator tables for it"},
		{Options{GPU: "h100_sxm", Shape: s, TP: 2, Interconnect: InterconnectPCIe}, "gpu interconnect pcie: h100_sxm's GPUs are not linked over PCIe"},
	} {
		_, err := New(c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want %q", c.o, err, c.want)
		}
	}
}

// Every catalogue model builds on every measured GPU and engine, and a
// pass is priced with a positive, finite duration.
func TestModels_AllCatalogueShapesPriced(t *testing.T) {
	for _, id := range modelshape.KnownIDs() {
		s := known(t, id)
		tp := 8
		for s.Heads%tp != 0 {
			tp /= 2
		}
		for _, fw := range []string{"vllm", "sglang", "trtllm"} {
			m := mustNew(t, Options{GPU: "h200_sxm", Shape: s, TP: tp, EngineType: fw})
			pc := &engine.PassContents{Prefills: []engine.PrefillChunk{{NewTokens: 512, CachedTokens: 256}}, Decodes: 32, DecodeCtxSum: 32 * 900}
			if d := m.PassMs(pc); !(d > 0 && d < 1e4) {
				t.Errorf("%s %s: pass %v ms", id, fw, d)
			}
		}
	}
}

// Pricing a pass allocates nothing: it runs once per engine pass.
func TestPassMs_NoAllocation(t *testing.T) {
	m := mustNew(t, Options{GPU: "h100_sxm", Shape: known(t, "Qwen/Qwen3-30B-A3B"), TP: 2})
	pc := batch256()
	if n := testing.AllocsPerRun(100, func() { m.PassMs(pc) }); n != 0 {
		t.Errorf("PassMs allocates %v times", n)
	}
}

// batch256 is a busy mixed pass: 256 decodes and two prompt chunks.
func batch256() *engine.PassContents {
	return &engine.PassContents{
		Prefills: []engine.PrefillChunk{{NewTokens: 1024, CachedTokens: 2048}, {NewTokens: 300}},
		Decodes:  254, DecodeCtxSum: 254 * 1800, DecodeCtxMax: 4000,
	}
}

// BenchmarkPassMs prices a batch-256 pass (the brief's bound: ≤ 2 µs).
func BenchmarkPassMs(b *testing.B) {
	for _, c := range []struct {
		name string
		o    Options
	}{
		{"llama8b-h100", Options{GPU: "h100_sxm", Shape: known(b, "meta-llama/Llama-3.1-8B-Instruct")}},
		{"llama70b-h100-tp4", Options{GPU: "h100_sxm", Shape: known(b, "meta-llama/Llama-3.1-70B-Instruct"), TP: 4}},
		{"gemma3-b200", Options{GPU: "b200_sxm", Shape: known(b, "google/gemma-3-27b-it")}},
		{"deepseek-h200-tp8", Options{GPU: "h200_sxm", Shape: known(b, "deepseek-ai/DeepSeek-V3"), TP: 8}},
	} {
		m := mustNew(b, c.o)
		pc := batch256()
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				m.PassMs(pc)
			}
		})
	}
}

// A GEMM in a forward pass is never faster than streaming its weights and
// activations from memory at the datasheet bandwidth: the other layers
// have evicted its weights from L2 since the previous pass. aiconfigurator's
// L40S tables time many small weights while they sit in its 96 MB L2
// (ops.go, gemmCurve); the model must not pass that on. Checked on every
// measured GPU and engine for the 8B model's GEMMs at TP 1 and the 70B
// model's at TP 8 (8–120 MB of weights per GPU), in BF16 and FP8, at
// decode-sized batches where the GEMMs are memory-bound.
func TestPhysics_GEMMNeverBeatsMemoryBandwidth(t *testing.T) {
	type gemm struct {
		name string
		c    *curve
		n, k int
	}
	for _, gpu := range []string{"h100_sxm", "h200_sxm", "b200_sxm", "gb200", "a100_sxm", "l40s"} {
		for _, engineType := range []string{"vllm", "sglang", "trtllm"} {
			for _, c := range []struct {
				model string
				tp    int
				quant string
			}{
				{"meta-llama/Llama-3.1-8B-Instruct", 1, ""},
				{"meta-llama/Llama-3.1-8B-Instruct", 1, "fp8"},
				{"meta-llama/Llama-3.1-70B-Instruct", 8, ""},
				{"meta-llama/Llama-3.1-70B-Instruct", 8, "fp8"},
			} {
				if c.quant == "fp8" && gpu == "a100_sxm" {
					continue
				}
				s := known(t, c.model)
				m := mustNew(t, Options{GPU: gpu, Shape: s, TP: c.tp, Quantization: c.quant, EngineType: engineType})
				g, err := Lookup(gpu)
				if err != nil {
					t.Fatal(err)
				}
				h, heads, kv, hd := s.Hidden, s.Heads/c.tp, max(1, s.KVHeads/c.tp), s.HeadDim
				for _, x := range []gemm{
					{"qkv", &m.qkv, (heads + 2*kv) * hd, h},
					{"o", &m.o, h, heads * hd},
					{"gate_up", &m.gateUp, 2 * s.Intermediate / c.tp, h},
					{"down", &m.down, h, s.Intermediate / c.tp},
				} {
					for _, T := range []float64{1, 8, 32, 128} {
						floor := streamGEMM(g, m.wPrec, T, float64(x.n), float64(x.k))
						if got := x.c.at(T); got < floor*(1-1e-9) {
							t.Errorf("%s %s TP %d %s on %s: %s at %v tokens costs %.4f ms, below streaming its %d×%d weights at the datasheet bandwidth (%.4f ms)",
								c.model, c.quant, c.tp, engineType, gpu, x.name, T, got, x.n, x.k, floor)
						}
					}
				}
			}
		}
	}
}

// A decode pass reads every sequence's KV cache once: it takes at least
// the batch's context tokens × KV bytes per token ÷ the datasheet
// bandwidth, whatever the attention table says (ops.go, kvFloor: L40S's
// and A100's TensorRT-LLM tables time some cells faster than that).
func TestPhysics_DecodeReadsItsKVCache(t *testing.T) {
	for _, gpu := range []string{"h100_sxm", "h200_sxm", "b200_sxm", "gb200", "a100_sxm", "l40s"} {
		g, err := Lookup(gpu)
		if err != nil {
			t.Fatal(err)
		}
		for _, engineType := range []string{"vllm", "sglang", "trtllm"} {
			for _, c := range []struct {
				model string
				tp    int
			}{{"meta-llama/Llama-3.1-8B-Instruct", 1}, {"meta-llama/Llama-3.1-70B-Instruct", 8}} {
				m := mustNew(t, Options{GPU: gpu, Shape: known(t, c.model), TP: c.tp, EngineType: engineType})
				for _, b := range []int{1, 16, 64, 256} {
					for _, ctx := range []int{256, 1024, 4096, 16384} {
						floor := 1e3 * float64(b) * float64(ctx) * float64(m.KVBytesPerToken()) / g.MemBW
						if got := decodePass(m, b, ctx); got < floor {
							t.Errorf("%s TP %d %s on %s: %d decodes at context %d take %.2f ms, less than reading their KV cache (%.2f ms)",
								c.model, c.tp, engineType, gpu, b, ctx, got, floor)
						}
					}
				}
			}
		}
	}
}
