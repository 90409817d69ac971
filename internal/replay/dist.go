package replay

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
)

// DistKind names a length distribution.
type DistKind string

// Length distributions.
const (
	DistFixed     DistKind = "fixed"
	DistUniform   DistKind = "uniform"
	DistNormal    DistKind = "normal"
	DistLognormal DistKind = "lognormal"
	DistEmpirical DistKind = "empirical"
)

// Dist is a distribution of token counts. Samples are rounded and clamped to
// at least 1.
type Dist struct {
	Kind DistKind
	// A and B are the parameters: fixed N; uniform [A, B]; normal and
	// lognormal mean A and standard deviation B of the lengths themselves.
	A, B float64
	// Values are the lengths an empirical distribution draws from uniformly.
	Values []int
}

// ParseDist parses a distribution: "N" or "fixed:N", "uniform:MIN:MAX",
// "normal:MEAN:STD", "lognormal:MEAN:STD" or "empirical:FILE" (one length
// per line).
func ParseDist(spec string) (Dist, error) {
	kind, rest, _ := strings.Cut(spec, ":")
	if n, err := strconv.Atoi(spec); err == nil {
		kind, rest = string(DistFixed), strconv.Itoa(n)
	}
	params := func(want int) ([]float64, error) {
		parts := strings.Split(rest, ":")
		if rest == "" || len(parts) != want {
			return nil, fmt.Errorf("length distribution %q: %s takes %d number(s)", spec, kind, want)
		}
		out := make([]float64, want)
		for i, p := range parts {
			f, err := strconv.ParseFloat(p, 64)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
				return nil, fmt.Errorf("length distribution %q: %q is not a number ≥ 0", spec, p)
			}
			out[i] = f
		}
		return out, nil
	}
	d := Dist{Kind: DistKind(kind)}
	switch d.Kind {
	case DistFixed:
		p, err := params(1)
		if err != nil {
			return d, err
		}
		if p[0] < 1 {
			return d, fmt.Errorf("length distribution %q: a fixed length must be ≥ 1", spec)
		}
		d.A = p[0]
	case DistUniform, DistNormal, DistLognormal:
		p, err := params(2)
		if err != nil {
			return d, err
		}
		d.A, d.B = p[0], p[1]
		if d.Kind == DistUniform && d.A > d.B {
			return d, fmt.Errorf("length distribution %q: min > max", spec)
		}
		if d.Kind == DistLognormal && d.A <= 0 {
			return d, fmt.Errorf("length distribution %q: a lognormal mean must be > 0", spec)
		}
	case DistEmpirical:
		if rest == "" {
			return d, fmt.Errorf("length distribution %q: empirical needs a file", spec)
		}
		vals, err := readLengths(rest)
		if err != nil {
			return d, fmt.Errorf("length distribution %q: %w", spec, err)
		}
		d.Values = vals
	default:
		return d, fmt.Errorf("length distribution %q: unknown kind %q (want a number, fixed, uniform, normal, lognormal or empirical)", spec, kind)
	}
	return d, nil
}

// readLengths reads one positive integer per line (blank lines and lines
// starting with # are skipped).
func readLengths(path string) ([]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseLengths(f, path)
}

func parseLengths(r io.Reader, name string) ([]int, error) {
	var vals []int
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		n, err := strconv.Atoi(t)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s:%d: %q is not a length ≥ 1", name, line, t)
		}
		vals = append(vals, n)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(vals) == 0 {
		return nil, errors.New(name + ": no lengths")
	}
	return vals, nil
}

// Sample draws one length.
func (d Dist) Sample(rng *rand.Rand) int {
	var x float64
	switch d.Kind {
	case DistFixed:
		x = d.A
	case DistUniform:
		x = d.A + rng.Float64()*(d.B-d.A)
	case DistNormal:
		x = d.A + rng.NormFloat64()*d.B
	case DistLognormal:
		// Parameters of the underlying normal from the lengths' mean and std.
		s2 := math.Log1p(d.B * d.B / (d.A * d.A))
		x = math.Exp(math.Log(d.A) - s2/2 + rng.NormFloat64()*math.Sqrt(s2))
	case DistEmpirical:
		return d.Values[rng.IntN(len(d.Values))]
	}
	return max(1, int(math.Round(x)))
}

// String returns the distribution in ParseDist's syntax (an empirical
// distribution shows its size, not its file).
func (d Dist) String() string {
	g := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	switch d.Kind {
	case DistFixed:
		return g(d.A)
	case DistEmpirical:
		return fmt.Sprintf("empirical(%d values)", len(d.Values))
	}
	return string(d.Kind) + ":" + g(d.A) + ":" + g(d.B)
}
