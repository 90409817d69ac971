package hardware

import "github.com/mocker-server/mocker-server/internal/engine"

// EncoderMs prices a multimodal encoder (engine.EncoderTimer) from its
// FLOPs alone, for an item whose tower shape is unknown: the FLOPs split
// over shards GPUs, at the GPU's dense BF16 throughput times the
// efficiency its operator table measures for a GEMM of as many rows as
// the item has tokens (the model's attention output projection). It is
// faster than measured towers (docs/multimodal.md, "Encoder time:
// validation"): EncoderWorkMs prices a known tower.
func (m *Model) EncoderMs(flops float64, tokens, shards int) float64 {
	if flops <= 0 {
		return 0
	}
	shards = max(shards, 1)
	T := float64(max(tokens, 1))
	n, k := m.oN, m.oK
	eff := 1.0
	if measured := m.o.at(T); measured > 0 && n > 0 && k > 0 {
		ideal := 1e3 * 2 * T * float64(n) * float64(k) / m.gpu.flops(m.wPrec)
		eff = min(ideal/measured, 1)
	}
	return 1e3 * flops / float64(shards) / (m.gpu.BF16FLOPS * eff)
}

// encoderEWKernels are a tower layer's element-wise kernels: two layer
// norms, the split of the fused QKV output into heads, two residual adds
// and the MLP's activation.
const encoderEWKernels = 6

// EncoderWorkMs prices one forward of a tower over a pass's items
// (engine.EncoderWorkTimer) operator by operator, as the kernels the tower
// launches; items of one tower run together, as vLLM concatenates them:
//
//   - each GEMM from the BF16 GEMM table at the tower's own widths and all
//     the items' rows (a 1152-wide SigLIP layer runs well below the
//     efficiency of the language model's 3584-wide projections the FLOP
//     price assumes); the tower is priced in BF16 whatever the language
//     model's quantization (quantized checkpoints commonly keep their
//     vision tower in 16 bits; an FP8 tower is priced as a BF16 one);
//   - the attention from the context-attention table at the tower's head
//     width and count, for the items' SeqLen-long sequences (Window-long in
//     windowed layers), doubled: the table times causal prefill, a tower
//     attends both ways over the whole square;
//   - the element-wise kernels from their bytes at the memory bandwidth
//     the table-free operators use (aiconfigurator's 0.8 scaling and 3 µs
//     floor per kernel);
//   - in weights mode (shards > 1) the projections and MLP split across
//     the GPUs, with two all-reduces of the layer's activations.
//
// The patch embedding, merger and projector GEMMs run unsplit.
// aiconfigurator's own ViT model (sdk/models/vit_ops.py) builds the same
// operators per layer and keeps the tower in BF16 too.
func (m *Model) EncoderWorkMs(ws []*engine.EncoderWork, shards int) float64 {
	if m.encGEMM == nil {
		return 0
	}
	type tower struct {
		layers, hidden, mlp, headDim, window, full int
		gated                                      bool
	}
	var order []tower
	groups := map[tower][]*engine.EncoderWork{}
	for _, w := range ws {
		if w == nil || w.Rows <= 0 || w.Layers <= 0 || w.Hidden <= 0 {
			continue
		}
		k := tower{w.Layers, w.Hidden, w.MLP, w.HeadDim, w.Window, w.FullLayers, w.GatedMLP}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], w)
	}
	ms := 0.0
	for _, k := range order {
		ms += m.towerMs(groups[k], max(shards, 1))
	}
	return ms
}

// towerMs is one forward of items of the same tower.
func (m *Model) towerMs(ws []*engine.EncoderWork, s int) float64 {
	gemm := func(rows, n, k int) float64 {
		if rows <= 0 || n <= 0 || k <= 0 {
			return 0
		}
		c := gemmCurve(m.encGEMM, m.src, m.gpu, bf16, n, k)
		return max(c.at(float64(rows)), memFloorMs)
	}
	w0 := ws[0]
	R, d, f := 0, w0.Hidden, w0.MLP
	seqRows := map[int]int{} // attention sequence length → rows
	var seqs []int
	extra := map[[2]int]int{} // other GEMMs' N, K → rows
	var extras [][2]int
	for _, w := range ws {
		R += w.Rows
		if _, ok := seqRows[w.SeqLen]; !ok {
			seqs = append(seqs, w.SeqLen)
		}
		seqRows[w.SeqLen] += w.Rows
		for _, g := range w.GEMMs {
			nk := [2]int{g[1], g[2]}
			if _, ok := extra[nk]; !ok {
				extras = append(extras, nk)
			}
			extra[nk] += g[0]
		}
	}
	layer := gemm(R, max(3*d/s, 1), d) + gemm(R, d, max(d/s, 1))
	act := 2.0 // the activation reads and writes the MLP's width
	if w0.GatedMLP {
		layer += gemm(R, max(2*f/s, 1), d) + gemm(R, d, max(f/s, 1))
		act = 3
	} else {
		layer += gemm(R, max(f/s, 1), d) + gemm(R, d, max(f/s, 1))
	}
	// Element-wise bytes per row (BF16): two norms (read, write: 2d each),
	// the QKV split (3d each way), two residual adds (read two, write one).
	bytes := 2 * (4*float64(d) + 6*float64(d)/float64(s) + 6*float64(d) + act*float64(f)/float64(s))
	layer += max(memFloorMs, 1e3*float64(R)*bytes/(memEff*m.gpu.MemBW)/encoderEWKernels) * encoderEWKernels
	if s > 1 && m.ar.xs != nil {
		layer += 2 * m.ar.at(float64(R*d))
	}
	heads := max(d/max(w0.HeadDim, 1)/s, 1)
	full, windowed := w0.Layers, 0
	if w0.Window > 0 {
		full = min(w0.FullLayers, w0.Layers)
		windowed = w0.Layers - full
	}
	ms := float64(w0.Layers) * layer
	for _, seq := range seqs {
		rows := seqRows[seq]
		ms += float64(full)*m.towerAttnMs(heads, w0.HeadDim, rows, seq) +
			float64(windowed)*m.towerAttnMs(heads, w0.HeadDim, rows, min(w0.Window, seq))
	}
	for _, nk := range extras {
		ms += gemm(extra[nk], nk[0], nk[1])
	}
	return ms
}

// towerAttnMs is one layer's bidirectional attention over rows positions
// cut into seq-long sequences, heads of headDim on one GPU: twice the
// measured causal prefill of as many sequences.
func (m *Model) towerAttnMs(heads, headDim, rows, seq int) float64 {
	if seq <= 0 || rows <= 0 {
		return 0
	}
	g, scale := pickAttn(m.encAttn, attnShape{heads: heads, kvHeads: heads, headDim: max(headDim, 1)})
	if g == nil {
		return 0
	}
	if m.src.Name != m.gpu.Name {
		scale *= m.src.BF16FLOPS / m.gpu.BF16FLOPS
	}
	t := attnTable(g, scale, 2)
	return 2 * max(t.at(float64(rows)/float64(seq), float64(seq)), memFloorMs)
}
