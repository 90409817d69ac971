package events

import (
	"reflect"
	"testing"

	"github.com/mocker-server/mocker-server/internal/kv"
)

// TestEncodeMMExtraKeys: a multimodal block's extra keys are vLLM's tuple
// (adapter name, (identifier, offset) pairs, salt), with negative offsets
// for an item that began in an earlier block.
func TestEncodeMMExtraKeys(t *testing.T) {
	ev := kv.Event{Kind: kv.Stored, BlockHashes: []uint64{goldenHash, 7, 8}, TokenIDs: make([]uint32, 12),
		BlockSize: 4, ExtraKeys: [][]string{{"sql", "tenant-a"}, {"sql"}, {"sql"}}, Adapter: kv.Adapter{ID: 300, Name: "sql"},
		MMKeys: [][]kv.MMKey{{{Identifier: "abc", Offset: 2}}, {{Identifier: "abc", Offset: -2}, {Identifier: "def", Offset: 3}}, nil}}
	m := decodeAny(t, EncodeEvent(nil, &ev, EncodingMap)).(map[string]any)
	want := []any{
		[]any{"sql", []any{"abc", int64(2)}, "tenant-a"},
		[]any{"sql", []any{"abc", int64(-2)}, []any{"def", int64(3)}},
		[]any{"sql"},
	}
	got := m["extra_keys"].([]any)
	if len(got) != len(want) {
		t.Fatalf("extra_keys %#v", got)
	}
	for i := range want {
		if !reflect.DeepEqual(normInts(got[i]), want[i]) {
			t.Errorf("block %d extra keys %#v, want %#v", i, got[i], want[i])
		}
	}
	// Without an adapter or salt the pairs stand alone.
	ev = kv.Event{Kind: kv.Stored, BlockHashes: []uint64{1}, TokenIDs: make([]uint32, 4), BlockSize: 4,
		MMKeys: [][]kv.MMKey{{{Identifier: "abc", Offset: 0}}}}
	m = decodeAny(t, EncodeEvent(nil, &ev, EncodingMap)).(map[string]any)
	if got := normInts(m["extra_keys"]); !reflect.DeepEqual(got, []any{[]any{[]any{"abc", int64(0)}}}) {
		t.Errorf("extra_keys %#v", got)
	}
}

// normInts turns every integer of a decoded value into int64.
func normInts(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = normInts(x[i])
		}
		return out
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case int:
		return int64(x)
	case uint8:
		return int64(x)
	case uint16:
		return int64(x)
	case uint32:
		return int64(x)
	case uint64:
		return int64(x)
	}
	return v
}
