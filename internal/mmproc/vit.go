package mmproc

// vit is a vision (or audio) transformer encoder's shape, enough to count
// its floating-point operations: 2 per multiply-accumulate, over the
// patch embedding, the layers' projections, MLPs and attention, and the
// merger that turns patches into LLM tokens. Norms, activations and
// position embeddings are left out (well under 1% of the total).
type vit struct {
	layers, hidden, inter int
	gated                 bool // a SwiGLU MLP: gate, up and down projections
	// fullLayers attend over the whole item; the rest over a window of
	// window patches (0: all layers are full).
	fullLayers, window int
	patchIn            int // inputs of the patch embedding per patch
	mergeIn, out       int // the merger MLP's input and output widths per token
	headDim            int // the attention heads' width
}

// mlpParams returns the weights of one layer's MLP.
func (v vit) mlpParams() float64 {
	d, m := float64(v.hidden), float64(v.inter)
	if v.gated {
		return 3 * d * m
	}
	return 2 * d * m
}

// params returns the tower's weight count as the FLOP model sees it: the
// patch embedding, every layer's attention projections (4d²) and MLP, and
// the merger MLP; biases and norms are left out. Comparing it with the
// published tower sizes checks the model against data it was not fitted to.
func (v vit) params() float64 {
	d := float64(v.hidden)
	p := float64(v.patchIn)*d + float64(v.layers)*(4*d*d+v.mlpParams())
	if v.mergeIn > 0 {
		in := float64(v.mergeIn)
		p += in*in + in*float64(v.out)
	}
	return p
}

// flops returns the encoder's operations for p patches, merged mergeRatio
// to one token: 2 per weight per patch (per merged token for the merger),
// plus attention.
func (v vit) flops(p, mergeRatio int) float64 {
	P, d := float64(p), float64(v.hidden)
	full := v.fullLayers
	if v.window == 0 {
		full = v.layers
	}
	// QKᵀ and AV: 2 × 2·P·ctx·d per layer.
	attn := float64(full) * 4 * P * P * d
	if rest := v.layers - full; rest > 0 {
		ctx := min(float64(v.window), P)
		attn += float64(rest) * 4 * P * ctx * d
	}
	total := 2*P*(float64(v.patchIn)*d+float64(v.layers)*(4*d*d+v.mlpParams())) + attn
	if mergeRatio > 0 && v.mergeIn > 0 {
		tok := P / float64(mergeRatio)
		in := float64(v.mergeIn)
		total += 2 * tok * (in*in + in*float64(v.out))
	}
	return total
}
