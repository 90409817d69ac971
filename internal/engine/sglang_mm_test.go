package engine

import (
	"slices"
	"testing"

	"github.com/mocker-server/mocker-server/internal/kv"
)

// G6: SGLang keys its radix cache on the prompt with each multimodal item's
// placeholder tokens overwritten by the item's pad value (pad_input_tokens),
// so a request shares exactly the pages before the first item that differs
// from a cached one. The rows are data: two requests of one prompt layout —
// text, an image, text, an image, text — whose images (their pad values)
// vary; B arrives after A finished and the row gives the tokens B finds
// cached. Page size 4; the images' runs start at 10 and 24, so a change in
// the first image keeps pages 0–1 (8 tokens), one in the second keeps
// pages 0–5 (24 tokens), and no change keeps every whole page of B's match
// key (its first 37 tokens: 36).
func TestScenarioG6MultimodalPadValuesKeyTheRadixCache(t *testing.T) {
	const (
		page        = 4
		placeholder = 151655 // <|image_pad|>
	)
	img := slices.Repeat([]uint32{placeholder}, 8)
	prompt := slices.Concat(seqTokens(100, 10), img, seqTokens(200, 6), img, seqTokens(300, 6))
	runs := [2]kv.MMPad{{Offset: 10, Length: 8}, {Offset: 24, Length: 8}}
	// pads gives each image run its pad value: SGLang's items one per
	// image (Qwen-VL), or, with one value for both, one bundled item.
	pads := func(v1, v2 uint32) []kv.MMPad {
		p := runs
		p[0].Value, p[1].Value = v1, v2
		return p[:]
	}
	va, vb, vc := kv.RadixPadValue("image-a"), kv.RadixPadValue("image-b"), kv.RadixPadValue("image-c")
	ab, ac := kv.RadixPadValue("image-a", "image-b"), kv.RadixPadValue("image-a", "image-c")
	for _, row := range []struct {
		name   string
		a, b   []kv.MMPad
		cached int
	}{
		{"same images", pads(va, vb), pads(va, vb), 36},
		{"first image differs", pads(va, vb), pads(vc, vb), 8},
		{"second image differs, one item per image", pads(va, vb), pads(va, vc), 24},
		{"second image differs, one bundled item", pads(ab, ab), pads(ac, ac), 8},
		{"both images differ", pads(va, vb), pads(vb, va), 8},
	} {
		t.Run(row.name, func(t *testing.T) {
			h := newSGLangHarness(t, func(c *Config) { c.BlockSize = page })
			a := h.request(prompt, []uint32{1})
			a.MMPads = row.a
			b := h.request(prompt, []uint32{2})
			b.MMPads = row.b
			h.sim.SubmitAt(0, a)
			h.sim.SubmitAt(msDuration(1000), b)
			h.sim.Run(0)
			if got := finishedByID(t, h)[b.ID].CachedTokens; got != row.cached {
				t.Errorf("B found %d tokens cached, want %d", got, row.cached)
			}
			// Every stored page is a page of A's or B's padded prompt,
			// with the hash a consumer computes from its token ids.
			padded := map[uint64][]uint32{}
			for _, pp := range [][]kv.MMPad{row.a, row.b} {
				key := slices.Clone(prompt)
				for _, p := range pp {
					for i := p.Offset; i < p.Offset+p.Length; i++ {
						key[i] = p.Value
					}
				}
				for i, hash := range kv.RadixPageHashes(key, page) {
					padded[hash] = key[i*page : (i+1)*page]
				}
			}
			stored := 0
			for _, evs := range h.events {
				for _, ev := range evs {
					if ev.Kind != kv.Stored {
						continue
					}
					for i, hash := range ev.BlockHashes {
						stored++
						want, ok := padded[hash]
						if got := ev.TokenIDs[i*page : (i+1)*page]; !ok || !slices.Equal(got, want) {
							t.Errorf("stored page %x with tokens %v is no page of the padded prompts", hash, got)
						}
						if slices.Contains(ev.TokenIDs[i*page:(i+1)*page], placeholder) {
							t.Errorf("a stored page carries the placeholder id, not the pad value")
						}
					}
				}
			}
			// A stores its 9 whole prompt pages, B those past its hit.
			if want := 9 + 9 - row.cached/page; stored != want {
				t.Errorf("%d pages stored, want %d", stored, want)
			}
		})
	}
}

// TestVLLMIgnoresMMPads: the vLLM engine type keys blocks by the items'
// identifiers (extra keys) and publishes the placeholder ids; pad values
// are SGLang's and change nothing there.
func TestVLLMIgnoresMMPads(t *testing.T) {
	const placeholder = 151655
	img := slices.Repeat([]uint32{placeholder}, 8)
	prompt := slices.Concat(seqTokens(100, 10), img, seqTokens(200, 14))
	h := newHarness(t, func(c *Config) { c.BlockSize = 4 })
	submit := func(ms float64, id string) *Request {
		r := h.request(prompt, []uint32{1})
		r.MM = []kv.MMFeature{{Identifier: id, Offset: 10, Length: 8}}
		r.MMPads = []kv.MMPad{{Offset: 10, Length: 8, Value: kv.RadixPadValue(id)}}
		h.sim.SubmitAt(msDuration(ms), r)
		return r
	}
	submit(0, "image-a")
	b := submit(1000, "image-b")
	h.sim.Run(0)
	if got := finishedByID(t, h)[b.ID].CachedTokens; got != 8 {
		t.Errorf("B found %d tokens cached, want 8 (the blocks before the image)", got)
	}
	for _, evs := range h.events {
		for _, ev := range evs {
			if ev.Kind == kv.Stored && slices.Contains(ev.TokenIDs, kv.RadixPadValue("image-a")) {
				t.Fatalf("a vLLM block carries SGLang's pad value: %v", ev.TokenIDs)
			}
		}
	}
}
