package kv

// Chunk sizes of the recorder's arenas, in elements.
const (
	hashChunk  = 256
	tokenChunk = 4096
	extraChunk = 256
)

// recorder accumulates events until TakeEvents hands them over.
//
// Event slices are carved from shared arenas, so that recording one event
// (one Removed per evicted hash is common under memory pressure) rarely
// allocates. Carving only ever moves forward and every carved slice has its
// capacity clipped to its length, so a slice handed to the caller is never
// written again and appending to it cannot clobber a neighbour.
type recorder struct {
	events []Event
	hashes []uint64
	tokens []uint32
	extras [][]string
	// countOnly skips building events (see Pool.CountEventsOnly); counts
	// is kept in both modes.
	countOnly bool
	counts    [NumEventKinds]int
}

// carve returns a fresh slice of n elements from arena, starting a new chunk
// of chunk elements when the current one is too short. Requests of at least
// chunk elements get their own allocation and leave the arena alone.
func carve[T any](arena *[]T, n, chunk int) []T {
	if n >= chunk {
		return make([]T, n)
	}
	a := *arena
	if cap(a)-len(a) < n {
		a = make([]T, 0, chunk)
	}
	l := len(a)
	a = a[:l+n]
	*arena = a
	return a[l : l+n : l+n]
}

func (r *recorder) removed(h uint64) {
	r.counts[Removed]++
	if r.countOnly {
		return
	}
	hs := carve(&r.hashes, 1, hashChunk)
	hs[0] = h
	r.events = append(r.events, Event{Kind: Removed, BlockHashes: hs})
}

// stored records one Stored event for blocks [first, end) of a sequence
// with the given hashes, tokens and hash keys.
func (r *recorder) stored(hashes []uint64, tokens []uint32, first, end, bs int, keys Keys) {
	r.counts[Stored]++
	if r.countOnly {
		return
	}
	n := end - first
	ev := Event{
		Kind:        Stored,
		BlockHashes: carve(&r.hashes, n, hashChunk),
		TokenIDs:    carve(&r.tokens, n*bs, tokenChunk),
		BlockSize:   bs,
		ExtraKeys:   carve(&r.extras, n, extraChunk),
		Adapter:     keys.Adapter,
	}
	copy(ev.BlockHashes, hashes[first:end])
	copy(ev.TokenIDs, tokens[first*bs:end*bs])
	if first > 0 {
		ev.ParentBlockHash, ev.HasParent = hashes[first-1], true
	}
	if keys.Salt != "" || keys.Adapter.Name != "" {
		// vLLM's per-block extra keys: the adapter name on every block,
		// the cache salt on the first.
		var one []string
		if keys.Adapter.Name != "" {
			one = []string{keys.Adapter.Name}
		}
		for i := range n {
			ev.ExtraKeys[i] = keys.extraKeys(first+i, one)
		}
	}
	if len(keys.MM) > 0 {
		// Rare enough (multimodal prompts' first stores) to allocate.
		ev.MMKeys = make([][]MMKey, n)
		var flat []MMKey
		for i := range n {
			from := len(flat)
			flat = keys.mmKeys(flat, first+i, bs)
			if len(flat) > from {
				ev.MMKeys[i] = flat[from:len(flat):len(flat)]
			}
		}
	}
	r.events = append(r.events, ev)
}

func (r *recorder) allCleared() {
	r.counts[AllCleared]++
	if r.countOnly {
		return
	}
	r.events = append(r.events, Event{Kind: AllCleared})
}

// take returns the recorded events and forgets them.
// takeCounts returns the events counted by kind since the previous call.
func (r *recorder) takeCounts() [NumEventKinds]int {
	counts := r.counts
	r.counts = [NumEventKinds]int{}
	return counts
}

func (r *recorder) take() []Event {
	ev := r.events
	r.events = nil
	return ev
}

// removedOn records a BlockRemoved of h on an offload medium.
func (r *recorder) removedOn(h uint64, m Medium) {
	r.counts[Removed]++
	if r.countOnly {
		return
	}
	hs := carve(&r.hashes, 1, hashChunk)
	hs[0] = h
	r.events = append(r.events, Event{Kind: Removed, BlockHashes: hs, Medium: m})
}

// storedOn records a BlockStored of h on an offload medium. Like vLLM's
// offloading connector it carries no parent, tokens or adapter: the block
// was announced with those on the GPU.
func (r *recorder) storedOn(h uint64, blockSize int, m Medium) {
	r.counts[Stored]++
	if r.countOnly {
		return
	}
	hs := carve(&r.hashes, 1, hashChunk)
	hs[0] = h
	r.events = append(r.events, Event{Kind: Stored, BlockHashes: hs, BlockSize: blockSize, Medium: m})
}
