package kv

import "encoding/binary"

// MMFeature is one multimodal item of a prompt as the block hash sees it:
// the item's identifier (vLLM's mm hash, a hex string) and the run of
// placeholder tokens it occupies, [Offset, Offset+Length).
type MMFeature struct {
	Identifier string
	Offset     int
	Length     int
}

// MMKey is one multimodal entry of a block's extra keys: vLLM's
// (identifier, offset) pair, the offset being the item's start relative to
// the block's first token (negative when the item began in an earlier
// block). The offset keeps two blocks of the same item at different
// positions distinct (vLLM v1 kv_cache_utils._gen_mm_extra_hash_keys).
type MMKey struct {
	Identifier string
	Offset     int
}

// mmKeys appends block i's multimodal keys: every feature whose token run
// overlaps the block's tokens [i·bs, (i+1)·bs), in prompt order.
//
// vLLM hashes the prompt's full blocks when the request is created,
// starting at the first item, and every later block (completed by
// generated tokens) starting at the last item only
// (request_block_hasher's curr_mm_idx = -1), so a block at or after
// the prompt's first partial block sees only the last item. The mock
// does the same, so its hashes agree with vLLM's in that corner too.
func (k *Keys) mmKeys(dst []MMKey, i, bs int) []MMKey {
	mm := k.MM
	if len(mm) == 0 {
		return dst
	}
	start, end := i*bs, (i+1)*bs
	if i >= k.PromptLen/bs {
		mm = mm[len(mm)-1:]
	}
	for _, f := range mm {
		if f.Offset >= end {
			break
		}
		if f.Offset+f.Length <= start {
			continue
		}
		dst = append(dst, MMKey{Identifier: f.Identifier, Offset: f.Offset - start})
	}
	return dst
}

// mmChain is a hash chain's multimodal state: the items and scratch for
// one block's keys.
type mmChain struct {
	keys Keys
	buf  []MMKey
}

// blockKeys returns block i's multimodal keys (nil for a nil chain); the
// slice is reused by the next call.
func (m *mmChain) blockKeys(i, bs int) []MMKey {
	if m == nil {
		return nil
	}
	m.buf = m.keys.mmKeys(m.buf[:0], i, bs)
	return m.buf
}

// appendCBORInt appends v as a CBOR integer (major type 0 or 1).
func appendCBORInt(buf []byte, v int) []byte {
	if v >= 0 {
		return appendCBORHead(buf, cborUint, uint64(v))
	}
	return appendCBORHead(buf, cborNeg, uint64(-1-v))
}

// appendMMLocal appends the bytes a multimodal key adds to an xxh3 block's
// local hash input: the identifier, then the offset as 8 little-endian
// bytes (the mock's own layout; docs/kv-hashing.md).
func appendMMLocal(buf []byte, k MMKey) []byte {
	buf = append(buf, k.Identifier...)
	return binary.LittleEndian.AppendUint64(buf, uint64(int64(k.Offset)))
}
