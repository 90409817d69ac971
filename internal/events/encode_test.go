package events

import (
	"bytes"
	"math"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/kv"
)

// Golden values: whole batches as vLLM's msgspec encoder writes them
// (docs/kv-events.md walks through the array form of the first).
const (
	goldenTS   = 1760000000.5
	goldenHash = uint64(14643705804678351452) // 0xcb38e4d7fb2dca5c

	goldenStoredMap = `93 cb 41 da 39 de 00 20 00 00 91 8b a4 74 79 70 65 ab 42 6c 6f 63 6b 53 74 6f 72 65 64 ac 62 6c 6f 63 6b 5f 68 61 73 68 65 73 91 cf cb 38 e4 d7 fb 2d ca 5c b1 70 61 72 65 6e 74 5f 62 6c 6f 63 6b 5f 68 61 73 68 c0 a9 74 6f 6b 65 6e 5f 69 64 73 94 01 02 03 04
aa 62 6c 6f 63 6b 5f 73 69 7a 65 04 a7 6c 6f 72 61 5f 69 64 c0 a6 6d 65 64 69 75 6d a3 47 50 55 a9 6c 6f 72 61 5f 6e 61 6d 65 c0 aa 65 78 74 72 61 5f 6b 65 79 73 91 c0 a9 67 72 6f 75 70 5f 69 64 78 00
b2 6b 76 5f 63 61 63 68 65 5f 73 70 65 63 5f 6b 69 6e 64 ae 66 75 6c 6c 5f 61 74 74 65 6e 74 69 6f 6e 00`
	goldenStoredArray  = `93 cb 41 da 39 de 00 20 00 00 91 98 ab 42 6c 6f 63 6b 53 74 6f 72 65 64 91 cf cb 38 e4 d7 fb 2d ca 5c c0 94 01 02 03 04 04 c0 a3 47 50 55 c0 00`
	goldenRemovedMap   = `93 cb 41 da 39 de 00 20 00 00 91 84 a4 74 79 70 65 ac 42 6c 6f 63 6b 52 65 6d 6f 76 65 64 ac 62 6c 6f 63 6b 5f 68 61 73 68 65 73 91 cf cb 38 e4 d7 fb 2d ca 5c a6 6d 65 64 69 75 6d a3 47 50 55 a9 67 72 6f 75 70 5f 69 64 78 00 00`
	goldenRemovedArray = `93 cb 41 da 39 de 00 20 00 00 91 93 ac 42 6c 6f 63 6b 52 65 6d 6f 76 65 64 91 cf cb 38 e4 d7 fb 2d ca 5c a3 47 50 55 00`
	goldenClearedMap   = `81 a4 74 79 70 65 b0 41 6c 6c 42 6c 6f 63 6b 73 43 6c 65 61 72 65 64`
	goldenClearedArray = `91 b0 41 6c 6c 42 6c 6f 63 6b 73 43 6c 65 61 72 65 64`

	// The first bytes of worker "w0"'s first heartbeat (docs/metrics.md).
	goldenFPMPrefix = `87 a7 76 65 72 73 69 6f 6e 01 a9 77 6f 72 6b 65 72 5f 69 64 a2 77 30 a7 64 70 5f 72 61 6e 6b 00 aa 63 6f 75 6e 74 65 72 5f 69 64 01 a9 77 61 6c 6c 5f 74 69 6d 65 cb 00 00 00 00 00 00 00 00 b2`
)

func goldenStored() kv.Event {
	return kv.Event{Kind: kv.Stored, BlockHashes: []uint64{goldenHash},
		TokenIDs: []uint32{1, 2, 3, 4}, BlockSize: 4, ExtraKeys: [][]string{nil}}
}

func goldenRemoved() kv.Event {
	return kv.Event{Kind: kv.Removed, BlockHashes: []uint64{goldenHash}}
}

