package hardware

import (
	"math"
	"slices"
)

// Operator latencies from the measured tables. Each builder evaluates the
// tables once, at model-build time, into a curve or grid for the model's
// exact shapes, so a pass only interpolates.

// memEff and memFloorMs are aiconfigurator's empirical memory corrections
// (systems/<gpu>.yaml: mem_bw_empirical_scaling_factor 0.8,
// mem_empirical_constant_latency 3 µs), used for the operators the tables
// do not cover (element-wise kernels, MoE weights without a table).
const (
	memEff     = 0.8
	memFloorMs = 0.003
)

// roofGEMM is a GEMM's roofline time in ms on gpu: compute or memory,
// whichever is longer. Weights take the precision's bytes, activations 2.
func roofGEMM(gpu GPU, p precision, m, n, k float64) float64 {
	compute := 2 * m * n * k / gpu.flops(p)
	return max(1e3*compute, streamGEMM(gpu, p, m, n, k))
}

// streamGEMM is the time in ms to move a GEMM's weights and activations
// through HBM once at the datasheet bandwidth: the floor of a GEMM in a
// forward pass, where each layer's weights come from HBM because the
// model's other layers have evicted them from L2 since the last pass.
func streamGEMM(gpu GPU, p precision, m, n, k float64) float64 {
	return 1e3 * ((m*k+m*n)*2 + n*k*p.bytes()) / gpu.MemBW
}

// gemmCurve is the latency of an m × n × k GEMM over the table's m axis
// for fixed n, k. The table's efficiency (roofline ÷ measured) is
// interpolated in log n and log k and clamped at the grid's edges; target
// is the GPU the curve is for (src itself, or a GPU borrowing src's
// efficiencies).
//
// No GEMM is priced below streamGEMM. aiconfigurator's GEMM collectors at
// the tables' commit (collector/<engine>/collect_gemm.py,
// outside_loop_count) time at most five or six copies of a weight back to
// back (TensorRT-LLM's: ⌈L2 ÷ weight bytes⌉, at most five; vLLM's: six):
// five copies of a weight under a fifth of L2 fit in it, and a working set
// that only just exceeds L2 still mostly hits it. On L40S (96 MB of L2
// before 864 GB/s of GDDR6) 4–19 % of the grid points, by engine and
// dtype, are timed faster than the datasheet bandwidth can deliver their
// operands, by up to 3.5×; on the HBM GPUs only three or four n = 128
// shapes at m ≥ 4096 are, by under 20 %. A forward pass reads each weight
// once, after the other layers have passed through L2.
func gemmCurve(g *gemmGrid, src, target GPU, p precision, n, k int) curve {
	c := curve{xs: toFloats(g.M), ys: make([]float64, len(g.M))}
	j, u := bracketLog(g.N, float64(n))
	l, v := bracketLog(g.K, float64(k))
	for i, m := range g.M {
		fm, fn, fk := float64(m), float64(n), float64(k)
		c.ys[i] = max(roofGEMM(target, p, fm, fn, fk)/gemmEff(g, src, p, i, j, u, l, v), streamGEMM(target, p, fm, fn, fk))
	}
	return c
}

// gemmEff is the efficiency at row i between columns (j, j+1) × (l, l+1),
// averaging the measured corners by their bilinear weights; a corner not
// measured drops out, and with none measured the nearest measured cell of
// the row is used.
func gemmEff(g *gemmGrid, src GPU, p precision, i, j int, u float64, l int, v float64) float64 {
	m := float64(g.M[i])
	var sum, wsum float64
	for dj := 0; dj < 2; dj++ {
		for dl := 0; dl < 2; dl++ {
			jj, ll := min(j+dj, len(g.N)-1), min(l+dl, len(g.K)-1)
			w := (1 - u + float64(dj)*(2*u-1)) * (1 - v + float64(dl)*(2*v-1))
			lat := g.at(i, jj, ll)
			if w <= 0 || lat <= 0 {
				continue
			}
			sum += w * roofGEMM(src, p, m, float64(g.N[jj]), float64(g.K[ll])) / lat
			wsum += w
		}
	}
	if wsum > 0 {
		return sum / wsum
	}
	best, bestD := 0.0, math.Inf(1)
	for jj := range g.N {
		for ll := range g.K {
			lat := g.at(i, jj, ll)
			if lat <= 0 {
				continue
			}
			d := math.Abs(float64(jj-j)) + math.Abs(float64(ll-l))
			if d < bestD {
				best, bestD = roofGEMM(src, p, m, float64(g.N[jj]), float64(g.K[ll]))/lat, d
			}
		}
	}
	if best <= 0 {
		return 0.5 // an empty row: cannot happen with the shipped tables
	}
	return best
}

// attnShape is one GPU's share of a layer's attention.
type attnShape struct {
	heads, kvHeads, headDim int
	fp8KV                   bool
}

// pickAttn chooses the measured head configuration closest to want: the
// same head_dim when measured (else the nearest), the same KV dtype when
// measured, then the nearest GQA ratio and head count. It returns the grid
// and the factor its latencies are scaled by (attention work is linear in
// the head count and head_dim).
func pickAttn(grids []*attnGrid, want attnShape) (*attnGrid, float64) {
	kvd := "bfloat16"
	if want.fp8KV {
		kvd = "fp8"
	}
	var best *attnGrid
	bestScore := math.Inf(1)
	for _, g := range grids {
		score := 100 * math.Abs(math.Log(float64(g.HeadDim)/float64(want.headDim)))
		if g.KVDtype != kvd {
			score += 50
		}
		ratio := float64(want.heads) / float64(want.kvHeads)
		gr := float64(g.Heads) / float64(g.KVHeads)
		score += 10*math.Abs(math.Log(ratio/gr)) + math.Abs(math.Log(float64(want.heads)/float64(g.Heads)))
		if score < bestScore {
			best, bestScore = g, score
		}
	}
	if best == nil {
		return nil, 0
	}
	scale := float64(want.heads) / float64(best.Heads) * float64(want.headDim) / float64(best.HeadDim)
	return best, scale
}

