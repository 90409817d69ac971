package config

import (
	"regexp"
	"strings"

	"github.com/spf13/pflag"
)

var (
	unknownLongRE  = regexp.MustCompile(`^unknown flag: --(\S+)$`)
	unknownShortRE = regexp.MustCompile(`^unknown shorthand flag: '.' in -(\S+)$`)
)

// ExplainFlagError returns pflag's message for a parse error of fs, with
// "(did you mean --x?)" added to an unknown flag when a registered flag
// name (the mock's, or vLLM's, hidden ones included) or a vLLM single-dash
// name is close to it.
func ExplainFlagError(fs *pflag.FlagSet, err error) string {
	msg := err.Error()
	var typed string
	if m := unknownLongRE.FindStringSubmatch(msg); m != nil {
		typed = m[1]
	} else if m := unknownShortRE.FindStringSubmatch(msg); m != nil {
		typed = m[1]
	} else {
		return msg
	}
	if s := suggestFlag(fs, typed); s != "" {
		msg += " (did you mean " + s + "?)"
	}
	return msg
}

// suggestFlag returns the known spelling ("--name" or "-tp") nearest to
// typed (without dashes and any "=value"), or "" when none is close: at
// most one edit per four characters, between one and three.
func suggestFlag(fs *pflag.FlagSet, typed string) string {
	typed, _, _ = strings.Cut(typed, "=")
	typed = strings.ReplaceAll(typed, "_", "-")
	limit := min(max(len(typed)/4, 1), 3)
	// Ties go to the name closest in length, then to the first in byte
	// order, so that the suggestion does not depend on map order.
	best, bestDist, bestLenDiff := "", limit+1, 0
	consider := func(spelling, name string) {
		d := editDistance(typed, name)
		lenDiff := max(len(name)-len(typed), len(typed)-len(name))
		if d < bestDist || d == bestDist && (lenDiff < bestLenDiff || lenDiff == bestLenDiff && spelling < best) {
			best, bestDist, bestLenDiff = spelling, d, lenDiff
		}
	}
	fs.VisitAll(func(f *pflag.Flag) { consider("--"+f.Name, f.Name) })
	for short := range vllmShortNames {
		consider("-"+short, short)
	}
	if best != "" || len(typed) < 3 {
		return best
	}
	// A prefix abbreviation (--tensor-parallel), which Python's argparse
	// expands when it is unique, is not accepted but suggested.
	var expansions []string
	fs.VisitAll(func(f *pflag.Flag) {
		if strings.HasPrefix(f.Name, typed) && !strings.HasPrefix(f.Name, "no-") {
			expansions = append(expansions, "--"+f.Name)
		}
	})
	if len(expansions) == 1 {
		return expansions[0]
	}
	return ""
}

// editDistance is the optimal string alignment distance: insertions,
// deletions, substitutions and transpositions of adjacent characters.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// Suggest returns the name of known nearest to typed, or "" when none is
// close (at most one edit per four characters, between one and three), so
// that every "did you mean" of the program follows one rule.
func Suggest(typed string, known []string) string {
	limit := min(max(len(typed)/4, 1), 3)
	best, bestDist := "", limit+1
	for _, k := range known {
		if d := editDistance(typed, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}