func TestEncodeGoldens(t *testing.T) {
	cases := []struct {
		name  string
		ev    kv.Event
		enc   Encoding
		hex   string
		size  int
		batch bool
	}{
		{"stored/map", goldenStored(), EncodingMap, goldenStoredMap, 188, true},
		{"stored/array", goldenStored(), EncodingArray, goldenStoredArray, 48, true},
		{"removed/map", goldenRemoved(), EncodingMap, goldenRemovedMap, 76, true},
		{"removed/array", goldenRemoved(), EncodingArray, goldenRemovedArray, 40, true},
		{"cleared/map", kv.Event{Kind: kv.AllCleared}, EncodingMap, goldenClearedMap, 23, false},
		{"cleared/array", kv.Event{Kind: kv.AllCleared}, EncodingArray, goldenClearedArray, 18, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := unhex(t, c.hex)
			if len(want) != c.size {
				t.Fatalf("golden has %d bytes, spec says %d", len(want), c.size)
			}
			var got []byte
			if c.batch {
				got = EncodeBatch(nil, goldenTS, []kv.Event{c.ev}, 0, c.enc)
			} else {
				got = EncodeEvent(nil, &c.ev, c.enc)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("bytes differ\n got %s\nwant %s", hexs(got), hexs(want))
			}
		})
	}
	// A nil ExtraKeys slice encodes as one null per block, like [nil].
	ev := goldenStored()
	ev.ExtraKeys = nil
	if got := EncodeBatch(nil, goldenTS, []kv.Event{ev}, 0, EncodingMap); !bytes.Equal(got, unhex(t, goldenStoredMap)) {
		t.Errorf("nil extra_keys: %s", hexs(got))
	}
	// ts from a time.Time, as the publisher computes it.
	if ts := UnixSeconds(time.Unix(1760000000, 500000000)); ts != goldenTS {
		t.Errorf("UnixSeconds = %v", ts)
	}
}

// TestEncodeGoldenDecodes checks the generic decoding of the golden map
// payload against the event it encodes.
func TestEncodeGoldenDecodes(t *testing.T) {
	v := decodeAny(t, EncodeBatch(nil, goldenTS, []kv.Event{goldenStored()}, 0, EncodingMap))
	batch := v.([]any)
	if len(batch) != 3 || batch[0] != goldenTS || num(t, batch[2]) != 0 {
		t.Fatalf("batch %#v", batch)
	}
	ev := batch[1].([]any)[0].(map[string]any)
	want := map[string]any{
		"type": "BlockStored", "block_hashes": []any{goldenHash}, "parent_block_hash": nil,
		"token_ids": []any{int64(1), int64(2), int64(3), int64(4)}, "block_size": int64(4),
		"lora_id": nil, "medium": "GPU", "lora_name": nil, "extra_keys": []any{nil},
		"group_idx": int64(0), "kv_cache_spec_kind": "full_attention",
	}
	if !reflect.DeepEqual(ev, want) {
		t.Errorf("decoded %#v\nwant %#v", ev, want)
	}
}

