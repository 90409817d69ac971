package schemagen

import (
	"encoding/json"
	"math/big"
	"strings"
)

// number generates an integer or a decimal inside the combined bounds of a
// conjunction, on the grid of its multipleOf. All arithmetic is exact
// (big.Rat) so the printed value is exactly the value checked.
func (g *generator) number(conj []*node, integer bool) (any, error) {
	var lo, hi, step *big.Rat
	loOpen, hiOpen := false, false
	for _, n := range conj {
		// the tightest bounds; at equal values an exclusive one is tighter
		if n.minimum != nil && (lo == nil || n.minimum.Cmp(lo) > 0 || n.minimum.Cmp(lo) == 0 && n.exclusiveMinimum) {
			lo, loOpen = n.minimum, n.exclusiveMinimum
		}
		if n.maximum != nil && (hi == nil || n.maximum.Cmp(hi) < 0 || n.maximum.Cmp(hi) == 0 && n.exclusiveMaximum) {
			hi, hiOpen = n.maximum, n.exclusiveMaximum
		}
		if n.multipleOf != nil && step == nil {
			step = n.multipleOf
		}
	}
	// the grid: multiples of step, of 1 for integers, of 1/100 otherwise
	grid := big.NewRat(1, 100)
	switch {
	case step != nil && integer:
		grid = lcmRat(step, big.NewRat(1, 1))
	case step != nil:
		grid = step
	case integer:
		grid = big.NewRat(1, 1)
	}
	// default range when unbounded: a window of 100 grid steps (of 100 for
	// plain decimals) next to the bound
	window := big.NewRat(100, 1)
	if integer || step != nil {
		window.Mul(grid, window)
	}
	switch {
	case lo == nil && hi == nil:
		lo, hi = new(big.Rat), window
	case lo == nil && hi.Sign() > 0:
		lo = new(big.Rat) // prefer non-negative values, as a model would
	case lo == nil:
		lo = new(big.Rat).Sub(hi, window)
	case hi == nil:
		hi = new(big.Rat).Add(lo, window)
	}
	// first and last grid indexes inside the range
	first := ceilRat(new(big.Rat).Quo(lo, grid))
	if loOpen && new(big.Rat).Mul(new(big.Rat).SetInt(first), grid).Cmp(lo) == 0 {
		first.Add(first, big.NewInt(1))
	}
	last := floorRat(new(big.Rat).Quo(hi, grid))
	if hiOpen && new(big.Rat).Mul(new(big.Rat).SetInt(last), grid).Cmp(hi) == 0 {
		last.Sub(last, big.NewInt(1))
	}
	if first.Cmp(last) > 0 {
		if integer || step != nil {
			return nil, errUnsatisfiable
		}
		// no hundredth fits: the midpoint of two decimals is a decimal
		mid := new(big.Rat).Add(lo, hi)
		mid.Quo(mid, big.NewRat(2, 1))
		return json.Number(decimalString(mid)), nil
	}
	span := new(big.Int).Sub(last, first)
	offset := new(big.Int)
	if span.IsInt64() && span.Int64() < 1<<62 {
		offset.SetInt64(g.rng.Int64N(span.Int64() + 1))
	} else {
		offset.SetInt64(g.rng.Int64N(1 << 62))
	}
	index := new(big.Int).Add(first, offset)
	value := new(big.Rat).Mul(new(big.Rat).SetInt(index), grid)
	return json.Number(decimalString(value)), nil
}

func ceilRat(r *big.Rat) *big.Int {
	q, m := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int))
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	return q
}

func floorRat(r *big.Rat) *big.Int {
	q, _ := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int))
	return q
}

// lcmRat is the least common multiple of two positive rationals (for an
// integer that is also a multiple of step).
func lcmRat(a, b *big.Rat) *big.Rat {
	// lcm(p/q, r/s) = lcm(p·s, r·q) / (q·s)
	ps := new(big.Int).Mul(a.Num(), b.Denom())
	rq := new(big.Int).Mul(b.Num(), a.Denom())
	gcd := new(big.Int).GCD(nil, nil, ps, rq)
	lcm := new(big.Int).Mul(ps, rq)
	lcm.Quo(lcm, gcd)
	return new(big.Rat).SetFrac(lcm, new(big.Int).Mul(a.Denom(), b.Denom()))
}

// decimalString prints r exactly when its decimal expansion ends within 40
// digits (every value the generator makes from decimal inputs does), else
// rounded to 40 digits; integers print without a fraction.
func decimalString(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	for digits := 1; digits <= 40; digits++ {
		scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(digits)), nil)))
		if scaled.IsInt() {
			return trimZeros(r.FloatString(digits))
		}
	}
	return trimZeros(r.FloatString(40))
}

func trimZeros(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	return s
}
