package events

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/kv"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

// countingSink forwards to the publisher and counts batches (called on the
// simulator's goroutine, the test goroutine).
type countingSink struct {
	next    engine.KVEventSink
	batches int
}

func (c *countingSink) PublishKVEvents(b engine.KVEventBatch) {
	c.batches++
	c.next.PublishKVEvents(b)
}

// wireEvent is one event decoded generically from a payload.
type wireEvent struct {
	tag       string
	hashes    []uint64
	parent    *uint64
	tokens    []uint64
	blockSize uint64
	extraKeys []any // map encoding only
}

// decodeEvents decodes a batch payload generically and checks its shape
// and the constant fields of each event: the batch shape, integer hashes,
// exact names, constants and array positions consumers rely on
// (docs/kv-events.md).
func decodeEvents(t *testing.T, payload []byte, enc Encoding, wantRank uint64) []wireEvent {
	t.Helper()
	batch, ok := decodeAny(t, payload).([]any)
	if !ok || len(batch) != 3 {
		t.Fatalf("batch is not a 3-array: %#v", batch)
	}
	if _, ok := batch[0].(float64); !ok {
		t.Fatalf("ts %#v is not a float64", batch[0])
	}
	if r := num(t, batch[2]); r != wantRank {
		t.Fatalf("dp rank %d, want %d", r, wantRank)
	}
	list, ok := batch[1].([]any)
	if !ok || len(list) == 0 {
		t.Fatalf("events %#v", batch[1])
	}
	ints := func(v any) []uint64 {
		a, ok := v.([]any)
		if !ok {
			t.Fatalf("not an array: %#v", v)
		}
		out := make([]uint64, len(a))
		for i, x := range a {
			out[i] = num(t, x)
		}
		return out
	}
	parent := func(v any) *uint64 {
		if v == nil {
			return nil
		}
		p := num(t, v)
		return &p
	}
	var out []wireEvent
	for _, raw := range list {
		var e wireEvent
		if enc == EncodingMap {
			m, ok := raw.(map[string]any)
			if !ok {
				t.Fatalf("map encoding event is %#v", raw)
			}
			e.tag, _ = m["type"].(string)
			var keys []string
			switch e.tag {
			case "BlockStored":
				keys = []string{"type", "block_hashes", "parent_block_hash", "token_ids", "block_size",
					"lora_id", "medium", "lora_name", "extra_keys", "group_idx", "kv_cache_spec_kind"}
				e.hashes, e.parent, e.tokens = ints(m["block_hashes"]), parent(m["parent_block_hash"]), ints(m["token_ids"])
				e.blockSize = num(t, m["block_size"])
				e.extraKeys, _ = m["extra_keys"].([]any)
				if m["lora_id"] != nil || m["lora_name"] != nil || m["medium"] != "GPU" ||
					num(t, m["group_idx"]) != 0 || m["kv_cache_spec_kind"] != "full_attention" ||
					len(e.extraKeys) != len(e.hashes) {
					t.Fatalf("BlockStored constants: %#v", m)
				}
			case "BlockRemoved":
				keys = []string{"type", "block_hashes", "medium", "group_idx"}
				e.hashes = ints(m["block_hashes"])
				if m["medium"] != "GPU" || num(t, m["group_idx"]) != 0 {
					t.Fatalf("BlockRemoved constants: %#v", m)
				}
			case "AllBlocksCleared":
				keys = []string{"type"}
			default:
				t.Fatalf("unknown tag %q", e.tag)
			}
			if len(m) != len(keys) {
				t.Fatalf("%s has keys %v, want %v", e.tag, m, keys)
			}
			for _, k := range keys {
				if _, ok := m[k]; !ok {
					t.Fatalf("%s lacks %q", e.tag, k)
				}
			}
		} else {
			a, ok := raw.([]any)
			if !ok || len(a) == 0 {
				t.Fatalf("array encoding event is %#v", raw)
			}
			e.tag, _ = a[0].(string)
			switch e.tag {
			case "BlockStored":
				if len(a) != 8 || a[5] != nil || a[6] != "GPU" || a[7] != nil {
					t.Fatalf("BlockStored array %#v", a)
				}
				e.hashes, e.parent, e.tokens, e.blockSize = ints(a[1]), parent(a[2]), ints(a[3]), num(t, a[4])
			case "BlockRemoved":
				if len(a) != 3 || a[2] != "GPU" {
					t.Fatalf("BlockRemoved array %#v", a)
				}
				e.hashes = ints(a[1])
			case "AllBlocksCleared":
				if len(a) != 1 {
					t.Fatalf("AllBlocksCleared array %#v", a)
				}
			default:
				t.Fatalf("unknown tag %q", e.tag)
			}
		}
		out = append(out, e)
	}
	return out
}

