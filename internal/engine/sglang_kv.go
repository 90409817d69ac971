package engine

import (
	"github.com/mocker-server/mocker-server/internal/kv"
)

// radixSeq is one sequence's share of the SGLang radix cache.
type radixSeq struct {
	// node is the locked tree node at the end of the sequence's cached
	// prefix (nil: holds no lock); prefixLen is that prefix in tokens.
	node      *kv.RadixNode
	prefixLen int
	// privatePages are the pages allocated to the sequence beyond its
	// cached prefix (computed prompt chunks, decoded tokens).
	privatePages int
	// matchLen and matchNode are the latest prefix match of a waiting
	// sequence (not locked; valid until the tree changes).
	matchLen  int
	matchNode *kv.RadixNode
}

// radixManager is the SGLang side of the KV manager: a radix tree whose
// pages are shared by cached prefixes and running requests, used as
// SGLang's scheduler uses its tree_cache and token_to_kv_pool_allocator.
type radixManager struct {
	tree     *kv.RadixCache
	pageSize int
	// caching is false with prefix caching off (SGLang's
	// --disable-radix-cache): nothing is matched or inserted.
	caching bool
	// inserts is scratch: the sequences whose computed prompt goes into the
	// tree once the pass's admissions are decided.
	inserts []*sequence
}

// newRadixManager builds the rank's radix cache. Like SGLang, it hashes
// pages and records KV events only when someone consumes them (events:
// the Core has a KV event sink) and prefix caching is on.
func newRadixManager(cfg *Config, events bool) *radixManager {
	return &radixManager{
		tree:     kv.NewRadixCache(cfg.NumBlocks, cfg.BlockSize, cfg.EnablePrefixCaching && events),
		pageSize: cfg.BlockSize,
		caching:  cfg.EnablePrefixCaching,
	}
}

// pages is the number of pages holding n tokens.
func (m *radixManager) pages(n int) int { return ceilDiv(n, m.pageSize) }

// match looks up a waiting sequence's cached prefix as SGLang's
// init_next_round_input does: the whole sequence so far except its last
// token, whose logits must be computed.
func (m *radixManager) match(s *sequence) int {
	if !m.caching {
		s.radix.matchLen, s.radix.matchNode = 0, m.tree.Root(s.req.radixNamespace())
		return 0
	}
	s.radix.matchLen, s.radix.matchNode = m.tree.Match(s.req.radixNamespace(), s.tokens[:s.numTokens()-1])
	return s.radix.matchLen
}

// available is SGLang's available_size() + evictable_size(): what a
// prefill batch may plan to use.
func (m *radixManager) available() int {
	return m.tree.AvailableTokens() + m.tree.EvictableTokens()
}

// allocate takes pages for a sequence, evicting cached prefixes first when
// the free pool is short, as SGLang's alloc paths do. On failure nothing
// changed.
func (m *radixManager) allocate(s *sequence, pages int) bool {
	if pages <= 0 {
		return true
	}
	if short := pages*m.pageSize - m.tree.AvailableTokens(); short > 0 {
		m.tree.Evict(short)
	}
	if !m.tree.Allocate(pages) {
		return false
	}
	s.radix.privatePages += pages
	return true
}

// lockMatch takes the lock on a waiting sequence's matched prefix; it is
// then the sequence's cached prefix.
func (m *radixManager) lockMatch(s *sequence) {
	s.radix.node, s.radix.prefixLen = s.radix.matchNode, s.radix.matchLen
	s.radix.matchNode = nil
	m.tree.IncLock(s.radix.node)
}

// cacheComputed inserts the sequence's computed tokens (whole pages) into
// the tree and moves its lock to the new end, as SGLang's
// cache_unfinished_req does after a prefill chunk: pages another request
// cached meanwhile are freed, the rest are adopted by the tree.
func (m *radixManager) cacheComputed(s *sequence) {
	if !m.caching {
		return
	}
	m.insert(s, s.numComputedTokens)
	old := s.radix.node

	s.radix.prefixLen, s.radix.node = m.tree.Match(s.req.radixNamespace(), s.tokens[:s.radix.prefixLen])
	m.tree.IncLock(s.radix.node)
	m.tree.DecLock(old)
}

// insert puts tokens[:n] (whole pages) of a locked sequence into the tree
// and settles its pages: the pages of the range someone else had cached are
// freed, the pages of the new range are the tree's now.
func (m *radixManager) insert(s *sequence, n int) {
	if !m.caching {
		return
	}
	aligned := n / m.pageSize * m.pageSize
	if aligned <= s.radix.prefixLen {
		return
	}
	had := m.tree.Insert(s.req.radixNamespace(), s.tokens[:aligned])
	dup := (max(had, s.radix.prefixLen) - s.radix.prefixLen) / m.pageSize
	adopted := (aligned - max(had, s.radix.prefixLen)) / m.pageSize
	m.tree.FreePages(dup)
	s.radix.privatePages -= dup + adopted
	s.radix.prefixLen = aligned
}

// free ends a sequence's use of the cache. A sequence that completed
// hands its computed tokens to the tree (SGLang's cache_finished_req); one
// that is retracted, cancelled or aborted frees everything beyond its
// cached prefix. Either way its lock is released.
func (m *radixManager) free(s *sequence) {
	if s.radix.node == nil {
		s.radix = radixSeq{}
		return
	}
	if s.status == statusFinished {
		m.insert(s, s.numComputedTokens)
	}
	m.tree.FreePages(s.radix.privatePages)
	m.tree.DecLock(s.radix.node)
	s.radix = radixSeq{}
}

// usedTokens is what running requests hold: the pool minus free and
// evictable pages (SGLang's num_used_tokens).
func (m *radixManager) usedTokens() int {
	return m.tree.TotalTokens() - m.tree.AvailableTokens() - m.tree.EvictableTokens()
}

// radixNamespace is the radix tree a request's pages belong to: requests
// with another cache salt or LoRA adapter never share a prefix (SGLang's
// RadixKey extra_key). The base model without a salt is "".
func (r *Request) radixNamespace() string {
	if r.CacheSalt == "" && r.Adapter.Name == "" {
		return ""
	}
	return r.Adapter.Name + "\x00" + r.CacheSalt
}
