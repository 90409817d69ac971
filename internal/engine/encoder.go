package engine

import (
	"cmp"
	"container/list"
	"slices"
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
	// EncoderWeightShards is the GPUs a weights-mode encoder is sharded
	// over (the tensor-parallel size); an EncoderTimer divides an item's
	// FLOPs by it.
	EncoderWeightShards int
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
	// pass state: encoder tokens scheduled this pass and the items
	passTokens int
	passItems  []encodeItem
}

// encodeItem is one item encoded in a pass: its placeholder tokens, its
// encoder FLOPs (0: unknown, priced per token) and, when the caller knows
// it, its tower's operator shape.
type encodeItem struct {
	tokens int
	flops  float64
	work   *EncoderWork
}

// EncoderTimer is implemented by a timing model that prices a multimodal
// encoder from its FLOPs (the hardware model): the milliseconds of an item
// of flops FLOPs and tokens placeholder tokens on shards GPUs.
type EncoderTimer interface {
	EncoderMs(flops float64, tokens, shards int) float64
}

// EncoderWorkTimer is implemented by a timing model that prices an
// encoder pass operator by operator from its shape (the hardware model);
// the engine prefers it to EncoderTimer for an item whose request carries
// an EncoderWork.
type EncoderWorkTimer interface {
	// EncoderWorkMs is the milliseconds of one forward of the tower over
	// the items ws on shards GPUs.
	EncoderWorkMs(ws []*EncoderWork, shards int) float64
}

