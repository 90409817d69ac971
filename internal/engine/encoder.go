package engine

import (
	"container/list"
	"time"
)

// MMConfig is how the engine treats a prompt's multimodal items
// (Request.MM): when their encoder runs and what it costs. Its zero value
// encodes for free and may split an item's tokens over prefill chunks.
type MMConfig struct {
	// EncoderMsPerToken is the encoder's time per placeholder token of an
	// item, added to the pass that encodes it (first use, or after its
	// encoder output left the encoder cache).
	EncoderMsPerToken float64
	// EncoderDataParallel is --mm-encoder-tp-mode data over this many
	// GPUs: each encodes its share of the pass's items, so the pass waits
	// for the busiest GPU's share instead of all items (1 or 0: weights
	// mode, the items one after another on the sharded encoder).
	EncoderDataParallel int
	// DisableChunkedMMInput never splits an item's tokens over two prefill
	// chunks (vLLM's --disable-chunked-mm-input).
	DisableChunkedMMInput bool
}

// encoderCache is vLLM's EncoderCacheManager in tokens: the encoder outputs
// of the items running requests still need, plus released ones kept until
// their room is needed, so an item seen again is not encoded again. Its
// size, and the encoder tokens one pass may compute, are vLLM's
// compute_encoder_budget: max_num_batched_tokens, raised to the item when
// one item is larger (vLLM sizes both for the model's largest item).
type encoderCache struct {
	budget   int
	used     int                      // tokens of all entries
	entries  map[string]*encoderEntry // by item identifier
	freeable *list.List               // entries no request holds, oldest first
	// pass state: encoder tokens scheduled this pass and their time
	passTokens int
	passItems  []int // tokens per item encoded this pass
}

type encoderEntry struct {
	id     string
	tokens int
	refs   int
	el     *list.Element // in freeable when refs == 0
}

func newEncoderCache(budget int) *encoderCache {
	return &encoderCache{budget: budget, entries: map[string]*encoderEntry{}, freeable: list.New()}
}

// cached reports whether id's encoder output is in the cache and, if so,
// makes s hold it (vLLM's check_and_update_cache).
func (e *encoderCache) cached(s *sequence, id string) bool {
	en, ok := e.entries[id]
	if !ok {
		return false
	}
	e.hold(s, en)
	return true
}

func (e *encoderCache) hold(s *sequence, en *encoderEntry) {
	for _, h := range s.encHeld {
		if h == en.id {
			return
		}
	}
	if en.refs == 0 && en.el != nil {
		e.freeable.Remove(en.el)
		en.el = nil
	}
	en.refs++
	s.encHeld = append(s.encHeld, en.id)
}

// canAllocate is vLLM's can_allocate: the item fits the pass's encoder
// compute budget left, and the cache has room once released entries are
// evicted (oldest first). Items allocate at once here (vLLM allocates
// after the loop and counts the loop's items instead).
func (e *encoderCache) canAllocate(tokens, planned int) bool {
	budget := max(e.budget, tokens)
	if tokens > budget-e.passTokens-planned {
		return false
	}
	need := tokens + planned
	if e.used+need <= budget {
		return true
	}
	freeable := 0
	for el := e.freeable.Front(); el != nil; el = el.Next() {
		freeable += el.Value.(*encoderEntry).tokens
	}
	if e.used-freeable+need > budget {
		return false
	}
	for e.used+need > budget {
		el := e.freeable.Front()
		en := el.Value.(*encoderEntry)
		e.freeable.Remove(el)
		delete(e.entries, en.id)
		e.used -= en.tokens
	}
	return true
}

// allocate records that s's item id is encoded this pass.
func (e *encoderCache) allocate(s *sequence, id string, tokens int) {
	en := &encoderEntry{id: id, tokens: tokens}
	e.entries[id] = en
	e.used += tokens
	e.hold(s, en)
	e.passTokens += tokens
	e.passItems = append(e.passItems, tokens)
}

// release drops s's hold on its items (finished, preempted, or every
// item consumed into the KV cache): they stay cached until room is needed.
func (e *encoderCache) release(s *sequence, keep func(id string) bool) {
	held := s.encHeld[:0]
	for _, id := range s.encHeld {
		if keep != nil && keep(id) {
			held = append(held, id)
			continue
		}
		en, ok := e.entries[id]
		if !ok {
			continue
		}
		en.refs--
		if en.refs == 0 {
			en.el = e.freeable.PushBack(en)
		}
	}
	s.encHeld = held
}

