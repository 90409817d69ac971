package hardware

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/modelshape"
)

// ErrNoTables is wrapped by errors for a dtype or quantization the
// operator tables do not cover.
var ErrNoTables = errors.New("no operator tables")

// Options select a hardware timing model. The zero values of the string
// fields mean vLLM's defaults ("auto", no quantization, vllm).
type Options struct {
	// GPU is a catalogue name (Lookup).
	GPU string
	// Shape is the model's shape; required.
	Shape *modelshape.Shape
	// TP is the tensor-parallel size; 0 means 1.
	TP int
	// Dtype is vLLM's --dtype: auto (the checkpoint's), bfloat16,
	// float16/half.
	Dtype string
	// Quantization is vLLM's --quantization: "" (none, or what the
	// checkpoint says), fp8, or nvfp4 / modelopt_fp4.
	Quantization string
	// KVCacheDtype is vLLM's --kv-cache-dtype: auto (the model dtype),
	// bfloat16, fp8, fp8_e4m3, fp8_e5m2.
	KVCacheDtype string
	// EngineType picks the measured kernels and overheads: vllm, sglang,
	// trtllm.
	EngineType string
	// LoRARank is the adapters' rank for LoRA tokens' extra GEMMs; 0 = 16.
	LoRARank int
	// Interconnect prices the all-reduces: the measured table (the zero
	// value) or NCCL's ring over the GPU's PCIe generation.
	Interconnect Interconnect
}

// Model is a hardware timing model: immutable, safe for concurrent use.
// It implements engine.TimingModel and engine.PassTimer.
type Model struct {
	gpu, src  GPU
	shape     *modelshape.Shape
	tp        int
	framework string
	wPrec     precision // weights and GEMMs
	fp8KV     bool
	notes     []string
	// interconnect prices the all-reduces (Options.Interconnect).
	interconnect Interconnect

	// Per-layer linear layers (one GPU's share).
	qkv, o          curve
	oN, oK          int // the o projection's GEMM shape (EncoderMs)
	mlaQA, mlaQB    curve
	mlaKVA, mlaKVB  curve
	gateUp, down    curve
	moe             curve
	moeMeasured     bool
	moeGateUp       curve // fallback: the experts' GEMMs at T·top-k tokens
	moeDown         curve
	sharedUp        curve
	sharedDown      curve
	router          curve
	lmHead          curve
	loraIn, loraOut curve
	ar              curve // nil xs when TP = 1

	ctx, gen grid2

	// The tables a multimodal tower is priced from (encoder.go): its
	// GEMMs at their own widths, its attention at its own head shape.
	encGEMM *gemmGrid
	encAttn []*attnGrid

	layers, denseLayers, moeLayers int
	slidingLayers, globalLayers    int
	window                         float64
	// chunkedLayers attend within chunks of chunk positions (Llama 4);
	// with chunkedDecodes their decodes do too, else only prompt chunks.
	chunkedLayers  int
	chunk          float64
	chunkedDecodes bool
	loraRank       int
	// genKVMsPerToken is the time to read one token's K and V of one
	// layer from memory at the datasheet bandwidth: the floor of a
	// decode's attention (kvFloor).
	genKVMsPerToken float64

	// Element-wise kernels per layer (norms, RoPE, activation): bytes
	// moved per token, and their count.
	ewBytesPerToken float64
	ewKernels       float64
}

