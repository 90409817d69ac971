package events

import (
	"reflect"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/kv"
)

func adapterStored() kv.Event {
	return kv.Event{Kind: kv.Stored, BlockHashes: []uint64{goldenHash, 7}, TokenIDs: []uint32{1, 2, 3, 4, 5, 6, 7, 8},
		BlockSize: 4, ExtraKeys: [][]string{{"sql", "tenant-a"}, {"sql"}}, Adapter: kv.Adapter{ID: 300, Name: "sql"}}
}

func TestEncodeAdapterFields(t *testing.T) {
	ev := adapterStored()
	m := decodeAny(t, EncodeEvent(nil, &ev, EncodingMap)).(map[string]any)
	if num(t, m["lora_id"]) != 300 || m["lora_name"] != "sql" ||
		!reflect.DeepEqual(m["extra_keys"], []any{[]any{"sql", "tenant-a"}, []any{"sql"}}) {
		t.Errorf("map event %#v", m)
	}
	a := decodeAny(t, EncodeEvent(nil, &ev, EncodingArray)).([]any)
	if num(t, a[5]) != 300 || a[6] != "GPU" || a[7] != "sql" {
		t.Errorf("array event %#v", a)
	}
	// 300 is written as msgspec writes it: cd 01 2c.
	if h := hexs(EncodeEvent(nil, &ev, EncodingMap)); !strings.Contains(h, "a7 6c 6f 72 61 5f 69 64 cd 01 2c") {
		t.Errorf("lora_id bytes: %s", h)
	}
}

// TestEncodeAdapterPythonDecodes decodes an adapter's Stored event with
// python3-msgpack, an independent decoder.
func TestEncodeAdapterPythonDecodes(t *testing.T) {
	py := debianPython()
	if py == "" {
		t.Skip("no python3 with zmq and msgpack")
	}
	ev := adapterStored()
	payloads := []string{
		hexs(EncodeBatch(nil, goldenTS, []kv.Event{ev}, 0, EncodingMap)),
		hexs(EncodeBatch(nil, goldenTS, []kv.Event{ev}, 0, EncodingArray)),
	}
	want := []string{
		"[1760000000.5, [{'type': 'BlockStored', 'block_hashes': [14643705804678351452, 7], 'parent_block_hash': None, 'token_ids': [1, 2, 3, 4, 5, 6, 7, 8], 'block_size': 4, 'lora_id': 300, 'medium': 'GPU', 'lora_name': 'sql', 'extra_keys': [['sql', 'tenant-a'], ['sql']], 'group_idx': 0, 'kv_cache_spec_kind': 'full_attention'}], 0]",
		"[1760000000.5, [['BlockStored', [14643705804678351452, 7], None, [1, 2, 3, 4, 5, 6, 7, 8], 4, 300, 'GPU', 'sql']], 0]",
	}
	if lines := pythonUnpack(t, py, payloads); !reflect.DeepEqual(lines, want) {
		t.Errorf("python decoded:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}
