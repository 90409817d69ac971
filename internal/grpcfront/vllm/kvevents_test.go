package vllm_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/mocker-server/mocker-server/internal/grpcfront/vllm/vllmpb"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

// storedHashes subscribes to a KV-event endpoint and returns a function
// that collects the block hashes of every BlockStored event until none
// arrives for a while. The batches are decoded with an independent msgpack
// library, in either of vLLM's encodings (array_like or map).
func storedHashes(t *testing.T, endpoint string) func() []string {
	sub := testutil.NewZMQSub(t, nil, endpoint, false, "")
	sub.Settle(300 * time.Millisecond)
	return func() []string {
		var hashes []string
		for {
			frames := sub.Recv(500 * time.Millisecond)
			if frames == nil {
				return hashes
			}
			var batch []any
			if err := msgpack.Unmarshal(frames[len(frames)-1], &batch); err != nil || len(batch) < 2 {
				t.Fatalf("KV batch: %v", err)
			}
			evs, _ := batch[1].([]any)
			for _, ev := range evs {
				var kind string
				var blocks any
				switch x := ev.(type) {
				case []any:
					kind, _ = x[0].(string)
					if len(x) > 1 {
						blocks = x[1]
					}
				case map[string]any:
					kind, _ = x["type"].(string)
					blocks = x["block_hashes"]
				}
				if kind != "BlockStored" {
					continue
				}
				list, _ := blocks.([]any)
				for _, h := range list {
					hashes = append(hashes, fmt.Sprint(h))
				}
			}
		}
	}
}

// A gateway's flow — token ids in over gRPC — publishes KV events with the
// block hashes the same ids give over HTTP: two workers of one
// configuration, one driven by Generate, the other by /v1/completions.
func TestKVEventsMatchHTTP(t *testing.T) {
	dir := t.TempDir()
	workers := make([]*env, 2)
	collect := make([]func() []string, 2)
	for i := range workers {
		ep := "ipc://" + filepath.Join(dir, fmt.Sprintf("kv%d.ipc", i))
		workers[i] = start(t, map[string]any{"kv_events_config": map[string]any{
			"enable_kv_cache_events": true, "publisher": "zmq", "endpoint": ep}})
		collect[i] = storedHashes(t, ep)
	}
	prompt := seq(40, 300)
	if _, err := workers[0].generate(t, ctxTimeout(t, 10*time.Second),
		tokenized("kv", prompt, &vllmpb.SamplingParams{MaxTokens: u32(70), IgnoreEos: true}, true)); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"prompt": prompt, "max_tokens": 70, "ignore_eos": true})
	if code := workers[1].post(t, "/v1/completions", string(b), nil); code != 200 {
		t.Fatalf("HTTP %d", code)
	}
	viaGRPC, viaHTTP := collect[0](), collect[1]()
	// 300 prompt + 70 output tokens fill five 64-token blocks.
	if len(viaGRPC) != 5 || !slices.Equal(viaGRPC, viaHTTP) {
		t.Errorf("BlockStored hashes: gRPC %v\nHTTP %v", viaGRPC, viaHTTP)
	}
}
