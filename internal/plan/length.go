package plan

import "math"

// LenMode is the output length mode (--output-len-mode): how long an
// answer is when nothing but its length limit could stop it.
type LenMode string

// Output length modes.
const (
	// ModeNatural (the default) gives every answer a seeded natural
	// length from a log-normal distribution with median
	// --natural-output-len and shape --natural-output-len-sigma, like the
	// answers of a real assistant: short ones common, a long tail. The
	// answer ends with EOS there (finish "stop") unless its limit
	// (max_tokens, max_output_tokens, max_new_tokens) comes first
	// (finish "length").
	ModeNatural LenMode = "natural"
	// ModeMax generates exactly the limit whenever the request sets one
	// (or is a completion, whose limit defaults to 16), for load tests
	// that need exact lengths; a chat request without a limit still ends
	// at its natural length rather than running to the end of the context.
	ModeMax LenMode = "max"
	// ModeRandom is ModeNatural with a uniform natural length over
	// [1, 2 × --natural-output-len] (mean --natural-output-len).
	ModeRandom LenMode = "random"
)

// DefaultNaturalOutputLen is the default median natural answer length
// (--natural-output-len).
const DefaultNaturalOutputLen = 128

// DefaultNaturalSigma is the default log-normal shape σ of natural answer
// lengths (docs/http-api.md, "Output lengths", says where it comes from).
const DefaultNaturalSigma = 1.0

// lengthDraw is the seeded draw that fixes choice c's natural length,
// r0 = mix64(s + (c·2³²)·φ): position draws use s + (c·2³² + pos + 1)·φ,
// so it never coincides with one of them.
func lengthDraw(s uint64, choice int) uint64 {
	return Mix64(s + (uint64(choice)<<32)*Phi)
}

// NaturalLen returns the natural length of choice c of the request with
// seed s under mode: the number of tokens the answer has when it ends by
// itself, its EOS included, before any limit caps it. It is at least 1.
// ModeNatural and ModeMax draw it from the log-normal distribution with
// the given median and σ (σ ≤ 0 gives the median every time), ModeRandom
// uniformly from [1, 2·median].
func NaturalLen(mode LenMode, s uint64, choice, median int, sigma float64) int {
	median = max(median, 1)
	r := lengthDraw(s, choice)
	if mode == ModeRandom {
		return 1 + int(r%uint64(2*median))
	}
	if !(sigma > 0) {
		return median
	}
	// u in (0, 1) from the top 53 bits, centred so that neither 0 nor 1
	// (an infinite quantile) can occur.
	u := (float64(r>>11) + 0.5) / (1 << 53)
	z := math.Sqrt2 * math.Erfinv(2*u-1) // standard normal quantile of u
	x := math.Round(float64(median) * math.Exp(sigma*z))
	switch {
	case !(x >= 1): // also NaN, never expected
		return 1
	case x >= 1<<30:
		return 1 << 30
	}
	return int(x)
}

// LogNormalQuantile is the q-quantile (0 < q < 1) of the log-normal
// natural length distribution with the given median and σ, before rounding
// and capping: median · exp(σ·Φ⁻¹(q)). Tests and docs compare measured
// lengths with it.
func LogNormalQuantile(median int, sigma, q float64) float64 {
	return float64(median) * math.Exp(sigma*math.Sqrt2*math.Erfinv(2*q-1))
}

// LogNormalCDF is P(X ≤ x) for the log-normal distribution with the given
// median and σ > 0.
func LogNormalCDF(median int, sigma, x float64) float64 {
	if x <= 0 {
		return 0
	}
	return 0.5 * math.Erfc(-math.Log(x/float64(median))/(sigma*math.Sqrt2))
}

// outputLen decides how many tokens choice p.Choice generates and whether
// it ends naturally (its last token is EOS, finish "stop"), given its
// limit m (Plan step 2).
//
// The natural length is raised to min_tokens + 1 (vLLM masks EOS until
// min_tokens tokens exist, so the earliest EOS is token min_tokens + 1) and
// to 2, so that a natural end always follows at least one visible token.
// It ends the answer only when shorter than m: an EOS that would be the
// m-th token is cut by the limit first, as vLLM's check_stop tests the
// length before EOS. ignore_eos never ends naturally; ModeMax does not
// when the request has a limit of its own (SetsMax, or a completion's
// default 16).
func outputLen(p *Params, m int) (n int, natural bool) {
	if p.IgnoreEOS || (lenMode(p.Mode) == ModeMax && (p.SetsMax || !p.Chat)) {
		return m, false
	}
	median, sigma := p.NaturalOutputLen, p.NaturalSigma
	if median <= 0 {
		median = DefaultNaturalOutputLen
	}
	if !(sigma > 0) {
		sigma = DefaultNaturalSigma
	}
	l := NaturalLen(lenMode(p.Mode), p.Seed, p.Choice, median, sigma)
	l = max(l, max(p.MinTokens, 0)+1, 2)
	if l < m {
		return l, true
	}
	return m, false
}

// lenMode maps the zero value to the default mode.
func lenMode(m LenMode) LenMode {
	if m == "" {
		return ModeNatural
	}
	return m
}

// contentThinkLen is the reasoning framing length of a body of osl tokens:
// ThinkLen, except that an answer that ends naturally keeps at least one
// content token after its reasoning (a real model does not stop right
// after it finished thinking). The framing needs its two marker tokens,
// so a natural body shorter than 3 has none.
func contentThinkLen(osl int, ratio float64, natural bool) int {
	tl := ThinkLen(osl, ratio)
	if natural && tl >= osl {
		tl = osl - 1
		if tl < 2 {
			tl = 0
		}
	}
	return tl
}