// EncoderWork is one multimodal item's encoder pass as operators: a
// transformer tower's Layers over Rows positions, then its other matrix
// products (the patch embedding, the merger or projector). A vision
// tower's GEMMs are narrower than the language model's and its attention
// is bidirectional over thousands of patches, so its FLOPs alone do not
// price it (docs/multimodal.md, "Encoder time: validation").
type EncoderWork struct {
	// Rows are the positions every layer runs over: all the item's
	// patches (every tile's, every frame's) or audio frames.
	Rows int
	// SeqLen is the positions one full-attention layer attends over: Rows,
	// or one tile's or frame's when each is a sequence of its own.
	SeqLen int
	// Window is the positions a windowed layer attends over; FullLayers of
	// the Layers attend over SeqLen, the rest over Window (Window 0: all
	// layers are full).
	Window, FullLayers int
	// Layers, Hidden (the width), MLP (the MLP's inner width) and HeadDim
	// are the tower's.
	Layers, Hidden, MLP, HeadDim int
	// GatedMLP is a SwiGLU MLP: gate, up and down projections.
	GatedMLP bool
	// GEMMs are the tower's other matrix products, {M, N, K} each.
	GEMMs [][3]int
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
func (e *encoderCache) allocate(s *sequence, id string, it encodeItem) {
	en := &encoderEntry{id: id, tokens: it.tokens}
	e.entries[id] = en
	e.used += it.tokens
	e.hold(s, en)
	e.passTokens += it.tokens
	e.passItems = append(e.passItems, it)
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
	ids   []string
	items []encodeItem
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
	for k, f := range mm {
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
		it := encodeItem{tokens: n}
		if k < len(s.req.MMFLOPs) {
			it.flops = s.req.MMFLOPs[k]
		}
		if k < len(s.req.MMWork) && it.flops != PrecomputedEmbeds {
			it.work = s.req.MMWork[k]
		}
		plan.items = append(plan.items, it)
	}
	return numNew, plan
}

// commitEncoder allocates a scheduled chunk's planned items.
func (c *Core) commitEncoder(s *sequence, plan encodePlan) {
	for i, id := range plan.ids {
		c.enc.allocate(s, id, plan.items[i])
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

// PrecomputedEmbeds is the Request.MMFLOPs value of an item sent as
// embeddings (image_embeds): it holds encoder-cache space and its
// placeholder tokens like any item, but its encoder time is zero.
const PrecomputedEmbeds = -1.0

// takeEncoderTime returns the encoder time of the pass's items and resets
// the pass state. Items whose tower shape is known are priced together
// by the EncoderWorkTimer, as vLLM runs a pass's items of one modality
// through the tower in one forward; the others one by one, by the
// EncoderTimer from their FLOPs (sharded over EncoderWeightShards GPUs in
// weights mode) when the timing model has one and the item's FLOPs are
// known, else at EncoderMsPerToken per token. In data-parallel mode the
// items are dealt to the GPUs (largest first onto the least loaded, each
// at one GPU's speed) and the pass waits for the busiest.
func (c *Core) takeEncoderTime() time.Duration {
	if c.enc == nil || len(c.enc.passItems) == 0 {
		return 0
	}
	items := c.enc.passItems
	dp := c.cfg.MM.EncoderDataParallel
	shards := max(c.cfg.MM.EncoderWeightShards, 1)
	if dp > 1 {
		shards = 1
	}
	costs := make([]float64, len(items))
	works := make([]*EncoderWork, len(items))
	for i, it := range items {
		switch {
		case it.flops == PrecomputedEmbeds:
			// costs[i] = 0: the client ran the encoder
		case c.workTimer != nil && it.work != nil:
			works[i] = it.work
			if dp > 1 { // its cost alone only deals the items to the GPUs
				costs[i] = c.workTimer.EncoderWorkMs([]*EncoderWork{it.work}, shards)
			}
		case c.encTimer != nil && it.flops > 0:
			costs[i] = c.encTimer.EncoderMs(it.flops, it.tokens, shards)
		default:
			costs[i] = float64(it.tokens) * c.cfg.MM.EncoderMsPerToken
		}
	}
	// gpuMs is one GPU's time for a share of the items: the shaped ones
	// in one forward, the rest one after another.
	gpuMs := func(share []int) float64 {
		ms := 0.0
		var batch []*EncoderWork
		for _, i := range share {
			if works[i] != nil {
				batch = append(batch, works[i])
			} else {
				ms += costs[i]
			}
		}
		if len(batch) > 0 {
			ms += c.workTimer.EncoderWorkMs(batch, shards)
		}
		return ms
	}
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	ms := 0.0
	if dp > 1 {
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(costs[b], costs[a]) })
		loads := make([]float64, dp)
		shares := make([][]int, dp)
		for _, i := range order {
			m := 0
			for g := range loads {
				if loads[g] < loads[m] {
					m = g
				}
			}
			loads[m] += costs[i]
			shares[m] = append(shares[m], i)
		}
		for _, sh := range shares {
			ms = max(ms, gpuMs(sh))
		}
	} else {
		ms = gpuMs(order)
	}
	c.enc.passTokens, c.enc.passItems = 0, items[:0]
	return saturatingDuration(ms / c.prefillDiv * float64(time.Millisecond))
}

// FLOPs counts the work's floating-point operations, 2 per
// multiply-accumulate: every layer's four attention projections and MLP
// over Rows, its bidirectional attention (QKᵀ and AV) over SeqLen or
// Window positions, and the other GEMMs.
func (w *EncoderWork) FLOPs() float64 {
	R, d, m := float64(w.Rows), float64(w.Hidden), float64(w.MLP)
	mlp := 2 * d * m
	if w.GatedMLP {
		mlp = 3 * d * m
	}
	full, rest := w.Layers, 0
	if w.Window > 0 {
		full, rest = min(w.FullLayers, w.Layers), w.Layers-min(w.FullLayers, w.Layers)
	}
	seq := float64(w.SeqLen)
	total := float64(w.Layers)*2*R*(4*d*d+mlp) + float64(full)*4*R*seq*d + float64(rest)*4*R*min(float64(w.Window), seq)*d
	for _, g := range w.GEMMs {
		total += 2 * float64(g[0]) * float64(g[1]) * float64(g[2])
	}
	return total
}
