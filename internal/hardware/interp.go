package hardware

import (
	"math"
	"sort"
)

// curve is a latency (ms) over a sorted axis of token counts, linear
// between points. Below the first point it scales down in proportion (a
// GEMM of 0 tokens costs nothing), above the last in proportion to x (the
// operator is throughput-bound there).
type curve struct {
	xs []float64
	ys []float64
}

// at interpolates c at x. It allocates nothing.
func (c *curve) at(x float64) float64 {
	n := len(c.xs)
	if n == 0 || x <= 0 {
		return 0
	}
	if x >= c.xs[n-1] {
		return c.ys[n-1] * x / c.xs[n-1]
	}
	if x <= c.xs[0] {
		return c.ys[0]
	}
	// Axes are short (≤ 32 points): a linear scan beats sort.Search's
	// closure call.
	i := 1
	for c.xs[i] < x {
		i++
	}
	x0, x1 := c.xs[i-1], c.xs[i]
	t := (x - x0) / (x1 - x0)
	return c.ys[i-1]*(1-t) + c.ys[i]*t
}

// grid2 is a latency over batch × length, bilinear inside, extrapolated
// outside: linear in batch, and in length by lenPow (1 for generation
// attention, whose work grows linearly with the KV length; 2 for context
// attention's quadratic work).
type grid2 struct {
	bs, ls []float64
	ms     []float64 // len(bs) × len(ls)
	lenPow float64
}

func (g *grid2) cell(i, j int) float64 { return g.ms[i*len(g.ls)+j] }

// at returns the latency for batch b and length l (both ≥ 1).
func (g *grid2) at(b, l float64) float64 {
	if len(g.bs) == 0 || b <= 0 || l <= 0 {
		return 0
	}
	scale := 1.0
	if last := g.bs[len(g.bs)-1]; b > last {
		scale *= b / last
		b = last
	}
	if last := g.ls[len(g.ls)-1]; l > last {
		scale *= math.Pow(l/last, g.lenPow)
		l = last
	}
	b = max(b, g.bs[0])
	l = max(l, g.ls[0])
	i, t := bracketLinear(g.bs, b)
	j, u := bracketLinear(g.ls, l)
	if len(g.bs) == 1 {
		i, t = 0, 0
	}
	if len(g.ls) == 1 {
		j, u = 0, 0
	}
	i1, j1 := min(i+1, len(g.bs)-1), min(j+1, len(g.ls)-1)
	lo := g.cell(i, j)*(1-u) + g.cell(i, j1)*u
	hi := g.cell(i1, j)*(1-u) + g.cell(i1, j1)*u
	return scale * (lo*(1-t) + hi*t)
}

// bracketLinear returns i and t with xs[i] ≤ x ≤ xs[i+1], x = xs[i] +
// t·(xs[i+1] − xs[i]); x must lie within the axis.
func bracketLinear(xs []float64, x float64) (int, float64) {
	n := len(xs)
	i := 0
	for i < n-2 && xs[i+1] < x {
		i++
	}
	if n < 2 || xs[i+1] == xs[i] {
		return i, 0
	}
	return i, (x - xs[i]) / (xs[i+1] - xs[i])
}

// bracketLog is bracketLinear on log(x), clamped to the axis: efficiencies
// saturate outside the measured shapes.
func bracketLog(xs []int, x float64) (int, float64) {
	n := len(xs)
	if n == 1 || x <= float64(xs[0]) {
		return 0, 0
	}
	if x >= float64(xs[n-1]) {
		return n - 2, 1
	}
	i := sort.Search(n, func(k int) bool { return float64(xs[k]) > x }) - 1
	i = min(max(i, 0), n-2)
	lx, l0, l1 := math.Log(x), math.Log(float64(xs[i])), math.Log(float64(xs[i+1]))
	return i, (lx - l0) / (l1 - l0)
}

func toFloats(xs []int) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(x)
	}
	return out
}