// TestEncodePythonDecodes decodes the goldens with python3-msgpack, an
// independent decoder (skipped without Debian's python).
func TestEncodePythonDecodes(t *testing.T) {
	py := debianPython()
	if py == "" {
		t.Skip("no python3 with zmq and msgpack")
	}
	payloads := []string{
		hexs(EncodeBatch(nil, goldenTS, []kv.Event{goldenStored()}, 0, EncodingMap)),
		hexs(EncodeBatch(nil, goldenTS, []kv.Event{goldenStored()}, 0, EncodingArray)),
		hexs(EncodeFPM(nil, "w0", engine.ForwardPassSnapshot{CounterID: 1, Heartbeat: true})),
	}
	lines := pythonUnpack(t, py, payloads)
	want := []string{
		"[1760000000.5, [{'type': 'BlockStored', 'block_hashes': [14643705804678351452], 'parent_block_hash': None, 'token_ids': [1, 2, 3, 4], 'block_size': 4, 'lora_id': None, 'medium': 'GPU', 'lora_name': None, 'extra_keys': [None], 'group_idx': 0, 'kv_cache_spec_kind': 'full_attention'}], 0]",
		"[1760000000.5, [['BlockStored', [14643705804678351452], None, [1, 2, 3, 4], 4, None, 'GPU', None]], 0]",
		"{'version': 1, 'worker_id': 'w0', 'dp_rank': 0, 'counter_id': 1, 'wall_time': 0.0, 'scheduled_requests': {'num_prefill_requests': 0, 'sum_prefill_tokens': 0, 'var_prefill_length': 0.0, 'sum_prefill_kv_tokens': 0, 'num_decode_requests': 0, 'sum_decode_kv_tokens': 0, 'var_decode_kv_tokens': 0.0}, 'queued_requests': {'num_prefill_requests': 0, 'sum_prefill_tokens': 0, 'var_prefill_length': 0.0, 'num_decode_requests': 0, 'sum_decode_kv_tokens': 0, 'var_decode_kv_tokens': 0.0}}",
	}
	if !reflect.DeepEqual(lines, want) {
		t.Errorf("python decoded:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

// pythonUnpack decodes hex payloads with python3-msgpack and returns each
// one's Python repr.
func pythonUnpack(t *testing.T, py string, payloads []string) []string {
	t.Helper()
	script := `
import sys, msgpack
for line in sys.stdin:
    print(repr(msgpack.unpackb(bytes.fromhex(line.replace(" ", "").strip()), raw=False)))
`
	cmd := exec.Command(py, "-c", script)
	cmd.Stdin = strings.NewReader(strings.Join(payloads, "\n") + "\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

func TestEncodeSaltAndParent(t *testing.T) {
	ev := kv.Event{Kind: kv.Stored, BlockHashes: []uint64{300, 1 << 40}, ParentBlockHash: 70000,
		HasParent: true, TokenIDs: []uint32{1, 200, 300, 70000, 5, 6, 7, 8}, BlockSize: 4,
		ExtraKeys: [][]string{{"tenant-a"}, nil}}
	b := EncodeBatch(nil, 2.25, []kv.Event{ev, {Kind: kv.AllCleared}}, 3, EncodingMap)
	batch := decodeAny(t, b).([]any)
	if batch[0] != 2.25 || num(t, batch[2]) != 3 {
		t.Fatalf("batch %#v", batch)
	}
	evs := batch[1].([]any)
	m := evs[0].(map[string]any)
	if num(t, m["parent_block_hash"]) != 70000 ||
		!reflect.DeepEqual(m["extra_keys"], []any{[]any{"tenant-a"}, nil}) ||
		num(t, m["block_hashes"].([]any)[1]) != 1<<40 {
		t.Errorf("event %#v", m)
	}
	if !reflect.DeepEqual(evs[1], map[string]any{"type": "AllBlocksCleared"}) {
		t.Errorf("cleared %#v", evs[1])
	}
	// Byte forms: 300 → cd, 1<<40 → cf, 70000 → ce, 200 → cc.
	for _, frag := range []string{"cd 01 2c", "cf 00 00 01 00 00 00 00 00", "ce 00 01 11 70", "cc c8", "91 a8 74 65 6e 61 6e 74 2d 61 c0"} {
		if !strings.Contains(hexs(b), frag) {
			t.Errorf("payload lacks %q: %s", frag, hexs(b))
		}
	}
}

func TestMsgpackPrimitives(t *testing.T) {
	uints := []struct {
		v    uint64
		want string
	}{
		{0, "00"}, {127, "7f"}, {128, "cc 80"}, {255, "cc ff"}, {256, "cd 01 00"},
		{65535, "cd ff ff"}, {65536, "ce 00 01 00 00"}, {math.MaxUint32, "ce ff ff ff ff"},
		{math.MaxUint32 + 1, "cf 00 00 00 01 00 00 00 00"}, {math.MaxUint64, "cf ff ff ff ff ff ff ff ff"},
	}
	for _, c := range uints {
		if got := hexs(appendUint(nil, c.v)); got != c.want {
			t.Errorf("uint %d: %s, want %s", c.v, got, c.want)
		}
	}
	ints := []struct {
		v    int64
		want string
	}{
		{5, "05"}, {-1, "ff"}, {-32, "e0"}, {-33, "d0 df"}, {-128, "d0 80"}, {-129, "d1 ff 7f"},
		{-32769, "d2 ff ff 7f ff"}, {math.MinInt32 - 1, "d3 ff ff ff ff 7f ff ff ff"},
	}
	for _, c := range ints {
		if got := hexs(appendInt(nil, c.v)); got != c.want {
			t.Errorf("int %d: %s, want %s", c.v, got, c.want)
		}
	}
	for _, c := range []struct {
		n    int
		want string
	}{{0, "a0"}, {31, "bf"}, {32, "d9 20"}, {255, "d9 ff"}, {256, "da 01 00"}, {65536, "db 00 01 00 00"}} {
		got := appendString(nil, strings.Repeat("x", c.n))
		if h := hexs(got[:len(got)-c.n]); h != c.want {
			t.Errorf("str len %d header %s, want %s", c.n, h, c.want)
		}
	}
	for _, c := range []struct {
		n    int
		want string
	}{{0, "90"}, {15, "9f"}, {16, "dc 00 10"}, {65535, "dc ff ff"}, {65536, "dd 00 01 00 00"}} {
		if h := hexs(appendArrayHeader(nil, c.n)); h != c.want {
			t.Errorf("array %d header %s, want %s", c.n, h, c.want)
		}
	}
	// Long arrays decode generically (array16 of token ids ≥ 128 → cc).
	tokens := make([]uint32, 300)
	for i := range tokens {
		tokens[i] = uint32(i)
	}
	dec := decodeAny(t, appendTokens(nil, tokens)).([]any)
	if len(dec) != 300 || num(t, dec[299]) != 299 {
		t.Errorf("decoded %d tokens", len(dec))
	}
}

func TestEncodeFPMHeartbeat(t *testing.T) {
	b := EncodeFPM(nil, "w0", engine.ForwardPassSnapshot{CounterID: 1, Heartbeat: true})
	if len(b) != 409 {
		t.Errorf("heartbeat is %d bytes, want 409", len(b))
	}
	if prefix := unhex(t, goldenFPMPrefix); !bytes.HasPrefix(b, prefix) {
		t.Errorf("heartbeat prefix\n got %s\nwant %s", hexs(b[:len(prefix)]), hexs(prefix))
	}
	m := decodeAny(t, b).(map[string]any)
	keys := []string{"version", "worker_id", "dp_rank", "counter_id", "wall_time", "scheduled_requests", "queued_requests"}
	if len(m) != len(keys) {
		t.Fatalf("keys %v", m)
	}
	if m["worker_id"] != "w0" || num(t, m["version"]) != 1 || num(t, m["counter_id"]) != 1 || m["wall_time"] != 0.0 {
		t.Errorf("heartbeat %#v", m)
	}
	sched := m["scheduled_requests"].(map[string]any)
	queued := m["queued_requests"].(map[string]any)
	if len(sched) != 7 || len(queued) != 6 {
		t.Errorf("scheduled %d keys, queued %d keys", len(sched), len(queued))
	}
	for _, sub := range []map[string]any{sched, queued} {
		for k, v := range sub {
			if strings.HasPrefix(k, "var_") {
				if v != 0.0 {
					t.Errorf("%s = %#v, want float 0.0", k, v)
				}
			} else if num(t, v) != 0 {
				t.Errorf("%s = %#v", k, v)
			}
		}
	}
}

func TestEncodeFPMFields(t *testing.T) {
	s := engine.ForwardPassSnapshot{Rank: 2, NumPrefillRequests: 1, SumPrefillTokens: 100,
		VarPrefillLength: 6666.5, SumPrefillKVTokens: 64, NumDecodeRequests: 3, SumDecodeKVTokens: 70000,
		VarDecodeKVTokens: 4.0, NumQueuedPrefill: 5, SumQueuedPrefillTokens: 500,
		VarQueuedPrefillLength: 1.5, NumQueuedDecode: 6, SumQueuedDecodeKVTokens: 600,
		VarQueuedDecodeKVTokens: 2.5, WallTimeSecs: 0.023770567, CounterID: 300}
	m := decodeAny(t, EncodeFPM(nil, "host:8000", s)).(map[string]any)
	sched := m["scheduled_requests"].(map[string]any)
	queued := m["queued_requests"].(map[string]any)
	checks := []struct {
		got  any
		want any
	}{
		{m["dp_rank"], int64(2)}, {m["counter_id"], uint64(300)}, {m["wall_time"], 0.023770567},
		{sched["num_prefill_requests"], int64(1)}, {sched["sum_prefill_tokens"], int64(100)},
		{sched["var_prefill_length"], 6666.5}, {sched["sum_prefill_kv_tokens"], int64(64)},
		{sched["num_decode_requests"], int64(3)}, {sched["sum_decode_kv_tokens"], uint64(70000)},
		{sched["var_decode_kv_tokens"], 4.0},
		{queued["num_prefill_requests"], int64(5)}, {queued["sum_prefill_tokens"], uint64(500)},
		{queued["var_prefill_length"], 1.5}, {queued["num_decode_requests"], int64(6)},
		{queued["sum_decode_kv_tokens"], uint64(600)}, {queued["var_decode_kv_tokens"], 2.5},
	}
	for i, c := range checks {
		if c.got != c.want {
			t.Errorf("check %d: got %#v, want %#v", i, c.got, c.want)
		}
	}
}

// TestAppendTokensMatchesAppendUint checks the unrolled token writer
// against the generic integer writer across every size class.
func TestAppendTokensMatchesAppendUint(t *testing.T) {
	ts := []uint32{0, 1, 127, 128, 255, 256, 65535, 65536, math.MaxUint32}
	for i := range uint32(2000) {
		ts = append(ts, i*2654435761)
	}
	want := appendArrayHeader([]byte{0xaa}, len(ts))
	for _, x := range ts {
		want = appendUint(want, uint64(x))
	}
	if got := appendTokens([]byte{0xaa}, ts); !bytes.Equal(got, want) {
		t.Fatal("appendTokens differs from appendUint")
	}
}
