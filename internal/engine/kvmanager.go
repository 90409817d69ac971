package engine

import (
	"fmt"
	"time"

	"github.com/mocker-server/mocker-server/internal/kv"
)

// blockTable is one sequence's view of the KV pool: the blocks holding its
// tokens in order, its block-hash chain, and how many leading blocks are
// already in the prefix cache. Only the kvManager changes it.
type blockTable struct {
	blocks []kv.BlockID
	chain  kv.HashChain
	// numCachedBlocks counts the leading blocks already hashed into the
	// prefix cache (prefix hits, or blocks cached after being filled).
	numCachedBlocks int
}

// RejectReason classifies why a request can never be scheduled.
type RejectReason uint8

// Rejection reasons.
const (
	// RejectEmptyPrompt: the prompt has no tokens.
	RejectEmptyPrompt RejectReason = iota + 1
	// RejectContextLength: the prompt does not fit max_model_len.
	RejectContextLength
	// RejectKVCapacity: the request needs more blocks than the pool holds.
	RejectKVCapacity
	// RejectLoRADisabled: the request names a LoRA adapter but the engine
	// serves none (the API refuses such requests before they get here).
	RejectLoRADisabled
)

// Rejection is the engine's verdict on a request that can never run. Its
// message is the one the API returns verbatim.
type Rejection struct {
	Reason  RejectReason
	Message string
}

// Error returns the rejection message.
func (r *Rejection) Error() string { return r.Message }

// allocOutcome is the result of asking the KV manager for slots.
type allocOutcome uint8

const (
	// allocated: the blocks were allocated.
	allocated allocOutcome = iota
	// allocNoFreeBlocks: the pool has too few free blocks; the scheduler
	// must preempt (vLLM) or fail the request (TensorRT-LLM).
	allocNoFreeBlocks
	// allocMustWait: a waiting request would take blocks that running
	// requests have claimed; it stays queued.
	allocMustWait
)

// kvManager sits between the scheduler and the block pool, in the shape of
// vLLM's KVCacheManager: it owns the sequences' block tables, the prefix
// lookup, allocation and release, and the one capacity rule that decides
// whether a request can ever run. The claim policy says how many blocks a
// request must be able to hold.
type kvManager struct {
	pool        *kv.Pool
	hasher      *kv.Hasher // nil when prefix caching is off
	blockSize   int
	numBlocks   int
	maxModelLen int
	claims      claimPolicy
	// radix, when set (SGLang), holds the KV instead of pool: a radix
	// tree of pages (sglang_kv.go). The block pool then stays empty.
	radix *radixManager

	hits []kv.BlockID // scratch for computedBlocks

	// Offload tiers (nil lower: none). loads is scratch for computedBlocks:
	// the tier of each block that continues the GPU hit in a lower tier.
	// loadTime accumulates the pass's load-backs; tierHits counts the
	// pass's loaded blocks per tier.
	offload  OffloadConfig
	lower    *kv.Tiers
	loads    []int
	loadTime time.Duration
	tierHits []int
	// loadOps are the pass's load-backs; stored counts the blocks each
	// tier took in (scratch for takeTransfers).
	loadOps []KVTransfer
	stored  []int
}

func newKVManager(cfg *Config, claims claimPolicy) (*kvManager, error) {
	pool, err := kv.NewPoolWithEviction(cfg.NumBlocks, cfg.BlockSize, cfg.EnablePrefixCaching, cfg.Eviction)
	if err != nil {
		return nil, err
	}
	m := &kvManager{
		pool:        pool,
		blockSize:   cfg.BlockSize,
		numBlocks:   cfg.NumBlocks,
		maxModelLen: cfg.MaxModelLen,
		claims:      claims,
	}
	if cfg.EnablePrefixCaching {
		h, err := kv.NewHasher(cfg.HashAlgo, cfg.HashSeed, cfg.BlockSize)
		if err != nil {
			return nil, err
		}
		m.hasher = h
		if cfg.Offload.Enabled() {
			tiers, err := kv.NewTiers(cfg.Offload.tierSpecs())
			if err != nil {
				return nil, err
			}
			m.pool.SetLower(tiers)
			m.lower = tiers
			m.offload = cfg.Offload
			m.tierHits = make([]int, tiers.NumTiers())
			m.stored = make([]int, tiers.NumTiers())
		}
	}
	return m, nil
}

// capacityTokens is the pool's size in tokens.
func (m *kvManager) capacityTokens() int { return m.numBlocks * m.blockSize }