// New builds the model for opts.
func New(opts Options) (*Model, error) {
	if opts.Shape == nil {
		return nil, errors.New("hardware timing: no model shape")
	}
	gpu, err := Lookup(opts.GPU)
	if err != nil {
		return nil, err
	}
	s := opts.Shape
	tp := max(opts.TP, 1)
	m := &Model{gpu: gpu, src: gpu, shape: s, tp: tp, layers: s.Layers, loraRank: opts.LoRARank, interconnect: opts.Interconnect}
	if m.loraRank <= 0 {
		m.loraRank = 16
	}
	if s.Heads%tp != 0 {
		return nil, fmt.Errorf("tensor parallel size %d does not divide num_attention_heads %d of %s", tp, s.Heads, s.Name)
	}
	tablesName := gpu.Tables
	if tablesName == "" {
		src, err := Lookup(gpu.BorrowFrom)
		if err != nil {
			return nil, fmt.Errorf("GPU %s borrows from %s: %w", gpu.Name, gpu.BorrowFrom, err)
		}
		m.src = src
		tablesName = src.Tables
		m.notes = append(m.notes, fmt.Sprintf("%s has no measured operator tables: roofline with %s's measured efficiencies", gpu.Name, src.Name))
	}
	tf, err := loadTables(tablesName)
	if err != nil {
		return nil, err
	}
	fw := opts.EngineType
	if fw == "" {
		fw = "vllm"
	}
	ft, got := tf.framework(fw)
	if ft == nil {
		return nil, fmt.Errorf("%w for %s", ErrNoTables, tablesName)
	}
	m.framework = got
	if got != fw {
		m.notes = append(m.notes, fmt.Sprintf("%s has no %s kernel tables: using %s's", tablesName, fw, got))
	}
	if err := m.dtypes(opts, ft); err != nil {
		return nil, err
	}
	// vLLM's and SGLang's chunked local attention restricts decodes too;
	// TensorRT-LLM applies attention_chunk_size to context requests only
	// (docs/source/features/long-sequence.md: "chunked attention can only be
	// applied to context requests"), its generation kernels attend to the
	// whole sequence.
	m.chunkedDecodes = fw != "trtllm"
	if err := m.build(ft); err != nil {
		return nil, err
	}
	return m, nil
}

// dtypes resolves the weight and KV cache dtypes and checks the tables
// cover them.
func (m *Model) dtypes(opts Options, ft *frameworkTables) error {
	switch d := strings.ToLower(opts.Dtype); d {
	case "", "auto", "bfloat16", "float16", "half":
		if d == "" || d == "auto" {
			if w := m.shape.WeightDtype; w == "float32" {
				return fmt.Errorf("dtype auto resolves to float32 (%s's torch_dtype): %w for float32 (use --dtype bfloat16)", m.shape.Name, ErrNoTables)
			}
		}
	default:
		return fmt.Errorf("dtype %s: %w for it (bfloat16 and float16 have them)", opts.Dtype, ErrNoTables)
	}
	if q := m.shape.QuantMethod; q != "" && !m.shape.FP8Weights && !m.shape.FP4Weights {
		return fmt.Errorf("%s is quantized with %s: %w for it (FP8 and NVFP4 checkpoints and 16-bit ones have them)", m.shape.Name, q, ErrNoTables)
	}
	switch q := strings.ToLower(opts.Quantization); q {
	case "", "none":
		switch {
		case m.shape.FP4Weights:
			m.wPrec = fp4
		case m.shape.FP8Weights:
			m.wPrec = fp8
		}
	case "fp8":
		m.wPrec = fp8
	case "nvfp4", "modelopt_fp4":
		// vLLM's name for ModelOpt's NVFP4 checkpoints is modelopt_fp4.
		m.wPrec = fp4
	default:
		return fmt.Errorf("quantization %s: %w for it (supported: fp8, nvfp4 / modelopt_fp4)", opts.Quantization, ErrNoTables)
	}
	if m.wPrec == fp8 && ft.GEMM["fp8"] == nil {
		return fmt.Errorf("quantization fp8 on %s: %w for FP8 GEMMs (the GPU has no FP8 tensor cores)", m.src.Name, ErrNoTables)
	}
	if m.wPrec == fp4 && (ft.GEMM["nvfp4"] == nil || m.gpu.FP4FLOPS == 0) {
		return fmt.Errorf("quantization nvfp4 on %s: %w for NVFP4 GEMMs (the GPU has no FP4 tensor cores)", m.gpu.Name, ErrNoTables)
	}
	if ft.GEMM["bfloat16"] == nil {
		return fmt.Errorf("%w for bfloat16 GEMMs on %s", ErrNoTables, m.src.Name)
	}
	switch k := strings.ToLower(opts.KVCacheDtype); k {
	case "", "auto", "bfloat16":
	case "fp8", "fp8_e4m3", "fp8_e5m2":
		m.fp8KV = true
	default:
		return fmt.Errorf("kv cache dtype %s: %w for it (auto, bfloat16, fp8, fp8_e4m3, fp8_e5m2)", opts.KVCacheDtype, ErrNoTables)
	}
	return nil
}

