package hftokenizer

import "hash/maphash"

// vocabTable is a loaded tokenizer's vocabulary in its frozen form: every
// id's token string in one string, and a string → id index of plain
// integers. Qwen3's 151,669 tokens cost 20 MB as a map[string]uint32 plus a
// []string (a string header and a map bucket entry per token, all of them
// pointers the garbage collector scans on every cycle and headroom its heap
// goal doubles). Frozen they take under 4 MB with no pointers at all, so a
// server serving with the model's tokenizer keeps a heap, and a per-token
// cost, close to the built-in tokenizer's.
type vocabTable struct {
	// text holds every id's token string in id order; id's string is
	// text[start(id):ends[id]]. An id with no token has an empty string.
	text string
	ends []uint32
	// slots is an open-addressing hash index (linear probing) from a
	// token string to id+1; 0 marks an empty slot. It holds the tokens
	// whose string is their id's own string, which is every token of a
	// well-formed vocabulary.
	slots []uint32
	seed  maphash.Seed
	// aliases holds the rare keys that map to an id whose own string is a
	// different one (a vocabulary listing two strings for one id, or an
	// added token whose content differs from the vocabulary's string).
	aliases map[string]uint32
}

// newVocabTable freezes the id → string table and the string → id map the
// loader built.
func newVocabTable(tokens []string, ids map[string]uint32) *vocabTable {
	size := 0
	for _, token := range tokens {
		size += len(token)
	}
	text := make([]byte, 0, size)
	v := &vocabTable{ends: make([]uint32, len(tokens)), seed: maphash.MakeSeed()}
	for id, token := range tokens {
		text = append(text, token...)
		v.ends[id] = uint32(len(text))
	}
	v.text = string(text)

	// At most half full, so a lookup probes about 1.5 slots on average.
	slotCount := 16
	for slotCount < 2*len(ids) {
		slotCount *= 2
	}
	v.slots = make([]uint32, slotCount)
	for key, id := range ids {
		if int(id) >= len(tokens) || tokens[id] != key {
			if v.aliases == nil {
				v.aliases = map[string]uint32{}
			}
			v.aliases[key] = id
			continue
		}
		slot := v.home(key)
		for v.slots[slot] != 0 {
			slot = (slot + 1) & uint64(len(v.slots)-1)
		}
		v.slots[slot] = id + 1
	}
	return v
}

func (v *vocabTable) home(key string) uint64 {
	return maphash.String(v.seed, key) & uint64(len(v.slots)-1)
}

// size is the number of ids (the largest id plus one).
func (v *vocabTable) size() int { return len(v.ends) }

// token returns id's string, "" when id has none or is out of range.
func (v *vocabTable) token(id uint32) string {
	if int(id) >= len(v.ends) {
		return ""
	}
	start := uint32(0)
	if id > 0 {
		start = v.ends[id-1]
	}
	return v.text[start:v.ends[id]]
}

// id returns the id of a token string.
func (v *vocabTable) id(key string) (uint32, bool) {
	if v.aliases != nil {
		if id, ok := v.aliases[key]; ok {
			return id, true
		}
	}
	mask := uint64(len(v.slots) - 1)
	for slot := v.home(key); ; slot = (slot + 1) & mask {
		entry := v.slots[slot]
		if entry == 0 {
			return 0, false
		}
		if v.token(entry-1) == key {
			return entry - 1, true
		}
	}
}
