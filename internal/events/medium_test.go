package events

import (
	"reflect"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/engine"
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

// TestEncodeFPMSpecDecodePythonDecodes: with speculative decoding the FPM
// map has an eighth key, spec_decode; without it the bytes are unchanged
// (TestEncodePythonDecodes).
func TestEncodeFPMSpecDecodePythonDecodes(t *testing.T) {
	py := debianPython()
	if py == "" {
		t.Skip("no python3 with zmq and msgpack")
	}
	snap := engine.ForwardPassSnapshot{CounterID: 2, NumDecodeRequests: 1, SumDecodeKVTokens: 101}
	spec := engine.FPMSpecDecode{NumDrafts: 1, NumDraftTokens: 3, NumAccepted: 2}
	lines := pythonUnpack(t, py, []string{hexs(EncodeFPMSpec(nil, "w0", snap, spec))})
	want := "{'version': 1, 'worker_id': 'w0', 'dp_rank': 0, 'counter_id': 2, 'wall_time': 0.0, 'scheduled_requests': {'num_prefill_requests': 0, 'sum_prefill_tokens': 0, 'var_prefill_length': 0.0, 'sum_prefill_kv_tokens': 0, 'num_decode_requests': 1, 'sum_decode_kv_tokens': 101, 'var_decode_kv_tokens': 0.0}, 'queued_requests': {'num_prefill_requests': 0, 'sum_prefill_tokens': 0, 'var_prefill_length': 0.0, 'num_decode_requests': 0, 'sum_decode_kv_tokens': 0, 'var_decode_kv_tokens': 0.0}, 'spec_decode': {'num_drafts': 1, 'num_draft_tokens': 3, 'num_accepted_tokens': 2}}"
	if len(lines) != 1 || lines[0] != want {
		t.Errorf("python decoded:\n%s\nwant:\n%s", strings.Join(lines, "\n"), want)
	}
}