// encodePlan is the items a prefill chunk encodes (scheduleEncoder); they
// are allocated in the cache only when the chunk is scheduled.
type encodePlan struct {
	ids    []string
	tokens []int
}

// scheduleEncoder is vLLM v1's Scheduler._try_schedule_encoder_inputs for
// a prefill chunk of numNew tokens from computed: every item whose tokens
// the chunk reaches and whose encoder output is not cached is encoded this
// pass if the encoder budget and cache allow; otherwise the chunk stops
// just before that item (0 tokens when prefix caching already covers the
// item's start). With DisableChunkedMMInput a chunk that would end inside
// an item stops before it instead. It returns the chunk's new length and
// the items to encode, which commitEncoder allocates once the chunk is
// scheduled.
func (c *Core) scheduleEncoder(s *sequence, computed, numNew int) (int, encodePlan) {
	var plan encodePlan
	mm := s.req.MM
	if len(mm) == 0 || numNew == 0 || c.enc == nil {
		return numNew, plan
	}
	planned := 0
	for _, f := range mm {
		start, n := f.Offset, f.Length
		if start >= computed+numNew {
			break
		}
		if start+n <= computed {
			continue // already in the KV cache
		}
		dup := false
		for _, id := range plan.ids {
			dup = dup || id == f.Identifier
		}
		if dup || c.enc.cached(s, f.Identifier) {
			continue
		}
		if c.cfg.MM.DisableChunkedMMInput && computed < start && computed+numNew < start+n {
			return start - computed, plan
		}
		if !c.enc.canAllocate(n, planned) {
			if computed < start {
				return start - computed, plan
			}
			return 0, plan
		}
		planned += n
		plan.ids = append(plan.ids, f.Identifier)
		plan.tokens = append(plan.tokens, n)
	}
	return numNew, plan
}

// commitEncoder allocates a scheduled chunk's planned items.
func (c *Core) commitEncoder(s *sequence, plan encodePlan) {
	for i, id := range plan.ids {
		c.enc.allocate(s, id, plan.tokens[i])
	}
}

// releaseConsumed drops s's holds on the items its computed tokens have
// passed (vLLM's _free_encoder_inputs after a step).
func (c *Core) releaseConsumed(s *sequence) {
	if c.enc == nil || len(s.encHeld) == 0 {
		return
	}
	c.enc.release(s, func(id string) bool {
		for _, f := range s.req.MM {
			if f.Identifier == id && f.Offset+f.Length > s.numComputedTokens {
				return true
			}
		}
		return false
	})
}

// releaseEncoder drops every hold of a finished or preempted sequence.
func (c *Core) releaseEncoder(s *sequence) {
	if c.enc != nil && len(s.encHeld) > 0 {
		c.enc.release(s, nil)
	}
}

// takeEncoderTime returns the encoder time of the pass's items and resets
// the pass state: their tokens × EncoderMsPerToken, with data-parallel
// encoding the busiest GPU's share (items dealt round-robin, largest
// first).
func (c *Core) takeEncoderTime() time.Duration {
	if c.enc == nil || c.enc.passTokens == 0 {
		return 0
	}
	items := c.enc.passItems
	tokens := c.enc.passTokens
	if dp := c.cfg.MM.EncoderDataParallel; dp > 1 {
		loads := make([]int, dp)
		// Largest first onto the least loaded GPU.
		sorted := append([]int(nil), items...)
		for i := 1; i < len(sorted); i++ {
			for j := i; j > 0 && sorted[j] > sorted[j-1]; j-- {
				sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
			}
		}
		for _, n := range sorted {
			m := 0
			for g := range loads {
				if loads[g] < loads[m] {
					m = g
				}
			}
			loads[m] += n
		}
		tokens = 0
		for _, l := range loads {
			tokens = max(tokens, l)
		}
	}
	c.enc.passTokens, c.enc.passItems = 0, items[:0]
	ms := float64(tokens) * c.cfg.MM.EncoderMsPerToken / c.prefillDiv
	return saturatingDuration(ms * float64(time.Millisecond))
}