// expectedBlocks hashes every full block of each sequence (prompt plus
// planned output) like the engine does: hash → tokens, hash → parent.
type expectedBlocks struct {
	tokens map[uint64][]uint32
	parent map[uint64]*uint64
	salt   map[uint64]string // block-0 hashes of salted sequences
}

func (x *expectedBlocks) add(t *testing.T, cfg *config.Config, seq []uint32, salt string) {
	h, err := kv.NewHasher(string(cfg.PrefixCachingHashAlgo), cfg.HashSeed, cfg.EffectiveBlockSize())
	if err != nil {
		t.Fatal(err)
	}
	bs := cfg.EffectiveBlockSize()
	chain := h.NewChain(salt)
	h.Extend(&chain, seq, len(seq)/bs)
	for i, hash := range chain.Hashes() {
		x.tokens[hash] = seq[i*bs : (i+1)*bs]
		if i == 0 {
			x.parent[hash] = nil
			if salt != "" {
				x.salt[hash] = salt
			}
		} else {
			p := chain.Hashes()[i-1]
			x.parent[hash] = &p
		}
	}
}

func tokenRange(first, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(first + i)
	}
	return out
}

// TestWorkloadEvents drives a vllm core (bs 4, 12 blocks) in virtual time
// with the publisher as its KV sink and checks every message a real SUB
// receives, in both encodings and both connection directions.
func TestWorkloadEvents(t *testing.T) {
	for _, tc := range []struct {
		name string
		enc  Encoding
		ipc  bool // PUB binds ipc://; otherwise the SUB binds tcp and the PUB connects
	}{
		{"map/sub-binds-tcp", EncodingMap, false},
		{"array/pub-binds-ipc", EncodingArray, true},
	} {
		t.Run(tc.name, func(t *testing.T) { runWorkload(t, tc.enc, tc.ipc) })
	}
}