// build evaluates the tables for the model's shapes.
func (m *Model) build(ft *frameworkTables) error {
	s, tp := m.shape, m.tp
	g := ft.GEMM[m.wPrec.table()]
	gemm := func(n, k int) curve { return gemmCurve(g, m.src, m.gpu, m.wPrec, max(n, 1), max(k, 1)) }
	h := s.Hidden
	heads := s.Heads / tp
	kvHeads := max(1, s.KVHeads/tp)

	if s.IsMLA() {
		a := s.MLA
		// The low-rank down projections are replicated on every rank; the
		// up projections and the output are split by heads.
		if a.QLoRARank > 0 {
			m.mlaQA = gemm(a.QLoRARank, h)
			m.mlaQB = gemm(heads*(a.QKNopeDim+a.QKRopeDim), a.QLoRARank)
		} else {
			m.mlaQB = gemm(heads*(a.QKNopeDim+a.QKRopeDim), h)
		}
		m.mlaKVA = gemm(a.KVLoRARank+a.QKRopeDim, h)
		m.mlaKVB = gemm(heads*(a.QKNopeDim+a.VHeadDim), a.KVLoRARank)
		m.o = gemm(h, heads*a.VHeadDim)
		m.oN, m.oK = h, heads*a.VHeadDim
	} else {
		m.qkv = gemm((heads+2*kvHeads)*s.HeadDim, h)
		m.o = gemm(h, heads*s.HeadDim)
		m.oN, m.oK = h, heads*s.HeadDim
	}
	m.moeLayers = s.MoELayers()
	m.denseLayers = s.Layers - m.moeLayers
	if m.denseLayers > 0 {
		m.gateUp = gemm(2*s.Intermediate/tp, h)
		m.down = gemm(h, s.Intermediate/tp)
	}
	if m.moeLayers > 0 {
		e := s.MoE
		// --quantization fp8 on a 16-bit checkpoint quantizes per tensor;
		// block-scaled FP8 checkpoints run the block-scaled kernels.
		dts := []string{"bfloat16"}
		switch {
		case m.wPrec == fp4:
			dts = []string{"nvfp4"}
		case m.wPrec == fp8 && s.FP8Block:
			dts = []string{"fp8_block", "fp8"}
		case m.wPrec == fp8:
			dts = []string{"fp8", "fp8_block"}
		}
		// aiconfigurator's default routing: a power law, alpha 1.01 for
		// DeepSeek and 1.2 for the other MoE models (sdk/models/deepseek.py
		// and moe.py, _power_law_alpha).
		dists := []string{"power_law_1.2", "power_law_1.01"}
		if s.Family == modelshape.FamilyDeepSeekV3 {
			dists = []string{"power_law_1.01", "power_law_1.2"}
		}
		m.moe, m.moeMeasured = moeCurve(ft.MoE, dists, dts, h, e.Intermediate, e.TopK, e.Experts, tp)
		if m.moeMeasured && m.src.Name != m.gpu.Name {
			f := m.src.MemBW / m.gpu.MemBW
			m.moe = scaleCurve(m.moe, func(float64) float64 { return f })
		}
		if !m.moeMeasured {
			m.notes = append(m.notes, fmt.Sprintf("no measured fused-MoE kernel for %d experts × %d wide, top-%d, TP %d: experts priced as GEMMs and weight streaming",
				e.Experts, e.Intermediate, e.TopK, tp))
		}
		m.moeGateUp = gemm(2*e.Intermediate/tp, h)
		m.moeDown = gemm(h, e.Intermediate/tp)
		if e.SharedIntermediate > 0 {
			m.sharedUp = gemm(2*e.SharedIntermediate/tp, h)
			m.sharedDown = gemm(h, e.SharedIntermediate/tp)
		}
		m.router = gemmCurve(ft.GEMM["bfloat16"], m.src, m.gpu, bf16, e.Experts, h)
	}
	m.lmHead = gemmCurve(ft.GEMM["bfloat16"], m.src, m.gpu, bf16, s.Vocab/tp, h)
	m.loraIn = gemmCurve(ft.GEMM["bfloat16"], m.src, m.gpu, bf16, m.loraRank, h)
	m.loraOut = gemmCurve(ft.GEMM["bfloat16"], m.src, m.gpu, bf16, h, m.loraRank)
	if tp > 1 && m.interconnect == InterconnectPCIe {
		c, err := pcieAllReduceCurve(m.gpu, tp)
		if err != nil {
			return err
		}
		m.ar = c
	} else if tp > 1 {
		if ft.AllReduce == nil {
			return fmt.Errorf("%w for all-reduce on %s", ErrNoTables, m.src.Name)
		}
		m.ar = arCurve(ft.AllReduce, tp)
		if m.src.Name != m.gpu.Name {
			f := m.src.LinkBW / m.gpu.LinkBW
			m.ar = scaleCurve(m.ar, func(float64) float64 { return f })
		}
	}

	// Attention. MLA runs as multi-head attention over 192-wide heads for
	// prompts and, with its weights absorbed, as multi-query attention
	// over the 576-wide latent for decodes (docs/hardware.md).
	ctxShape := attnShape{heads: heads, kvHeads: kvHeads, headDim: s.HeadDim, fp8KV: m.fp8KV}
	genShape := ctxShape
	if s.IsMLA() {
		ctxShape = attnShape{heads: heads, kvHeads: heads, headDim: s.MLA.QKNopeDim + s.MLA.QKRopeDim, fp8KV: m.fp8KV}
		genShape = attnShape{heads: heads, kvHeads: 1, headDim: s.MLA.KVLoRARank + s.MLA.QKRopeDim, fp8KV: m.fp8KV}
	}
	cg, cs := pickAttn(ft.Context, ctxShape)
	gg, gs := pickAttn(ft.Gen, genShape)
	if cg == nil || gg == nil {
		return fmt.Errorf("%w for attention on %s", ErrNoTables, m.src.Name)
	}
	if m.fp8KV && (gg.KVDtype != "fp8") {
		m.notes = append(m.notes, "no fp8 KV-cache attention tables: bfloat16 ones used")
	}
	if m.src.Name != m.gpu.Name {
		cs *= m.src.BF16FLOPS / m.gpu.BF16FLOPS
		gs *= m.src.MemBW / m.gpu.MemBW
	}
	m.encGEMM, m.encAttn = ft.GEMM["bfloat16"], ft.Context
	m.ctx = attnTable(cg, cs, 2)
	m.gen = attnTable(gg, gs, 1)
	m.genKVMsPerToken = 1e3 * float64(m.KVBytesPerToken()) / float64(s.Layers) / m.gpu.MemBW
	m.slidingLayers = s.SlidingLayers
	m.chunkedLayers = s.ChunkedLayers
	m.globalLayers = s.Layers - s.SlidingLayers - s.ChunkedLayers
	m.window = float64(s.SlidingWindow)
	m.chunk = float64(s.AttentionChunk)

	// Element-wise kernels: two fused residual-add + RMSNorm (read x and
	// the residual, write both: 4 × hidden), RoPE on q and k (read and
	// write), and the SiLU·mul of the MLP (read 2 × width, write 1).
	// The MLP's width is the layers' mean: dense layers Intermediate
	// wide, MoE layers top-k experts plus the shared ones.
	width := s.Intermediate / tp
	if m.moeLayers > 0 {
		moeWidth := (s.MoE.TopK*s.MoE.Intermediate + s.MoE.SharedIntermediate) / tp
		width = (m.denseLayers*width + m.moeLayers*moeWidth) / s.Layers
	}
	m.ewBytesPerToken = 2 * (2*4*float64(h) + 2*float64((heads+kvHeads)*s.HeadDim) + 3*float64(width))
	m.ewKernels = 4
	return nil
}

