package events

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/kv"
)

// TestEncodeSGLangSignedHashes: the radix cache's page hashes go out as the
// signed int64 SGLang sends (hash_str_to_int64), checked with python's
// msgpack. A hash with the top bit set is negative on the wire.
func TestEncodeSGLangSignedHashes(t *testing.T) {
	py := debianPython()
	if py == "" {
		t.Skip("no python3 with zmq and msgpack")
	}
	c := kv.NewRadixCache(10, 1, true)
	c.Allocate(2)
	c.Insert("", []uint32{7, 8})
	events := c.TakeEvents()
	c.Evict(2)
	events = append(events, c.TakeEvents()...)
	want := kv.RadixPageHashes([]uint32{7, 8}, 1)
	lines := pythonUnpack(t, py, []string{hexs(EncodeBatch(nil, goldenTS, events, 0, EncodingArray))})
	got := lines[0]
	for _, h := range want {
		if !strings.Contains(got, strconv.FormatInt(int64(h), 10)) {
			t.Errorf("python decoded %s; missing signed hash %d", got, int64(h))
		}
	}
	// The Go decoder reads the same signed values.
	v := decodeAny(t, EncodeBatch(nil, goldenTS, events[:1], 0, EncodingMap))
	ev := v.([]any)[1].([]any)[0].(map[string]any)
	if !reflect.DeepEqual(ev["block_hashes"], []any{int64(want[0])}) {
		t.Errorf("block_hashes %#v, want [%d]", ev["block_hashes"], int64(want[0]))
	}
}