func runWorkload(t *testing.T, enc Encoding, ipc bool) {
	zctx := newCtx(t)
	cfg := config.Default()
	cfg.BlockSize, cfg.NumGPUBlocks, cfg.MaxModelLen = 4, 12, 48
	cfg.TimingModel = engine.TimingFixed

	var pubEP string
	var sub *testutil.ZMQSocket
	if ipc {
		pubEP = ipcEndpoint(t, "kv")
	} else {
		sub = testutil.NewZMQSub(t, zctx, testutil.AnyLoopbackPort, true, "kv@pod@m")
		pubEP = testutil.LastEndpoint(t, sub.Sock)
	}
	replayEP := ipcEndpoint(t, "replay")
	p := newKVPub(t, zctx, KVSettings{Endpoint: pubEP, Bind: ShouldBind(pubEP), ReplayEndpoint: replayEP,
		Topic: "kv@pod@m", Encoding: enc, ReplayTopicFrame: true, Publish: true}, nil)
	if ipc {
		sub = testutil.NewZMQSub(t, zctx, pubEP, false, "kv@pod@m")
	}
	sub.Settle(700 * time.Millisecond)

	sink := &countingSink{next: p}
	core, err := engine.NewCore(cfg.EngineConfig(nil), engine.CoreOptions{KVSink: sink})
	if err != nil {
		t.Fatal(err)
	}
	sim := engine.NewSimulator(core)
	want := &expectedBlocks{tokens: map[uint64][]uint32{}, parent: map[uint64]*uint64{}, salt: map[uint64]string{}}
	submit := func(at time.Duration, prompt, out []uint32, salt string) {
		sim.SubmitAt(at, &engine.Request{ID: engine.NewRequestID(), Prompt: prompt, PlannedOutput: out, CacheSalt: salt})
		want.add(t, &cfg, append(slices.Clone(prompt), out...), salt)
	}
	prefixA, prefixB := tokenRange(1000, 12), tokenRange(2000, 12)
	for i := range 10 {
		prefix := prefixA
		if i%2 == 1 {
			prefix = prefixB
		}
		prompt := append(slices.Clone(prefix), tokenRange(3000+100*i, 5+i%4)...)
		submit(time.Duration(i)*15*time.Millisecond, prompt, tokenRange(5000+100*i, 4), "")
	}
	submit(40*time.Millisecond, append(slices.Clone(prefixA), 7, 7, 7, 7, 7), tokenRange(6000, 3), "tenant-a")
	submit(time.Second, tokenRange(9000, 40), tokenRange(9500, 2), "") // 10 blocks: evicts most of the cache
	sim.Run(0)
	// A successful reset announces AllBlocksCleared; then more traffic.
	if !core.ResetPrefixCache(sim.Clock.Now()) {
		t.Fatal("prefix cache reset refused")
	}
	at := sim.Now() + time.Second
	submit(at, append(slices.Clone(prefixB), 1, 2, 3, 4), tokenRange(7000, 5), "")
	submit(at+time.Millisecond, append(slices.Clone(prefixB), 9, 9, 9, 9, 9), tokenRange(7100, 5), "")
	sim.Run(0)

	n := sink.batches
	testutil.WaitFor(t, 5*time.Second, "all batches sent", func() bool { return p.Sent()+p.Dropped() == uint64(n) })
	if p.Dropped() != 0 {
		t.Fatalf("%d batches dropped", p.Dropped())
	}

	// Consume every live message.
	resident := map[uint64]bool{}
	var live [][]byte
	counts := map[string]int{}
	crossBatchParents, saltSeen := 0, 0
	announcedIn := map[uint64]int{} // hash → batch index that stored it
	for i := range n {
		msg := sub.MustRecv(3*time.Second, "batch "+strconv.Itoa(i))
		if len(msg) != 3 || string(msg[0]) != "kv@pod@m" || len(msg[1]) != 8 {
			t.Fatalf("message %d frames %q", i, msg)
		}
		if seq := binary.BigEndian.Uint64(msg[1]); seq != uint64(i) {
			t.Fatalf("message %d has seq %d", i, seq)
		}
		live = append(live, msg[2])
		for _, e := range decodeEvents(t, msg[2], enc, 0) {
			counts[e.tag]++
			switch e.tag {
			case "BlockStored":
				if e.blockSize != 4 || len(e.tokens) != len(e.hashes)*4 {
					t.Fatalf("batch %d: %d tokens for %d blocks of %d", i, len(e.tokens), len(e.hashes), e.blockSize)
				}
				if e.parent != nil {
					if !resident[*e.parent] {
						t.Fatalf("batch %d: parent %#x not announced", i, *e.parent)
					}
					if announcedIn[*e.parent] < i {
						crossBatchParents++
					}
				}
				wantParent := want.parent[e.hashes[0]]
				if (wantParent == nil) != (e.parent == nil) || (e.parent != nil && *e.parent != *wantParent) {
					t.Fatalf("batch %d: parent %v, want %v", i, e.parent, wantParent)
				}
				for j, h := range e.hashes {
					exp, ok := want.tokens[h]
					if !ok {
						t.Fatalf("batch %d: unknown hash %#x", i, h)
					}
					for k, tok := range e.tokens[j*4 : (j+1)*4] {
						if tok != uint64(exp[k]) {
							t.Fatalf("batch %d block %d: tokens %v, want %v", i, j, e.tokens[j*4:(j+1)*4], exp)
						}
					}
					if j > 0 && *want.parent[h] != e.hashes[j-1] {
						t.Fatalf("batch %d: hashes not a chain", i)
					}
					if resident[h] {
						t.Fatalf("batch %d: %#x stored twice", i, h)
					}
					resident[h] = true
					announcedIn[h] = i
					if enc == EncodingMap {
						var wantExtra any
						if salt, ok := want.salt[h]; ok {
							wantExtra = []any{salt}
							saltSeen++
						}
						if got := e.extraKeys[j]; !equalAny(got, wantExtra) {
							t.Fatalf("batch %d block %d extra_keys %#v, want %#v", i, j, got, wantExtra)
						}
					}
				}
			case "BlockRemoved":
				for _, h := range e.hashes {
					if !resident[h] {
						t.Fatalf("batch %d: removal of unannounced %#x", i, h)
					}
					delete(resident, h)
				}
			case "AllBlocksCleared":
				clear(resident)
			}
		}
	}
	if msg := sub.Recv(100 * time.Millisecond); msg != nil {
		t.Fatalf("extra message %q", msg)
	}
	if counts["BlockStored"] == 0 || counts["BlockRemoved"] == 0 || counts["AllBlocksCleared"] != 1 || crossBatchParents == 0 ||
		(enc == EncodingMap && saltSeen != 1) {
		t.Errorf("event counts %v, cross-batch parents %d, salted blocks %d", counts, crossBatchParents, saltSeen)
	}
	var got []uint64
	for h := range resident {
		got = append(got, h)
	}
	slices.Sort(got)
	if cached := core.Pool().CachedHashes(); !slices.Equal(got, cached) {
		t.Errorf("consumer view %d hashes, pool caches %d", len(got), len(cached))
	}

	// Replay from 0 returns exactly the live payloads.
	rep := newReplayClient(t, zctx, replayEP).replay(0, true)
	if len(rep) != n {
		t.Fatalf("replayed %d of %d", len(rep), n)
	}
	for i, r := range rep {
		if r.seq != uint64(i) || r.topic != "kv@pod@m" || !bytes.Equal(r.payload, live[i]) {
			t.Fatalf("replay %d differs from the live message", i)
		}
	}
	t.Logf("%d batches, events %v, %d hashes resident at the end", n, counts, len(got))
}

func equalAny(a, b any) bool {
	aa, ok1 := a.([]any)
	bb, ok2 := b.([]any)
	if ok1 != ok2 {
		return false
	}
	if !ok1 {
		return a == b
	}
	return slices.Equal(aa, bb)
}
