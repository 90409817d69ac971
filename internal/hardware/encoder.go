package hardware

// EncoderMs prices a multimodal encoder (engine.EncoderTimer): the item's
// FLOPs (mmproc.EncoderFLOPs) split over shards GPUs, at the GPU's dense
// BF16 throughput times the efficiency its operator table measures for a
// GEMM of as many rows (the model's attention output projection, whose
// curve the pass model already holds): a vision tower is a stack of such
// GEMMs over its patches, and the tables have no tower of their own.
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