// Notes are the startup remarks about the model: a GPU without tables, a
// kernel without a measurement.
func (m *Model) Notes() []string { return append([]string(nil), m.notes...) }

// Framework is the engine whose kernel tables are used.
func (m *Model) Framework() string { return m.framework }

// GPU is the model's GPU.
func (m *Model) GPU() GPU { return m.gpu }

// PassMs prices one pass (engine.PassTimer).
func (m *Model) PassMs(pc *engine.PassContents) float64 {
	T := float64(pc.Tokens())
	if T <= 0 {
		return 0
	}
	s := m.shape
	var lin float64
	if s.IsMLA() {
		lin = m.mlaQA.at(T) + m.mlaQB.at(T) + m.mlaKVA.at(T) + m.o.at(T)
		// The KV up projection runs for prompt tokens only; decodes use
		// the absorbed form.
		lin += m.mlaKVB.at(T - float64(pc.Decodes+pc.DraftTokens))
	} else {
		lin = m.qkv.at(T) + m.o.at(T)
	}
	ew := max(memFloorMs, 1e3*T*m.ewBytesPerToken/(memEff*m.gpu.MemBW)/m.ewKernels) * m.ewKernels
	var ar float64
	if m.tp > 1 {
		ar = 2 * m.ar.at(T*float64(s.Hidden))
	}
	perLayer := lin + ew + ar
	total := float64(m.layers) * perLayer
	if m.denseLayers > 0 {
		total += float64(m.denseLayers) * (m.gateUp.at(T) + m.down.at(T))
	}
	if m.moeLayers > 0 {
		total += float64(m.moeLayers) * m.moeMs(T)
	}

	// Attention: prompt chunks as one batched causal kernel of equal
	// work, decodes at their mean context.
	var glob, slide, chunked float64
	if n := len(pc.Prefills); n > 0 {
		var wg, ws, wc float64
		for _, p := range pc.Prefills {
			q, c := float64(p.NewTokens), float64(p.CachedTokens)
			span := c + q/2
			wg += q * span
			if m.window > 0 {
				ws += q * min(span, m.window)
			}
			if m.chunk > 0 {
				wc += chunkWork(c+q, m.chunk) - chunkWork(c, m.chunk)
			}
		}
		nb := float64(n)
		glob += m.ctx.at(nb, math.Sqrt(2*wg/nb))
		if m.slidingLayers > 0 {
			slide += m.ctx.at(nb, math.Sqrt(2*ws/nb))
		}
		if m.chunkedLayers > 0 {
			chunked += m.ctx.at(nb, math.Sqrt(2*wc/nb))
		}
	}
	if pc.Decodes > 0 {
		b := float64(pc.Decodes)
		avg := float64(pc.DecodeCtxSum) / b
		whole := m.kvFloor(m.gen.at(b, avg), b*avg)
		glob += whole
		if m.slidingLayers > 0 {
			slide += m.kvFloor(m.gen.at(b, min(avg, m.window)), b*min(avg, m.window))
		}
		switch {
		case m.chunkedLayers > 0 && m.chunkedDecodes:
			span := m.chunkSpan(b, float64(pc.DecodeCtxSum), float64(pc.DecodeCtxMax))
			chunked += m.kvFloor(m.gen.at(b, span), b*span)
		case m.chunkedLayers > 0:
			chunked += whole
		}
	}
	total += float64(m.globalLayers)*glob + float64(m.slidingLayers)*slide + float64(m.chunkedLayers)*chunked

	// Logits for the sequences that sample this pass.
	total += m.lmHead.at(float64(pc.Decodes + pc.DraftTokens + len(pc.Prefills)))
	// Embedding, final norm and sampling kernels.
	total += 3 * memFloorMs
	if pc.LoRATokens > 0 {
		a := float64(max(pc.LoRAs, 1))
		per := float64(pc.LoRATokens) / a
		// Shrink and expand around the attention and MLP projections of
		// every layer (four pairs), once per adapter in the pass.
		total += a * 4 * float64(m.layers) * (m.loraIn.at(per) + m.loraOut.at(per))
	}
	return total
}

