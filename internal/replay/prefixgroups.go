package replay

import (
	"fmt"
	"math/rand/v2"
)

// prefixGroups are the shared prompt prefixes of the synthetic and
// closed-loop workloads: Groups groups of Tokens tokens each, a group's
// tokens built on first use (content ids 1<<61 | group, so both workloads
// give a group the same tokens).
type prefixGroups struct {
	groups, tokens int
	built          map[int][]uint32
}

func newPrefixGroups(groups, tokens int) prefixGroups {
	return prefixGroups{groups: groups, tokens: tokens, built: map[int][]uint32{}}
}

// pick draws a group uniformly and returns its prefix (read-only), or nil
// when there are no groups (and then draws nothing from rng).
func (p *prefixGroups) pick(rng *rand.Rand) []uint32 {
	if p.groups == 0 {
		return nil
	}
	group := rng.IntN(p.groups)
	prefix, ok := p.built[group]
	if !ok {
		prefix = blockTokens(nil, 1<<61|uint64(group), p.tokens)
		p.built[group] = prefix
	}
	return prefix
}

// checkGenerated returns the problems of the options both generated
// workloads share, each named after the workload (what).
func checkGenerated(what string, requests int, in, out Dist, groups, tokens int) []error {
	var errs []error
	if requests < 1 {
		errs = append(errs, fmt.Errorf("%s workload: requests must be ≥ 1, got %d", what, requests))
	}
	if in.Kind == "" || out.Kind == "" {
		errs = append(errs, fmt.Errorf("%s workload: input and output length distributions are required", what))
	}
	if groups < 0 || tokens < 0 || (groups > 0) != (tokens > 0) {
		errs = append(errs, fmt.Errorf("%s workload: prefix groups (%d) and prefix tokens (%d) must both be > 0 or both 0",
			what, groups, tokens))
	}
	return errs
}