// rejection is the single rule that decides whether a request of
// promptTokens and maxOutputTokens can ever be scheduled on this pool; nil
// means it can. The API asks it before submitting (through
// Engine.CheckAdmissible) and the scheduler asks it again when the request
// reaches the head of the queue, so both give the same answer and message.
func (m *kvManager) rejection(promptTokens, maxOutputTokens int) *Rejection {
	if promptTokens == 0 {
		return &Rejection{Reason: RejectEmptyPrompt, Message: "The prompt is empty after tokenization"}
	}
	if promptTokens >= m.maxModelLen {
		return &Rejection{Reason: RejectContextLength, Message: fmt.Sprintf(
			"This model's maximum context length is %d tokens. However, your request has %d input tokens.",
			m.maxModelLen, promptTokens)}
	}
	need := ceilDiv(m.claims.capacityTokens(promptTokens, maxOutputTokens), m.blockSize)
	if need > m.numBlocks {
		return &Rejection{Reason: RejectKVCapacity, Message: fmt.Sprintf(
			"This request needs %d KV cache blocks but each engine has only %d blocks of %d tokens.",
			need, m.numBlocks, m.blockSize)}
	}
	return nil
}

// startChain begins a sequence's hash chain (no-op without prefix caching).
func (m *kvManager) startChain(s *sequence) {
	if m.hasher != nil {
		s.kv.chain = m.hasher.NewKeyedChain(s.req.hashKeys())
	}
}

// computedBlocks looks up the sequence's longest cached prefix, as vLLM's
// get_computed_blocks does: whole blocks only, and never the block holding
// the last token (its logits must be computed). It returns the hit blocks
// (valid until the next call) and how many of them are in use by other
// requests (those cost no free block).
func (m *kvManager) computedBlocks(s *sequence) (hits []kv.BlockID, numActiveHits int) {
	m.hits = m.hits[:0]
	if m.hasher == nil {
		return m.hits, 0
	}
	maxHit := (s.numTokens() - 1) / m.blockSize
	m.hasher.Extend(&s.kv.chain, s.tokens, maxHit)
	m.hits = m.pool.Lookup(s.kv.chain.Hashes(), maxHit, m.hits)
	for _, b := range m.hits {
		if m.pool.RefCount(b) > 0 {
			numActiveHits++
		}
	}
	if m.lower != nil {
		// A GPU miss may continue in an offload tier (vLLM asks its
		// connector for the tokens after the local hit).
		m.loads = m.lower.Lookup(s.kv.chain.Hashes()[len(m.hits):maxHit], m.loads[:0])
	}
	return m.hits, numActiveHits
}

// claimOf is the blocks a running sequence has claimed but not yet
// allocated; admission leaves them free for it.
func (m *kvManager) claimOf(s *sequence) int {
	target := m.claims.claimTokens(s)
	return max(ceilDiv(target, m.blockSize)-len(s.kv.blocks), 0)
}

// claimedBlocks sums claimOf over the running sequences.
func (m *kvManager) claimedBlocks(running []*sequence) int {
	n := 0
	for _, s := range running {
		n += m.claimOf(s)
	}
	return n
}

// admission is the KV manager's answer for a waiting sequence.
type admission struct {
	outcome allocOutcome
	// numCachedTokens is the prefix-cache hit, numNewTokens the uncached
	// tokens scheduled now (a chunk when the budget is smaller).
	numCachedTokens int
	numNewTokens    int
	// numLoadedTokens is the part of numCachedTokens loaded back from
	// offload tiers rather than found on the GPU.
	numLoadedTokens int
}