// chunkWork is the attention work of the first n positions of a sequence
// in a chunked-attention layer: a position attends to the positions of its
// chunk up to itself, so full chunks cost chunk²/2 each and the last one
// r²/2 (the continuous count a global layer's q·(c + q/2) also takes: the
// two agree within the first chunk).
func chunkWork(n, chunk float64) float64 {
	full := math.Floor(n / chunk)
	r := n - full*chunk
	return full*chunk*chunk/2 + r*r/2
}

// chunkSpan is the mean number of positions a chunked-attention layer's
// decode attends to, for b decodes whose contexts sum to sum and reach at
// most maxCtx. A context c sees c − its chunk's start; when every context
// lies in one chunk (the shortest is at least sum − (b−1)·maxCtx) that is
// exact, else the decodes are taken as spread over their chunks: half a
// chunk each.
func (m *Model) chunkSpan(b, sum, maxCtx float64) float64 {
	lo := max(1, sum-(b-1)*maxCtx)
	start := math.Floor((lo-1)/m.chunk) * m.chunk
	if math.Floor((maxCtx-1)/m.chunk)*m.chunk == start {
		return sum/b - start
	}
	return m.chunk / 2
}

// moeMs is one MoE layer's experts for T tokens (shared experts, router
// and routed experts).
func (m *Model) moeMs(T float64) float64 {
	e := m.shape.MoE
	t := m.router.at(T) + m.sharedUp.at(T) + m.sharedDown.at(T)
	if m.moeMeasured {
		return t + m.moe.at(T)
	}
	// Expected experts hit by T tokens choosing top-k of E uniformly.
	E, k := float64(e.Experts), float64(e.TopK)
	active := E * (1 - math.Pow(1-k/E, T))
	weights := active * 3 * float64(m.shape.Hidden) * float64(e.Intermediate) / float64(m.tp) * m.wPrec.bytes()
	stream := 1e3 * weights / (memEff * m.gpu.MemBW)
	compute := m.moeGateUp.at(T*k) + m.moeDown.at(T*k)
	return t + max(stream, compute)
}

// PrefillMs prices a pass of one prompt chunk of newTokens tokens
// (engine.TimingModel; the engine calls PassMs instead).
func (m *Model) PrefillMs(newTokens int) float64 {
	if newTokens <= 0 {
		return 0
	}
	return m.PassMs(&engine.PassContents{Prefills: []engine.PrefillChunk{{NewTokens: newTokens}}})
}

// DecodeMs prices a decode pass of activeKVTokens/avgContext sequences at
// avgContext (engine.TimingModel; the engine calls PassMs instead).
func (m *Model) DecodeMs(activeKVTokens, _, avgContext int) float64 {
	ctx := max(avgContext, 1)
	b := max(activeKVTokens/ctx, 1)
	return m.PassMs(&engine.PassContents{Decodes: b, DecodeCtxSum: b * ctx, DecodeCtxMax: ctx})
}

var (
	_ engine.TimingModel = (*Model)(nil)
	_ engine.PassTimer   = (*Model)(nil)
)

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](mp map[string]V) []string {
	out := make([]string, 0, len(mp))
	for k := range mp {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
