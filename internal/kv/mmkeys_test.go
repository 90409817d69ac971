package kv

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
)

// vllmBlockMMKeys transcribes vLLM's request_block_hasher walk
// (kv_cache_utils.py, _gen_mm_extra_hash_keys): the prompt's full blocks
// are hashed at creation from item 0 carrying the item index between
// blocks; each later block starts again from the last item.
func vllmBlockMMKeys(mm []MMFeature, promptLen, bs, blocks int) [][]MMKey {
	out := make([][]MMKey, blocks)
	gen := func(start, end, startIdx int) ([]MMKey, int) {
		var keys []MMKey
		if len(mm) == 0 {
			return nil, startIdx
		}
		last := mm[len(mm)-1]
		if last.Offset+last.Length <= start {
			return nil, startIdx
		}
		if startIdx < 0 {
			startIdx += len(mm)
		}
		cur := startIdx
		for cur < len(mm) {
			f := mm[cur]
			if end > f.Offset {
				if start >= f.Offset+f.Length {
					cur++
					continue
				}
				keys = append(keys, MMKey{f.Identifier, f.Offset - start})
				if end >= f.Offset+f.Length {
					cur++
				} else {
					break
				}
			} else {
				break
			}
		}
		return keys, cur
	}
	idx := 0
	for i := 0; i < promptLen/bs && i < blocks; i++ {
		out[i], idx = gen(i*bs, (i+1)*bs, idx)
	}
	for i := promptLen / bs; i < blocks; i++ {
		out[i], _ = gen(i*bs, (i+1)*bs, -1)
	}
	return out
}

func TestMMKeysFollowVLLMsWalk(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 2))
	for trial := range 2000 {
		bs := 1 + r.IntN(20)
		var mm []MMFeature
		pos := r.IntN(30)
		for n := r.IntN(5); n > 0; n-- {
			l := 1 + r.IntN(40)
			mm = append(mm, MMFeature{Identifier: string(rune('a' + len(mm))), Offset: pos, Length: l})
			pos += l + r.IntN(3)*r.IntN(10)
		}
		promptLen := pos + r.IntN(30)
		blocks := (promptLen + r.IntN(60)) / bs
		want := vllmBlockMMKeys(mm, promptLen, bs, blocks)
		k := Keys{MM: mm, PromptLen: promptLen}
		for i := range blocks {
			got := k.mmKeys(nil, i, bs)
			if !slices.Equal(got, want[i]) {
				t.Fatalf("trial %d bs=%d prompt=%d mm=%v block %d: keys %v, want %v", trial, bs, promptLen, mm, i, got, want[i])
			}
		}
	}
}

// TestSHA256MMBlockLayout checks a multimodal block's CBOR against the
// canonical encoder: [parent, tokens, [adapter, [id, off]..., salt]].
func TestSHA256MMBlockLayout(t *testing.T) {
	const bs = 4
	h := newTestHasher(t, AlgoSHA256CBOR, "0", bs)
	mm := []MMFeature{{Identifier: "img0", Offset: 2, Length: 5}, {Identifier: "img1", Offset: 7, Length: 1}}
	tokens := []uint32{1, 2, 9, 9, 9, 9, 9, 9, 3, 4, 5, 6}
	c := h.NewKeyedChain(Keys{Salt: "s", Adapter: Adapter{ID: 1, Name: "sql"}, MM: mm, PromptLen: len(tokens)})
	var parent [sha256.Size]byte = h.noneHash
	for i := range 3 {
		h.Extend(&c, tokens, i+1)
		extra := []any{"sql"}
		for _, k := range (&Keys{MM: mm, PromptLen: len(tokens)}).mmKeys(nil, i, bs) {
			extra = append(extra, []any{k.Identifier, k.Offset})
		}
		if i == 0 {
			extra = append(extra, "s")
		}
		want := mustCanonical(t, []any{parent[:], tokens[i*bs : (i+1)*bs], extra})
		if !bytes.Equal(c.buf, want) {
			t.Fatalf("block %d CBOR\n% x\nwant\n% x", i, c.buf, want)
		}
		parent = sha256.Sum256(want)
		if got := c.Hashes()[i]; got != binary.BigEndian.Uint64(parent[24:]) {
			t.Fatalf("block %d hash %#x", i, got)
		}
	}
	// Block 1 holds the end of img0 (offset -2) and all of img1 (3).
	if got := (&Keys{MM: mm, PromptLen: len(tokens)}).mmKeys(nil, 1, bs); !slices.Equal(got, []MMKey{{"img0", -2}, {"img1", 3}}) {
		t.Errorf("block 1 keys %v", got)
	}
}

// TestMMHashesShareOnlyBlocksBeforeTheItem: two prompts with the same
// tokens and different images share exactly the blocks before the first
// block the image touches; the same image shares all.
func TestMMHashesShareOnlyBlocksBeforeTheItem(t *testing.T) {
	const bs = 16
	tokens := randomTokens(rand.New(rand.NewPCG(1, 1)), 10*bs)
	for _, algo := range []string{AlgoXXH3, AlgoSHA256CBOR} {
		h := newTestHasher(t, algo, "0", bs)
		chain := func(id string) []uint64 {
			c := h.NewKeyedChain(Keys{MM: []MMFeature{{Identifier: id, Offset: 37, Length: 64}}, PromptLen: len(tokens)})
			h.Extend(&c, tokens, 10)
			return c.Hashes()
		}
		a, b, a2 := chain("aaaa"), chain("bbbb"), chain("aaaa")
		if !slices.Equal(a, a2) {
			t.Errorf("%s: same image, different hashes", algo)
		}
		for i := range 10 {
			if same := a[i] == b[i]; same != (i < 37/bs) {
				t.Errorf("%s: block %d shared=%v", algo, i, same)
			}
		}
	}
}