// attnTable turns a measured grid into a dense grid2 (missing cells filled
// from the nearest smaller measured batch, scaled linearly, else from the
// nearest shorter measured length, scaled by lenPow) multiplied by scale.
func attnTable(g *attnGrid, scale, lenPow float64) grid2 {
	out := grid2{bs: toFloats(g.Batch), ls: toFloats(g.Len), ms: make([]float64, len(g.Ms)), lenPow: lenPow}
	nl := len(g.Len)
	for i := range g.Batch {
		for j := range g.Len {
			v := float64(g.Ms[i*nl+j])
			if v <= 0 {
				for ii := i - 1; ii >= 0 && v <= 0; ii-- {
					if w := float64(g.Ms[ii*nl+j]); w > 0 {
						v = w * float64(g.Batch[i]) / float64(g.Batch[ii])
					}
				}
				for jj := j - 1; jj >= 0 && v <= 0; jj-- {
					if w := out.ms[i*nl+jj]; w > 0 {
						v = w * math.Pow(float64(g.Len[j])/float64(g.Len[jj]), lenPow)
					}
				}
			}
			out.ms[i*nl+j] = v * scale
		}
	}
	return out
}

// arCurve is the all-reduce latency over message size (bfloat16 elements)
// among tp GPUs. A GPU count not measured uses the largest measured one
// below it (else the smallest), scaled by the ring all-reduce's traffic
// factor 2(n−1)/n.
func arCurve(a *arGrid, tp int) curve {
	row, g := 0, a.GPUs[0]
	for i, n := range a.GPUs {
		if n <= tp {
			row, g = i, n
		}
	}
	f := (float64(tp-1) / float64(tp)) / (float64(g-1) / float64(g))
	c := curve{xs: toFloats(a.Elems), ys: make([]float64, len(a.Elems))}
	for j := range a.Elems {
		c.ys[j] = float64(a.Ms[row*len(a.Elems)+j]) * f
	}
	fillCurve(&c)
	return c
}

// fillCurve replaces unmeasured (0) points by their nearest measured
// neighbour below (else above).
func fillCurve(c *curve) {
	for i := range c.ys {
		if c.ys[i] > 0 {
			continue
		}
		for k := i - 1; k >= 0 && c.ys[i] <= 0; k-- {
			c.ys[i] = c.ys[k]
		}
		for k := i + 1; k < len(c.ys) && c.ys[i] <= 0; k++ {
			c.ys[i] = c.ys[k]
		}
	}
}

// moeCurve finds the measured fused-MoE series for the shape: the first
// dtype with a series, preferring the routing distributions in order and
// an exact TP. A TP not measured for that dtype takes the nearest measured
// one (the largest below, else the smallest above) scaled by its ratio: each
// GPU's share of the experts' width, and so of their work and weight
// bytes, is inversely proportional to TP. ok is false when nothing matches.
func moeCurve(series []*moeSeries, dists, dtypes []string, hidden, inter, topk, experts, tp int) (curve, bool) {
	for _, dt := range dtypes {
		var best *moeSeries
		for _, dist := range dists {
			for _, s := range series {
				if s.Distribution != dist || s.Dtype != dt || s.Hidden != hidden || s.Inter != inter || s.TopK != topk || s.Experts != experts {
					continue
				}
				if best == nil || closerTP(s.TP, best.TP, tp) {
					best = s
				}
			}
			if best != nil && best.TP == tp {
				break
			}
		}
		if best == nil {
			continue
		}
		f := float64(best.TP) / float64(tp)
		c := curve{xs: toFloats(best.Tokens), ys: make([]float64, len(best.Ms))}
		for i, v := range best.Ms {
			c.ys[i] = float64(v) * f
		}
		fillCurve(&c)
		return c, true
	}
	return curve{}, false
}

// closerTP reports whether measured TP a is a better stand-in for want
// than b: exact first, then the largest below, then the smallest above.
func closerTP(a, b, want int) bool {
	switch {
	case a == want || b == want:
		return a == want && b != want
	case a < want && b < want:
		return a > b
	case a < want || b < want:
		return a < want
	default:
		return a < b
	}
}

// scaleCurve multiplies c by f pointwise (for a GPU that borrows another's
// measurements).
func scaleCurve(c curve, f func(x float64) float64) curve {
	out := curve{xs: slices.Clone(c.xs), ys: slices.Clone(c.ys)}
	for i, x := range out.xs {
		out.ys[i] *= f(x)
	}
	return out
}

// kvFloor is a decode attention's price: the table's ms, but never less
// than reading the tokens' K and V from memory at the datasheet bandwidth.
// In a pass each layer reads its own KV cache once, after the other layers
// have passed through L2. aiconfigurator's L40S tables time 10–16 % of
// their generation-attention cells faster than that (by up to 4.7×: the KV
// of a small batch stays in the 96 MB L2 between repetitions), and A100's
// TensorRT-LLM table 9 % (by up to 1.7×, at the longest contexts); the
// Hopper and Blackwell tables none.
func (m *Model) kvFloor(ms, tokens float64) float64 {
	return max(ms, tokens*m.genKVMsPerToken)
}
