package kv

import (
	"crypto/sha256"
	"encoding/binary"
)

// SGLang keys its radix cache on token ids only. A multimodal item enters
// those keys through its pad value: the scheduler overwrites the item's
// placeholder tokens in the prompt with the pad value
// (MultiModalityDataPaddingPattern*.pad_input_tokens, called from
// Scheduler.handle_generate_request on req.origin_input_ids) before the
// request is matched or inserted, so the radix keys, the pages' hashes and
// the KV events' token ids carry it, and two prompts with the same text and
// different images part at the first padded position (docs/multimodal.md).

// RadixPadMod bounds a pad value: SGLang's MultimodalDataItem.set_pad_value
// takes the item's hash modulo 2^30.
const RadixPadMod = 1 << 30

// An MMPad is a run of prompt positions SGLang writes one item's pad value
// over: [Offset, Offset+Length) all become Value.
type MMPad struct {
	Offset int
	Length int
	Value  uint32
}

// RadixPadValue is the pad value of one SGLang multimodal item made of the
// mock's items ids (their multimodal hashes, in prompt order): SGLang's
// data_hash — the first eight bytes of a SHA-256 digest as a big-endian
// unsigned integer — modulo 2^30. SGLang hashes the processed feature
// tensor (the pixel values the HF processor made); the mock has no pixels,
// so it hashes the ids, joined by NUL when SGLang bundles several items
// into one. Equal items give equal pad values and different ones differ
// (but for a 2^-30 collision, as in SGLang).
func RadixPadValue(ids ...string) uint32 {
	h := sha256.New()
	for i, id := range ids {
		if i > 0 {
			h.Write([]byte{0})
		}
		h.Write([]byte(id))
	}
	var sum [sha256.Size]byte
	return uint32(binary.BigEndian.Uint64(h.Sum(sum[:0])[:8]) % RadixPadMod)
}

// PadRadixKey overwrites the positions of tokens that pads cover with their
// values, as SGLang's pad_input_tokens does; the parts of a run outside
// tokens are ignored.
func PadRadixKey(tokens []uint32, pads []MMPad) {
	for _, p := range pads {
		lo := max(p.Offset, 0)
		if p.Length <= 0 || lo >= len(tokens) {
			continue
		}
		hi := len(tokens)
		if p.Length < hi-p.Offset {
			hi = p.Offset + p.Length
		}
		for i := lo; i < hi; i++ {
			tokens[i] = p.Value
		}
	}
}
