package schemagen

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode"
)

// compilePattern compiles a JSON Schema pattern. Go's RE2 syntax is the
// supported subset of ECMA-262: no look-around and no back-references,
// which RE2 rejects with its own message.
func compilePattern(pattern string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("pattern %q is not supported (RE2 syntax: no look-around or back-references): %v", pattern, err)
	}
	return re, nil
}

// Regex generates strings that fully match a regular expression, for
// guided_regex style requests.
type Regex struct {
	anchored *regexp.Regexp
}

// CompileRegex compiles pattern for generation. Supported: RE2 syntax
// (literals, classes, ., alternation, groups, * + ? {m,n}, anchors at the
// ends). The error wraps ErrInvalidSchema.
func CompileRegex(pattern string) (*Regex, error) {
	re, err := compilePattern(`^(?:` + pattern + `)$`)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSchema, err)
	}
	r := &Regex{anchored: re}
	for seed := range uint64(64) {
		if _, ok := r.generate(seed); ok {
			return r, nil
		}
	}
	return nil, fmt.Errorf("%w: pattern %q: could not generate a matching string (word boundaries or anchors inside the pattern?)", ErrInvalidSchema, pattern)
}

// Generate returns a string that fully matches the pattern, the same one
// for the same seed.
func (r *Regex) Generate(seed uint64) string {
	for attempt := range uint64(64) {
		if s, ok := r.generate(seed + attempt*0x9e3779b97f4a7c15); ok {
			return s
		}
	}
	// CompileRegex found a seed that works; use the first one
	for seed := range uint64(64) {
		if s, ok := r.generate(seed); ok {
			return s
		}
	}
	return ""
}

func (r *Regex) generate(seed uint64) (string, bool) {
	rng := rand.New(rand.NewPCG(seed, 0x7e9e))
	s := generateRegex(rng, r.anchored, 0)
	return s, r.anchored.MatchString(s)
}

// generateRegex walks the parsed expression; repetitions are bounded
// (at most three beyond their minimum) and a class picks printable ASCII
// where it has any. minLen makes unbounded repetitions longer when the
// result must reach a length.
func generateRegex(rng *rand.Rand, re *regexp.Regexp, minLen int) string {
	parsed, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return ""
	}
	var b strings.Builder
	writeRegex(rng, &b, parsed.Simplify(), max(minLen, 0))
	return b.String()
}

func writeRegex(rng *rand.Rand, b *strings.Builder, re *syntax.Regexp, extra int) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			b.WriteRune(r)
		}
	case syntax.OpCharClass:
		b.WriteRune(pickFromClass(rng, re.Rune))
	case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		b.WriteByte(byte('a' + rng.IntN(26)))
	case syntax.OpCapture:
		writeRegex(rng, b, re.Sub[0], extra)
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			writeRegex(rng, b, sub, extra)
		}
	case syntax.OpAlternate:
		writeRegex(rng, b, re.Sub[rng.IntN(len(re.Sub))], extra)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		low, high := re.Min, re.Max
		switch re.Op {
		case syntax.OpStar:
			low, high = 0, -1
		case syntax.OpPlus:
			low, high = 1, -1
		case syntax.OpQuest:
			low, high = 0, 1
		}
		top := low + 3
		if high < 0 {
			top += extra
		} else {
			top = min(top, high)
		}
		count := low + rng.IntN(top-low+1)
		for range count {
			writeRegex(rng, b, re.Sub[0], extra)
		}
	}
	// anchors, word boundaries and empty matches write nothing
}

// pickFromClass picks a rune from a class given as [lo, hi] pairs,
// preferring printable ASCII.
func pickFromClass(rng *rand.Rand, ranges []rune) rune {
	var ascii []rune
	for i := 0; i+1 < len(ranges); i += 2 {
		for r := max(ranges[i], ' '); r <= min(ranges[i+1], '~'); r++ {
			ascii = append(ascii, r)
		}
	}
	if len(ascii) > 0 {
		return ascii[rng.IntN(len(ascii))]
	}
	if len(ranges) < 2 {
		return 'a'
	}
	i := 2 * rng.IntN(len(ranges)/2)
	lo, hi := ranges[i], ranges[i+1]
	r := lo + rune(rng.IntN(int(min(hi-lo, 0xffff))+1))
	if !unicode.IsPrint(r) {
		return lo
	}
	return r
}
