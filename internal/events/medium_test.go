package events

import (
	"reflect"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/kv"
)

// TestEncodeOffloadMediumPythonDecodes: the events of an offload tier carry
// their medium, and a BlockStored there has no parent, tokens, adapter or
// extra keys, as vLLM's offloading connector publishes it. Debian's Python
// msgpack is the independent decoder.
func TestEncodeOffloadMediumPythonDecodes(t *testing.T) {
	py := debianPython()
	if py == "" {
		t.Skip("no python3 with zmq and msgpack")
	}
	events := []kv.Event{
		{Kind: kv.Removed, BlockHashes: []uint64{7}},
		{Kind: kv.Stored, BlockHashes: []uint64{7}, BlockSize: 16, Medium: kv.MediumCPU},
		{Kind: kv.Removed, BlockHashes: []uint64{9}, Medium: kv.MediumCPU},
		{Kind: kv.Stored, BlockHashes: []uint64{9}, BlockSize: 16, Medium: kv.MediumDisk},
	}
	lines := pythonUnpack(t, py, []string{
		hexs(EncodeBatch(nil, 1.5, events, 0, EncodingMap)),
		hexs(EncodeBatch(nil, 1.5, events[1:3], 0, EncodingArray)),
	})
	want := []string{
		"[1.5, [{'type': 'BlockRemoved', 'block_hashes': [7], 'medium': 'GPU', 'group_idx': 0}, " +
			"{'type': 'BlockStored', 'block_hashes': [7], 'parent_block_hash': None, 'token_ids': [], 'block_size': 16, 'lora_id': None, 'medium': 'CPU', 'lora_name': None, 'extra_keys': None, 'group_idx': 0, 'kv_cache_spec_kind': 'full_attention'}, " +
			"{'type': 'BlockRemoved', 'block_hashes': [9], 'medium': 'CPU', 'group_idx': 0}, " +
			"{'type': 'BlockStored', 'block_hashes': [9], 'parent_block_hash': None, 'token_ids': [], 'block_size': 16, 'lora_id': None, 'medium': 'DISK', 'lora_name': None, 'extra_keys': None, 'group_idx': 0, 'kv_cache_spec_kind': 'full_attention'}], 0]",
		"[1.5, [['BlockStored', [7], None, [], 16, None, 'CPU', None], ['BlockRemoved', [9], 'CPU']], 0]",
	}
	if !reflect.DeepEqual(lines, want) {
		t.Errorf("python decoded:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}
