package events

import (
	"encoding/binary"
	"math"
	"reflect"
	"testing"

	"github.com/mocker-server/mocker-server/internal/kv"
)

// FuzzEncodeRoundTrip builds KV-event batches from fuzz input, encodes them
// with EncodeBatch, decodes them with vmihailenco/msgpack (an independent
// decoder) and compares with the structure the events describe.
func FuzzEncodeRoundTrip(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, 1.5, 0, false, "")
	f.Add([]byte{1, 255, 255, 255, 255, 255, 255, 255, 255, 0x80, 0, 0, 0}, 1e9, 3, true, "salt")
	f.Add([]byte{2}, -0.0, 255, false, "")
	f.Add([]byte{0, 8, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 0, 1, 0, 0xff, 0xff}, math.Inf(1), 1<<20, true, "ünïcödé")
	f.Fuzz(func(t *testing.T, data []byte, ts float64, rank int, array bool, salt string) {
		if math.IsNaN(ts) || rank < 0 {
			t.Skip()
		}
		events := eventsFrom(data, salt)
		enc := EncodingMap
		if array {
			enc = EncodingArray
		}
		got := normalize(decodeAny(t, EncodeBatch(nil, ts, events, rank, enc)))
		want := []any{ts, expectEvents(events, array), uint64(rank)}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip:\n got %#v\nwant %#v", got, want)
		}
	})
}

// eventsFrom turns bytes into up to a few events of every kind.
func eventsFrom(data []byte, salt string) []kv.Event {
	var out []kv.Event
	for len(data) > 0 && len(out) < 8 {
		kind := kv.EventKind(data[0]%3 + 1)
		data = data[1:]
		e := kv.Event{Kind: kind}
		if kind == kv.AllCleared {
			out = append(out, e)
			continue
		}
		nBlocks := 0
		if len(data) > 0 {
			nBlocks = int(data[0] % 4)
			data = data[1:]
		}
		for range nBlocks {
			var h [8]byte
			data = data[copy(h[:], data):]
			e.BlockHashes = append(e.BlockHashes, binary.BigEndian.Uint64(h[:]))
		}
		if kind == kv.Stored {
			e.BlockSize = 2
			for range nBlocks * e.BlockSize {
				var tok [4]byte
				data = data[copy(tok[:], data):]
				e.TokenIDs = append(e.TokenIDs, binary.BigEndian.Uint32(tok[:]))
			}
			if len(data) > 0 && data[0]&1 == 1 {
				e.HasParent, e.ParentBlockHash = true, uint64(data[0])<<40|uint64(len(data))
			}
			if salt != "" && nBlocks > 0 {
				e.ExtraKeys = make([][]string, nBlocks)
				e.ExtraKeys[0] = []string{salt}
			}
		}
		out = append(out, e)
	}
	return out
}

// expectEvents is the generic form vLLM's msgspec encoding of events has.
func expectEvents(events []kv.Event, array bool) []any {
	out := make([]any, 0, len(events))
	for _, e := range events {
		hashes := make([]any, len(e.BlockHashes))
		for i, h := range e.BlockHashes {
			hashes[i] = h
		}
		switch e.Kind {
		case kv.AllCleared:
			if array {
				out = append(out, []any{"AllBlocksCleared"})
			} else {
				out = append(out, map[string]any{"type": "AllBlocksCleared"})
			}
		case kv.Removed:
			if array {
				out = append(out, []any{"BlockRemoved", hashes, "GPU"})
			} else {
				out = append(out, map[string]any{"type": "BlockRemoved", "block_hashes": hashes, "medium": "GPU", "group_idx": uint64(0)})
			}
		case kv.Stored:
			var parent any
			if e.HasParent {
				parent = e.ParentBlockHash
			}
			tokens := make([]any, len(e.TokenIDs))
			for i, tok := range e.TokenIDs {
				tokens[i] = uint64(tok)
			}
			if array {
				out = append(out, []any{"BlockStored", hashes, parent, tokens, uint64(e.BlockSize), nil, "GPU", nil})
				continue
			}
			extra := make([]any, len(e.BlockHashes))
			for i := range extra {
				if i < len(e.ExtraKeys) && e.ExtraKeys[i] != nil {
					keys := make([]any, len(e.ExtraKeys[i]))
					for k, s := range e.ExtraKeys[i] {
						keys[k] = s
					}
					extra[i] = keys
				}
			}
			out = append(out, map[string]any{"type": "BlockStored", "block_hashes": hashes, "parent_block_hash": parent,
				"token_ids": tokens, "block_size": uint64(e.BlockSize), "lora_id": nil, "medium": "GPU", "lora_name": nil,
				"extra_keys": extra, "group_idx": uint64(0), "kv_cache_spec_kind": "full_attention"})
		}
	}
	return out
}

// normalize turns every decoded integer into uint64 (msgpack's smallest
// forms decode as int64 or uint64 depending on the byte form).
func normalize(v any) any {
	switch x := v.(type) {
	case int64:
		return uint64(x)
	case []any:
		for i := range x {
			x[i] = normalize(x[i])
		}
		return x
	case map[string]any:
		for k := range x {
			x[k] = normalize(x[k])
		}
		return x
	}
	return v
}
