package engine

import "github.com/mocker-server/mocker-server/internal/kv"

// The KV manager's part of disaggregated serving: blocks held for a handoff
// after their request finished, and the blocks a decode request takes
// before its KV arrives.

// hold detaches a finished sequence's blocks without releasing them: they
// keep their references, so they stay active and cannot be evicted, until
// releaseHeld. It returns them.
func (m *kvManager) hold(s *sequence) []kv.BlockID {
	blocks := s.kv.blocks
	s.kv.blocks = nil
	s.kv.numCachedBlocks = 0
	return blocks
}

// releaseHeld frees blocks detached by hold, last block first.
func (m *kvManager) releaseHeld(blocks []kv.BlockID) { m.pool.Release(blocks) }

// admitRemote takes every block a decode request's prompt needs before its
// KV is pulled: the local prefix hits, and new blocks for the rest (vLLM
// allocates them before the transfer, which writes into them). It returns
// the number of hit blocks, or false, leaving the pool untouched, when the
// blocks do not fit beside those claimed by running sequences.
func (m *kvManager) admitRemote(s *sequence, claimed int) (numHits int, ok bool) {
	hits, numActiveHits := m.computedBlocks(s)
	total := ceilDiv(max(m.claims.admissionTokens(s), s.numPromptTokens), m.blockSize)
	if total-numActiveHits > m.pool.NumFree()-claimed {
		return 0, false
	}
	m.pool.Touch(hits)
	s.kv.blocks = append(s.kv.blocks[:0], hits...)
	blocks, ok := m.pool.Allocate(s.kv.blocks, ceilDiv(s.numPromptTokens, m.blockSize)-len(s.kv.blocks))
	if !ok {
		m.free(s)
		return 0, false
	}
	s.kv.blocks = blocks
	s.kv.numCachedBlocks = len(hits)
	return len(hits), true
}