// admit is the whole admission of a waiting sequence, in the shape of
// vLLM's get_computed_blocks + allocate_slots: it looks up the cached
// prefix, fits the uncached tokens into budget (all of them unless
// chunkedPrefill), checks that the blocks the claim policy requires fit in
// the free blocks not claimed by running sequences (claimed), takes the
// hits and allocates the rest. Anything but allocated leaves the pool as it
// was and the sequence waiting.
//
// fit, when set, may shorten the chunk (the encoder's rule, encoder.go);
// a chunk it makes empty cannot be admitted this pass.
func (m *kvManager) admit(s *sequence, budget, claimed int, chunkedPrefill bool, fit func(cached, chunk int) int) admission {
	hits, numActiveHits := m.computedBlocks(s)
	numLoads := 0
	if m.lower != nil {
		numLoads = len(m.loads)
	}
	cachedTokens := (len(hits) + numLoads) * m.blockSize
	numNew := s.numTokens() - cachedTokens
	if !chunkedPrefill && numNew > budget {
		return admission{outcome: allocMustWait}
	}
	chunk := min(numNew, budget)
	needed := ceilDiv(m.claims.admissionTokens(s), m.blockSize) - numActiveHits
	if needed > m.pool.NumFree()-claimed {
		return admission{outcome: allocMustWait}
	}
	if fit != nil {
		if chunk = fit(cachedTokens, chunk); chunk == 0 {
			return admission{outcome: allocMustWait}
		}
	}
	m.pool.Touch(hits)
	if numLoads > 0 {
		// The loaded blocks become the most recently used of their tiers
		// before the allocation below can demote anything.
		m.lower.Hit(s.kv.chain.Hashes()[len(hits):], m.loads)
		m.chargeLoads()
	}
	s.kv.blocks = append(s.kv.blocks[:0], hits...)
	blocks, ok := m.pool.Allocate(s.kv.blocks, ceilDiv(cachedTokens+chunk, m.blockSize)-len(s.kv.blocks))
	if !ok {
		// Unreachable after the capacity check; undo and wait.
		m.free(s)
		return admission{outcome: allocMustWait}
	}
	s.kv.blocks = blocks
	s.kv.numCachedBlocks = len(hits)
	return admission{outcome: allocated, numCachedTokens: cachedTokens, numNewTokens: chunk,
		numLoadedTokens: numLoads * m.blockSize}
}

// allocateSlots grows a running sequence's blocks to hold numNewTokens more
// computed tokens. On allocNoFreeBlocks nothing changed.
func (m *kvManager) allocateSlots(s *sequence, numNewTokens int) allocOutcome {
	want := ceilDiv(s.numComputedTokens+numNewTokens, m.blockSize)
	if want <= len(s.kv.blocks) {
		return allocated
	}
	blocks, ok := m.pool.Allocate(s.kv.blocks, want-len(s.kv.blocks))
	if !ok {
		return allocNoFreeBlocks
	}
	s.kv.blocks = blocks
	return allocated
}

// cacheFullBlocks hashes and caches the blocks the sequence's computed
// tokens have just filled, so later requests can hit them.
func (m *kvManager) cacheFullBlocks(s *sequence) {
	if m.hasher == nil {
		return
	}
	full := s.numComputedTokens / m.blockSize
	if full <= s.kv.numCachedBlocks {
		return
	}
	m.hasher.Extend(&s.kv.chain, s.tokens, full)
	m.pool.Cache(s.kv.blocks, s.kv.chain.Hashes(), s.tokens, s.kv.numCachedBlocks, full, s.req.hashKeys())
	s.kv.numCachedBlocks = full
}

// free releases the sequence's blocks, last block first so that a prompt's
// tail is evicted before its shared head.
func (m *kvManager) free(s *sequence) {
	if m.radix != nil {
		m.radix.free(s)
		return
	}
	m.pool.Release(s.kv.blocks)
	s.kv.blocks = s.kv.blocks[:0]
	s.kv.numCachedBlocks = 0
}

// resetPrefixCache drops every cached block when none is in use.
func (m *kvManager) resetPrefixCache() bool {
	if m.radix != nil {
		return m.radix.tree.Reset()
	}
	return m.pool.Reset()
}

// takeEvents returns the pool's pending KV events, stamped by the caller.
func (m *kvManager) takeEvents() []kv.Event {
	if m.radix != nil {
		return m.radix.tree.TakeEvents()
	}
	return m.pool.TakeEvents()
}

// takeEventCounts returns the pool's events since the previous call,
// counted by kind.
func (m *kvManager) takeEventCounts() [kv.NumEventKinds]int {
	if m.radix != nil {
		return m.radix.tree.TakeEventCounts()
	}
	return m.pool.TakeEventCounts()
}

// activeTokens is the KV held by in-use blocks, in tokens.
func (m *kvManager) activeTokens() int {
	if m.radix != nil {
		return m.radix.usedTokens()
	}
	return m.pool.NumActive() * m.blockSize
}

// numActiveBlocks is the number of in-use blocks (SGLang: pages).
func (m *kvManager) numActiveBlocks() int {
	if m.radix != nil {
		return m.radix.usedTokens() / m.blockSize
	}
	return m.pool.NumActive()
}

// usage is the fraction of blocks in use.
func (m *kvManager) usage() float64 {
	if m.radix != nil {
		return float64(m.radix.usedTokens()) / float64(m.capacityTokens())
	}
	return m.pool.Usage()
}
