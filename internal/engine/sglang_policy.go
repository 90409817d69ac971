package engine

import (
	"slices"

	"github.com/mocker-server/mocker-server/internal/kv"
)

// orderWaiting reorders the waiting queue by the SGLang schedule policy
// before a prefill batch is formed (SchedulePolicy.calc_priority).
func (g *sglangScheduler) orderWaiting() {
	q := &g.core.waiting
	order := append(g.order[:0], q.items[q.head:]...)
	switch g.cfg.Policy {
	case SGLangLPM:
		if len(order) > SGLangLPMQueueLimit {
			break // too long to match every request: FCFS
		}
		g.sortByLongestPrefix(order)
	case SGLangDFSWeight:
		for _, s := range order {
			g.kv.match(s)
		}
		order = g.sortByDFSWeight(order)
	case SGLangLOF:
		slices.SortStableFunc(order, func(a, b *sequence) int { return b.maxOutput - a.maxOutput })
	case SGLangRandom:
		g.rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	copy(q.items[q.head:], order)
	g.order = order[:0]
}

// sortByLongestPrefix is LPM: every waiting request is matched against the
// radix tree and the queue is sorted, stably, by matched length descending.
// A request with a short match (≤ 32 tokens) that shares at least 32
// tokens with a request ahead of it in the queue is deprioritized to the
// end: admitting both in one batch would compute the shared part twice,
// while admitting the first alone caches it for the second.
func (g *sglangScheduler) sortByLongestPrefix(order []*sequence) {
	var inBatch *kv.RadixCache
	deprioritized := map[*sequence]bool{}
	for _, s := range order {
		prefix := g.kv.match(s)
		if prefix > sglangInBatchCheck {
			continue
		}
		if inBatch == nil {
			inBatch = kv.NewRadixCache(1<<30, 1, false)
		}
		key := s.tokens[:s.numTokens()]
		if inBatch.MatchLen("", key) >= sglangInBatchDeprioritize {
			deprioritized[s] = true
			continue
		}
		inBatch.Insert("", key)
	}
	slices.SortStableFunc(order, func(a, b *sequence) int {
		da, db := deprioritized[a], deprioritized[b]
		switch {
		case da && db:
			return 0
		case da:
			return 1
		case db:
			return -1
		}
		return b.radix.matchLen - a.radix.matchLen
	})
}

// sortByDFSWeight is dfs-weight: each node of the radix tree weighs the
// number of waiting requests whose match ends in its subtree; the tree is
// walked depth first, heavier children first (creation order among
// equals), and each node's own requests follow its children's, in queue
// order.
func (g *sglangScheduler) sortByDFSWeight(order []*sequence) []*sequence {
	byNode := map[*kv.RadixNode][]*sequence{}
	weight := map[*kv.RadixNode]int{}
	for _, s := range order {
		n := s.radix.matchNode
		byNode[n] = append(byNode[n], s)
		for ; n != nil; n = n.Parent() {
			weight[n]++
		}
	}
	out := make([]*sequence, 0, len(order))
	var visit func(n *kv.RadixNode)
	visit = func(n *kv.RadixNode) {
		children := n.Children(nil)
		children = slices.DeleteFunc(children, func(c *kv.RadixNode) bool { return weight[c] == 0 })
		slices.SortStableFunc(children, func(a, b *kv.RadixNode) int { return weight[b] - weight[a] })
		for _, child := range children {
			visit(child)
		}
		out = append(out, byNode[n]...)
	}
	for _, root := range g.kv.tree.Roots(nil) {
		visit(root)
	}
	return out
}
