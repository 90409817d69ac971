package hftokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxTokenID bounds ids (16.7M, 60× today's largest vocabularies), so that
// a corrupt file cannot make Load allocate per-id tables of gigabytes.
const maxTokenID = 1 << 24

// noToken marks a symbol that is not in the vocabulary (a character
// SentencePiece-style vocabularies lack); it never merges.
const noToken = -1

// bpeModel is a BPE model over integer ids: the initial symbols of a piece
// are its bytes (byte-level vocabularies) or its characters, and merges are
// looked up by id pair.
type bpeModel struct {
	byteLevel bool
	// tokenIDs maps vocabulary strings to ids; like tokenizers.js it also
	// holds the added tokens, so ignore_merges and byte fallback see them.
	// Load replaces it by frozen once the tokenizer is complete.
	tokenIDs map[string]uint32
	frozen   *vocabTable
	// vocab is the model's own id → string table, before added tokens.
	vocab []string
	// byteSymbol is, for byte-level models, the id of each byte's
	// alphabet character (noToken when absent).
	byteSymbol [256]int32
	// merges maps (left<<32 | right) to (rank<<32 | merged id).
	merges       map[uint64]uint64
	ignoreMerges bool
	byteFallback bool
	// bmpSymbol is, for character-level models, the id of each
	// single-character token of the Basic Multilingual Plane (noToken when
	// absent): the initial symbols of a word without a map lookup.
	bmpSymbol []int32
	// fallbackIDs are the ids of "<0x00>" … "<0xFF>" (noToken when absent).
	fallbackIDs [256]int32
	unkID       int32
	fuseUnk     bool
	cache       *wordCache // nil: no cache (benchmarks measure its worth)
}

func compileBPE(m modelJSON, byteLevel bool) (*bpeModel, error) {
	switch m.Type {
	case "BPE":
	case "":
		if isNull(m.Merges) {
			return nil, fmt.Errorf("model: no type and no merges: only BPE models are supported")
		}
	default:
		return nil, fmt.Errorf("model type %q is not supported (only BPE)", m.Type)
	}
	if m.Dropout != nil && *m.Dropout > 0 {
		return nil, fmt.Errorf("model: BPE dropout %v is not supported (encoding would not be deterministic)", *m.Dropout)
	}
	if m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "" {
		return nil, fmt.Errorf("model: continuing_subword_prefix %q is not supported", *m.ContinuingSubwordPrefix)
	}
	if m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "" {
		return nil, fmt.Errorf("model: end_of_word_suffix %q is not supported", *m.EndOfWordSuffix)
	}
	model := &bpeModel{
		byteLevel:    byteLevel,
		ignoreMerges: m.IgnoreMerges,
		byteFallback: m.ByteFallback,
		fuseUnk:      m.FuseUnk,
		unkID:        noToken,
		cache:        newWordCache(),
	}
	var err error
	if model.tokenIDs, err = parseVocab(m.Vocab); err != nil {
		return nil, fmt.Errorf("model.vocab: %w", err)
	}
	if len(model.tokenIDs) == 0 {
		return nil, fmt.Errorf("model.vocab: empty")
	}
	for token, id := range model.tokenIDs {
		if id >= maxTokenID {
			return nil, fmt.Errorf("model.vocab: token %q has id %d, beyond %d", token, id, maxTokenID-1)
		}
		if int(id) >= len(model.vocab) {
			model.vocab = append(model.vocab, make([]string, int(id)+1-len(model.vocab))...)
		}
		model.vocab[id] = token
	}
	if m.UnkToken != nil {
		if id, ok := model.tokenIDs[*m.UnkToken]; ok {
			model.unkID = int32(id)
		}
	}
	for b := range model.byteSymbol {
		model.byteSymbol[b] = model.lookup(string(byteLevelAlphabet[b]))
		model.fallbackIDs[b] = model.lookup(fmt.Sprintf("<0x%02X>", b))
	}
	if !byteLevel {
		model.bmpSymbol = make([]int32, 0x10000)
		for i := range model.bmpSymbol {
			model.bmpSymbol[i] = noToken
		}
		for token, id := range model.tokenIDs {
			if r, size := utf8.DecodeRuneInString(token); size == len(token) && r < 0x10000 && r != utf8.RuneError {
				model.bmpSymbol[r] = int32(id)
			}
		}
	}
	if err := model.loadMerges(m.Merges); err != nil {
		return nil, fmt.Errorf("model.merges: %w", err)
	}
	return model, nil
}

// tokenID returns the id of a vocabulary (or added) token string.
func (m *bpeModel) tokenID(token string) (uint32, bool) {
	if m.frozen != nil {
		return m.frozen.id(token)
	}
	id, ok := m.tokenIDs[token]
	return id, ok
}

func (m *bpeModel) lookup(token string) int32 {
	if id, ok := m.tokenID(token); ok {
		return int32(id)
	}
	return noToken
}

// loadMerges accepts both spellings of merges: ["a b", …] and
// [["a", "b"], …]. A merge's rank is its position.
func (m *bpeModel) loadMerges(raw json.RawMessage) error {
	if isNull(raw) {
		m.merges = map[uint64]uint64{}
		return nil
	}
	pairs, err := parseMerges(raw)
	if err != nil {
		return err
	}
	m.merges = make(map[uint64]uint64, len(pairs))
	for rank, pair := range pairs {
		left, okLeft := m.tokenIDs[pair[0]]
		right, okRight := m.tokenIDs[pair[1]]
		merged, okMerged := m.tokenIDs[pair[0]+pair[1]]
		if !okLeft || !okRight || !okMerged {
			return fmt.Errorf("merge %d (%q, %q): token not in the vocabulary", rank, pair[0], pair[1])
		}
		key := uint64(left)<<32 | uint64(right)
		if _, dup := m.merges[key]; !dup {
			m.merges[key] = uint64(rank)<<32 | uint64(merged)
		}
	}
	return nil
}

// cutMerge splits an "a b" merge at its first space, as tokenizers.js
// does (split(" ", 2)).
func cutMerge(joined string) (left, right string, ok bool) {
	return strings.Cut(joined, " ")
}

// maxCachedWord is the longest piece (in bytes) whose encoding is cached;
// longer pieces are rare and would crowd the cache.
const maxCachedWord = 256

// encodeWord appends the ids of one pre-tokenized piece. unkBefore says
// whether the previous id of the same section was the unknown token (for
// fuse_unk); the returned flag says the same of the last appended id.
func (m *bpeModel) encodeWord(piece string, out []uint32, unkBefore bool) ([]uint32, bool) {
	cacheable := m.cache != nil && len(piece) <= maxCachedWord
	if cacheable {
		if ids, ok := m.cache.get(piece); ok {
			return m.appendFused(out, ids, unkBefore)
		}
	}
	ids := m.encodeUncached(piece)
	if cacheable {
		m.cache.put(piece, ids)
	}
	return m.appendFused(out, ids, unkBefore)
}

func (m *bpeModel) appendFused(out, ids []uint32, unkBefore bool) ([]uint32, bool) {
	if !m.fuseUnk || m.unkID == noToken {
		return append(out, ids...), false
	}
	unk := uint32(m.unkID)
	for _, id := range ids {
		if id == unk && unkBefore {
			continue
		}
		out = append(out, id)
		unkBefore = id == unk
	}
	return out, unkBefore
}

// symbol is one node of the doubly linked list a piece is merged in.
type symbol struct {
	id         int32
	start, end int32 // byte range in the piece
	prev, next int32 // neighbours; -1 at the ends
}

func (m *bpeModel) encodeUncached(piece string) []uint32 {
	if m.ignoreMerges {
		key := piece
		if m.byteLevel {
			key = byteLevelEncode(piece)
		}
		if id, ok := m.tokenID(key); ok {
			return []uint32{id}
		}
	}
	if m.symbolCount(piece) <= smallWord {
		return m.encodeSmall(piece)
	}
	return m.encodeLong(piece)
}

// encodeLong merges a word of any length with a heap of candidate merges.
func (m *bpeModel) encodeLong(piece string) []uint32 {
	symbols := m.initialSymbols(piece)
	m.mergeAll(symbols)
	ids := make([]uint32, 0, len(symbols))
	for i := int32(0); i >= 0 && int(i) < len(symbols); i = symbols[i].next {
		s := symbols[i]
		if s.id != noToken {
			ids = append(ids, uint32(s.id))
			continue
		}
		ids = m.appendUnknown(ids, piece[s.start:s.end])
	}
	return ids
}

// appendUnknown handles a character missing from the vocabulary: its
// UTF-8 bytes as <0xNN> tokens when byte_fallback is on and all exist,
// otherwise the unknown token if there is one, otherwise nothing (as
// tokenizers.js does).
func (m *bpeModel) appendUnknown(ids []uint32, text string) []uint32 {
	if m.byteFallback {
		complete := true
		for i := 0; i < len(text); i++ {
			complete = complete && m.fallbackIDs[text[i]] != noToken
		}
		if complete {
			for i := 0; i < len(text); i++ {
				ids = append(ids, uint32(m.fallbackIDs[text[i]]))
			}
			return ids
		}
	}
	if m.unkID != noToken {
		ids = append(ids, uint32(m.unkID))
	}
	return ids
}

// smallWord is the longest word (in initial symbols) merged by
// encodeSmall; nearly every pre-tokenized word is shorter.
const smallWord = 64

func (m *bpeModel) symbolCount(piece string) int {
	if m.byteLevel {
		return len(piece)
	}
	return utf8.RuneCountInString(piece)
}

// symbolID is the id of the initial symbol piece[start:end] (one byte or
// one character), or noToken.
func (m *bpeModel) symbolID(piece string, start, end int) int32 {
	if m.byteLevel {
		return m.byteSymbol[piece[start]]
	}
	if r, size := utf8.DecodeRuneInString(piece[start:end]); r < 0x10000 && r != utf8.RuneError && size == end-start {
		return m.bmpSymbol[r]
	}
	return m.lookup(piece[start:end])
}

// noMerge is the rank of a pair that does not merge.
const noMerge = ^uint32(0)

// pairRank returns the rank and result of merging left and right.
func (m *bpeModel) pairRank(left, right int32) (uint32, int32) {
	if left == noToken || right == noToken {
		return noMerge, noToken
	}
	v, ok := m.merges[uint64(left)<<32|uint64(right)]
	if !ok {
		return noMerge, noToken
	}
	return uint32(v >> 32), int32(uint32(v))
}

// encodeSmall merges a short word in fixed arrays on the stack: the rank
// of every adjacent pair is kept, the lowest (leftmost on ties) merges,
// and only the two pairs next to it are looked up again. Same order as
// mergeAll, without its heap and allocations.
func (m *bpeModel) encodeSmall(piece string) []uint32 {
	var (
		ids    [smallWord]int32
		starts [smallWord + 1]int32 // symbol i is piece[starts[i]:starts[i+1]]
		ranks  [smallWord]uint32    // rank of the pair (i, i+1)
		merged [smallWord]int32     // its result
	)
	n := 0
	for i := 0; i < len(piece); {
		size := 1
		if !m.byteLevel {
			_, size = utf8.DecodeRuneInString(piece[i:])
		}
		starts[n] = int32(i)
		ids[n] = m.symbolID(piece, i, i+size)
		n++
		i += size
	}
	starts[n] = int32(len(piece))
	for i := 0; i < n-1; i++ {
		ranks[i], merged[i] = m.pairRank(ids[i], ids[i+1])
	}
	for n > 1 {
		best, bestRank := -1, noMerge
		for i := 0; i < n-1; i++ {
			if ranks[i] < bestRank {
				best, bestRank = i, ranks[i]
			}
		}
		if best < 0 {
			break
		}
		ids[best] = merged[best]
		copy(ids[best+1:n-1], ids[best+2:n])
		copy(starts[best+1:n], starts[best+2:n+1])
		if best+1 <= n-2 { // the pairs right of the merged one move left
			copy(ranks[best+1:n-2], ranks[best+2:n-1])
			copy(merged[best+1:n-2], merged[best+2:n-1])
		}
		n--
		if best > 0 {
			ranks[best-1], merged[best-1] = m.pairRank(ids[best-1], ids[best])
		}
		if best < n-1 {
			ranks[best], merged[best] = m.pairRank(ids[best], ids[best+1])
		}
	}
	out := make([]uint32, 0, n)
	for i := 0; i < n; i++ {
		if ids[i] != noToken {
			out = append(out, uint32(ids[i]))
			continue
		}
		out = m.appendUnknown(out, piece[starts[i]:starts[i+1]])
	}
	return out
}

func (m *bpeModel) initialSymbols(piece string) []symbol {
	n := len(piece)
	if !m.byteLevel {
		n = utf8.RuneCountInString(piece)
	}
	symbols := make([]symbol, 0, n)
	add := func(id int32, start, end int) {
		i := int32(len(symbols))
		symbols = append(symbols, symbol{id: id, start: int32(start), end: int32(end), prev: i - 1, next: i + 1})
	}
	if m.byteLevel {
		for i := 0; i < len(piece); i++ {
			add(m.byteSymbol[piece[i]], i, i+1)
		}
	} else {
		for i := 0; i < len(piece); {
			r, size := utf8.DecodeRuneInString(piece[i:])
			if r < 0x10000 && r != utf8.RuneError {
				add(m.bmpSymbol[r], i, i+size)
			} else {
				add(m.lookup(piece[i:i+size]), i, i+size)
			}
			i += size
		}
	}
	if len(symbols) > 0 {
		symbols[len(symbols)-1].next = -1
	}
	return symbols
}

// mergeCandidate is a possible merge of symbols[pos] with its right
// neighbour, valid while both still hold the ids it was made from.
type mergeCandidate struct {
	rank        uint32
	pos         int32
	left, right int32
	merged      int32
}

func (a mergeCandidate) before(b mergeCandidate) bool {
	return a.rank < b.rank || a.rank == b.rank && a.pos < b.pos
}

// mergeAll applies merges lowest rank first, leftmost first among equal
// ranks, until none applies — the order of both reference
// implementations.
func (m *bpeModel) mergeAll(symbols []symbol) {
	if len(symbols) < 2 {
		return
	}
	var queue candidateHeap
	consider := func(pos int32) {
		if pos < 0 {
			return
		}
		next := symbols[pos].next
		if next < 0 || symbols[pos].id == noToken || symbols[next].id == noToken {
			return
		}
		if v, ok := m.merges[uint64(symbols[pos].id)<<32|uint64(symbols[next].id)]; ok {
			queue.push(mergeCandidate{rank: uint32(v >> 32), pos: pos, left: symbols[pos].id, right: symbols[next].id, merged: int32(uint32(v))})
		}
	}
	for i := range symbols {
		consider(int32(i))
	}
	for queue.len() > 0 {
		c := queue.pop()
		left := &symbols[c.pos]
		if left.id != c.left || left.next < 0 {
			continue
		}
		right := &symbols[left.next]
		if right.id != c.right {
			continue
		}
		left.id = c.merged
		left.end = right.end
		left.next = right.next
		if right.next >= 0 {
			symbols[right.next].prev = c.pos
		}
		right.id = noToken
		right.next, right.prev = -1, -1
		consider(left.prev)
		consider(c.pos)
	}
}

// candidateHeap is a binary min-heap of merge candidates.
type candidateHeap struct{ items []mergeCandidate }

func (h *candidateHeap) len() int { return len(h.items) }

func (h *candidateHeap) push(c mergeCandidate) {
	h.items = append(h.items, c)
	for i := len(h.items) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h.items[i].before(h.items[parent]) {
			break
		}
		h.items[i], h.items[parent] = h.items[parent], h.items[i]
		i = parent
	}
}

func (h *candidateHeap) pop() mergeCandidate {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	for i := 0; ; {
		smallest, l, r := i, 2*i+1, 2*i+2
		if l < last && h.items[l].before(h.items[smallest]) {
			smallest = l
		}
		if r < last && h.items[r].before(h.items[smallest]) {
			smallest = r
		}
		if smallest == i {
			break
		}
		h.items[i], h.items[smallest] = h.items[smallest], h.items[i]
		i = smallest
	}
	return top
}
