package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pebbe/zmq4"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/mocker-server/mocker-server/internal/testutil"
)

// e2eKVBatch is one KV event batch (live or replayed): its sequence number,
// payload bytes and the generically decoded events.
type e2eKVBatch struct {
	seq     uint64
	payload []byte
	events  []e2eKVEvent
}

// e2eKVEvent is one event normalised from either encoding.
type e2eKVEvent struct {
	kind      string
	hashes    []uint64
	parent    *uint64
	nTokens   int
	blockSize int
	// loraID and loraName are a LoRA adapter's (0 and "" for the base
	// model, whose fields are nil).
	loraID    uint64
	loraName  string
	extraKeys []any
}

// e2eLoRAFields reads lora_id and lora_name: both nil, or an unsigned id
// and a string.
func e2eLoRAFields(t *testing.T, id, name any) (uint64, string) {
	t.Helper()
	if id == nil && name == nil {
		return 0, ""
	}
	n, okID := e2eU64(id)
	s, okName := name.(string)
	if !okID || !okName || n == 0 || s == "" {
		t.Fatalf("lora_id/lora_name = %#v/%#v, want both nil or an id and a name", id, name)
	}
	return n, s
}

var e2eEndSeq = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// e2eDecodeKVPayload decodes a batch payload generically (msgpack into any),
// checking the batch shape, integer hashes, names, constants and array
// positions consumers rely on (docs/kv-events.md).
func e2eDecodeKVPayload(t *testing.T, payload []byte, rank int, array bool) []e2eKVEvent {
	t.Helper()
	dec := msgpack.NewDecoder(bytes.NewReader(payload))
	dec.UseLooseInterfaceDecoding(true)
	v, err := dec.DecodeInterfaceLoose()
	if err != nil {
		t.Fatalf("decode batch: %v", err)
	}
	batch, ok := v.([]any)
	if !ok || len(batch) != 3 {
		t.Fatalf("batch is %T len %d, want a 3-element array", v, len(batch))
	}
	if _, ok := batch[0].(float64); !ok {
		t.Errorf("batch ts is %T, want float64", batch[0])
	}
	if r, ok := e2eNum(batch[2]); !ok || !e2eIsInt(batch[2]) || int(r) != rank {
		t.Errorf("batch data_parallel_rank = %#v, want %d", batch[2], rank)
	}
	raw, ok := batch[1].([]any)
	if !ok || len(raw) == 0 {
		t.Fatalf("batch events = %#v, want a non-empty array", batch[1])
	}
	hashes := func(x any) []uint64 {
		arr, ok := x.([]any)
		if !ok || len(arr) == 0 {
			t.Fatalf("block_hashes = %#v", x)
		}
		out := make([]uint64, len(arr))
		for i, h := range arr {
			if out[i], ok = e2eU64(h); !ok {
				t.Fatalf("block hash %#v is not an unsigned integer", h)
			}
		}
		return out
	}
	parent := func(x any) *uint64 {
		if x == nil {
			return nil
		}
		p, ok := e2eU64(x)
		if !ok {
			t.Fatalf("parent_block_hash %#v is not an unsigned integer or null", x)
		}
		return &p
	}
	tokens := func(x any) int {
		arr, ok := x.([]any)
		if !ok {
			t.Fatalf("token_ids = %#v", x)
		}
		for _, tok := range arr {
			if !e2eIsInt(tok) {
				t.Fatalf("token id %#v is not an integer", tok)
			}
		}
		return len(arr)
	}
	var out []e2eKVEvent
	for _, e := range raw {
		var ev e2eKVEvent
		if array {
			a, ok := e.([]any)
			if !ok || len(a) == 0 {
				t.Fatalf("array encoding: event %#v", e)
			}
			ev.kind, _ = a[0].(string)
			switch ev.kind {
			case "BlockStored":
				if len(a) != 8 {
					t.Fatalf("BlockStored has %d elements, want 8: %#v", len(a), a)
				}
				ev.hashes, ev.parent, ev.nTokens = hashes(a[1]), parent(a[2]), tokens(a[3])
				bs, _ := e2eNum(a[4])
				ev.blockSize = int(bs)
				if a[6] != "GPU" {
					t.Errorf("BlockStored medium = %#v", a[6])
				}
				ev.loraID, ev.loraName = e2eLoRAFields(t, a[5], a[7])
			case "BlockRemoved":
				if len(a) != 3 || a[2] != "GPU" {
					t.Fatalf("BlockRemoved = %#v, want [tag, hashes, \"GPU\"]", a)
				}
				ev.hashes = hashes(a[1])
			case "AllBlocksCleared":
				if len(a) != 1 {
					t.Fatalf("AllBlocksCleared = %#v", a)
				}
			default:
				t.Fatalf("unknown event tag %#v", a[0])
			}
		} else {
			m, ok := e.(map[string]any)
			if !ok {
				t.Fatalf("map encoding: event %#v", e)
			}
			ev.kind, _ = m["type"].(string)
			keys := slices.Sorted(func(yield func(string) bool) {
				for k := range m {
					if !yield(k) {
						return
					}
				}
			})
			switch ev.kind {
			case "BlockStored":
				want := []string{"block_hashes", "block_size", "extra_keys", "group_idx", "kv_cache_spec_kind", "lora_id", "lora_name", "medium", "parent_block_hash", "token_ids", "type"}
				if !slices.Equal(keys, want) {
					t.Fatalf("BlockStored keys = %v, want %v", keys, want)
				}
				ev.hashes, ev.parent, ev.nTokens = hashes(m["block_hashes"]), parent(m["parent_block_hash"]), tokens(m["token_ids"])
				bs, _ := e2eNum(m["block_size"])
				ev.blockSize = int(bs)
				if gi, _ := e2eNum(m["group_idx"]); gi != 0 || m["kv_cache_spec_kind"] != "full_attention" ||
					m["medium"] != "GPU" {
					t.Errorf("BlockStored fixed fields: %#v", m)
				}
				ev.loraID, ev.loraName = e2eLoRAFields(t, m["lora_id"], m["lora_name"])
				xk, ok := m["extra_keys"].([]any)
				if !ok || len(xk) != len(ev.hashes) {
					t.Errorf("extra_keys = %#v, want one entry per block", m["extra_keys"])
				}
				ev.extraKeys = xk
			case "BlockRemoved":
				if !slices.Equal(keys, []string{"block_hashes", "group_idx", "medium", "type"}) || m["medium"] != "GPU" {
					t.Fatalf("BlockRemoved = %#v", m)
				}
				ev.hashes = hashes(m["block_hashes"])
			case "AllBlocksCleared":
				if len(m) != 1 {
					t.Fatalf("AllBlocksCleared = %#v", m)
				}
			default:
				t.Fatalf("unknown event type %#v", m["type"])
			}
		}
		out = append(out, ev)
	}
	return out
}

// e2eKVTracker checks, over a complete stream starting at seq 0, the
// consumer invariants that span messages (docs/kv-events.md): block size,
// parents announced before children, removals only of stored hashes.
type e2eKVTracker struct {
	blockSize                   int
	stored                      map[uint64]bool // announced and not removed since
	nStored, nRemoved, nCleared int             // events
	removedHashes, withParent   int
}

func (k *e2eKVTracker) apply(t *testing.T, b e2eKVBatch) {
	t.Helper()
	for _, ev := range b.events {
		switch ev.kind {
		case "BlockStored":
			k.nStored++
			if ev.blockSize != k.blockSize || ev.nTokens != len(ev.hashes)*k.blockSize {
				t.Errorf("seq %d: BlockStored block_size %d, %d tokens for %d hashes (block size %d)",
					b.seq, ev.blockSize, ev.nTokens, len(ev.hashes), k.blockSize)
			}
			if ev.parent != nil {
				k.withParent++
				if !k.stored[*ev.parent] {
					t.Errorf("seq %d: parent %d not announced (or already removed)", b.seq, *ev.parent)
				}
				if slices.Contains(ev.hashes, *ev.parent) {
					t.Errorf("seq %d: parent %d among the event's own hashes", b.seq, *ev.parent)
				}
			}
			seen := map[uint64]bool{}
			for _, h := range ev.hashes {
				if seen[h] {
					t.Errorf("seq %d: hash %d twice in one BlockStored", b.seq, h)
				}
				seen[h] = true
				if k.stored[h] {
					t.Errorf("seq %d: hash %d stored again while still cached", b.seq, h)
				}
				k.stored[h] = true
			}
		case "BlockRemoved":
			k.nRemoved++
			for _, h := range ev.hashes {
				if !k.stored[h] {
					t.Errorf("seq %d: BlockRemoved of unannounced (or already removed) hash %d", b.seq, h)
				}
				delete(k.stored, h)
				k.removedHashes++
			}
		case "AllBlocksCleared":
			k.nCleared++
			clear(k.stored)
		}
	}
}

// e2eKVSub is the live subscriber of one rank.
type e2eKVSub struct {
	rank  int
	sub   *testutil.ZMQSocket
	array bool
	live  []e2eKVBatch
}

// take receives one live message (nil on timeout) and checks its frames.
func (s *e2eKVSub) take(t *testing.T, timeout time.Duration) bool {
	t.Helper()
	frames := s.sub.Recv(timeout)
	if frames == nil {
		return false
	}
	if len(frames) != 3 {
		t.Fatalf("rank %d: live message has %d frames, want 3", s.rank, len(frames))
	}
	if len(frames[0]) != 0 {
		t.Errorf("rank %d: topic frame %q, want empty", s.rank, frames[0])
	}
	if len(frames[1]) != 8 {
		t.Fatalf("rank %d: sequence frame has %d bytes, want 8", s.rank, len(frames[1]))
	}
	b := e2eKVBatch{seq: binary.BigEndian.Uint64(frames[1]), payload: frames[2]}
	b.events = e2eDecodeKVPayload(t, b.payload, s.rank, s.array)
	if n := len(s.live); n > 0 && b.seq != s.live[n-1].seq+1 {
		t.Errorf("rank %d: live seq %d after %d: not contiguous", s.rank, b.seq, s.live[n-1].seq)
	}
	s.live = append(s.live, b)
	return true
}

// e2eReplay asks the rank's ROUTER for everything from seq 0 with a DEALER and
// reads until the end marker, checking the replay frame layout
// (docs/kv-events.md).
func e2eReplay(t *testing.T, ep string, rank int, topicFrame, array bool) []e2eKVBatch {
	t.Helper()
	d := testutil.NewZMQSocket(t, nil, zmq4.DEALER, ep, false, nil)
	if _, err := d.Sock.SendMessage("", make([]byte, 8)); err != nil {
		t.Fatalf("replay request: %v", err)
	}
	var out []e2eKVBatch
	for {
		frames := d.Recv(5 * time.Second)
		if frames == nil {
			t.Fatalf("rank %d: replay stalled after %d batches", rank, len(out))
		}
		want := 3
		if topicFrame {
			want = 4
		}
		if len(frames) != want || len(frames[0]) != 0 {
			t.Fatalf("rank %d: replay reply %q: want %d frames starting with an empty delimiter", rank, frames, want)
		}
		frames = frames[1:]
		if topicFrame {
			if len(frames[0]) != 0 {
				t.Errorf("rank %d: replay topic frame %q, want empty", rank, frames[0])
			}
			frames = frames[1:]
		}
		if len(frames[0]) != 8 {
			t.Fatalf("rank %d: replay sequence frame %x", rank, frames[0])
		}
		if bytes.Equal(frames[0], e2eEndSeq) {
			if len(frames[1]) != 0 {
				t.Errorf("rank %d: end marker payload %x, want empty", rank, frames[1])
			}
			return out
		}
		b := e2eKVBatch{seq: binary.BigEndian.Uint64(frames[0]), payload: frames[1]}
		if b.seq != uint64(len(out)) {
			t.Fatalf("rank %d: replay seq %d at position %d (history from 0 expected)", rank, b.seq, len(out))
		}
		b.events = e2eDecodeKVPayload(t, b.payload, rank, array)
		out = append(out, b)
	}
}

// TestE2E_KVEventsOverZMQ runs the live server with Dynamo-style ports
// (zmq_kv_events_port P, zmq_replay_port R, dp_size 2: rank r on P+r and
// R+r), a tiny KV cache (block size 4) so that blocks are evicted, and
// requests with shared prefixes pinned to each rank. A SUB per rank checks
// every live message; a DEALER per rank replays from 0 and the replay must
// hold exactly the live (seq, payload) pairs, plus the earlier ones the SUB
// may have missed before it was subscribed; the complete replayed stream
// must satisfy the consumer invariants, and its event counts must equal
// mocker_kv_events_total / mocker_kv_event_batches_total.
func TestE2E_KVEventsOverZMQ(t *testing.T) {
	t.Run("map", func(t *testing.T) { e2eRunKVEvents(t, false) })
	t.Run("array_no_replay_topic", func(t *testing.T) { e2eRunKVEvents(t, true) })
}

func e2eRunKVEvents(t *testing.T, array bool) {
	// Dynamo-style ports: rank r binds P+r and R+r.
	var P, R int
	var srv *running
	topicFrame := true
	testutil.WithPortRuns(t, 2, 2, func(bases []int) error {
		P, R = bases[0], bases[1]
		overlay := map[string]any{
			"block_size": 4, "num_gpu_blocks": 24, "max_model_len": 64, "dp_size": 2,
			"zmq_kv_events_port": P, "zmq_replay_port": R, "log_level": "error",
		}
		if array {
			overlay["kv_events_encoding"] = "array"
			overlay["kv_events_replay_topic_frame"] = false
			topicFrame = false
		}
		var err error
		srv, err = e2eTryStartProduction(t, loadConfig(t, overlay))
		return err
	})

	subs := make([]*e2eKVSub, 2)
	for r := range subs {
		subs[r] = &e2eKVSub{rank: r, array: array,
			sub: testutil.NewZMQSocket(t, nil, zmq4.SUB, fmt.Sprintf("tcp://127.0.0.1:%d", P+r), false,
				func(s *zmq4.Socket) error { return s.SetSubscribe("") })}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	complete := func(rank int, prompt []int, maxTokens int) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"model": "mocker-model", "prompt": prompt, "max_tokens": maxTokens})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.url+"/v1/completions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-data-parallel-rank", fmt.Sprint(rank))
		resp, err := srv.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), fmt.Sprintf(`"completion_tokens":%d`, maxTokens)) {
			t.Fatalf("rank %d request: %d %s", rank, resp.StatusCode, b)
		}
	}
	seqOf := func(base, n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = base + i
		}
		return out
	}

	// Synchronise each SUB on a probe: send distinct prompts (each stores
	// new blocks) until the SUB receives something. Earlier probes' batches
	// may be lost to the slow joiner; replay recovers them below.
	for r, s := range subs {
		deadline := time.Now().Add(5 * time.Second)
		for k := 0; !s.take(t, 150*time.Millisecond); k++ {
			if time.Now().After(deadline) {
				t.Fatalf("rank %d: no live KV event within 5 s of probing", r)
			}
			complete(r, seqOf(20000+100*k, 8), 1)
		}
	}

	// Workload per rank: two prefix families (shared 12- and 16-token
	// prefixes) and long distinct prompts that overflow the 24-block cache
	// and force evictions.
	for r := range subs {
		famA, famB := seqOf(100, 12), seqOf(200, 16)
		for k := range 4 {
			complete(r, append(slices.Clone(famA), seqOf(1000+20*k+r, 6)...), 4)
			complete(r, append(slices.Clone(famB), seqOf(2000+20*k+r, 5)...), 3)
			complete(r, seqOf(3000+100*k+r, 40), 4)
		}
		complete(r, append(slices.Clone(famA), 7, 7, 7, 7), 2)
	}

	for r, s := range subs {
		// Replay is the ground truth: wait until it holds every batch the
		// publisher counted, and the per-type event counts match.
		var rep []e2eKVBatch
		var tr *e2eKVTracker
		testutil.WaitUntil(t, 5*time.Second, func() string {
			rep = e2eReplay(t, fmt.Sprintf("tcp://127.0.0.1:%d", R+r), r, topicFrame, array)
			tr = &e2eKVTracker{blockSize: 4, stored: map[uint64]bool{}}
			sc := srv.e2eScrape(t)
			rl := map[string]string{"dp_rank": fmt.Sprint(r)}
			sent := sc.value("mocker_kv_event_batches_total", rl)
			dropped := sc.value("mocker_kv_event_batches_dropped_total", rl)
			stored := sc.value("mocker_kv_events_total", map[string]string{"dp_rank": fmt.Sprint(r), "type": "BlockStored"})
			removed := sc.value("mocker_kv_events_total", map[string]string{"dp_rank": fmt.Sprint(r), "type": "BlockRemoved"})
			var nStored, nRemoved int
			for _, b := range rep {
				for _, ev := range b.events {
					nStored += e2eBoolInt(ev.kind == "BlockStored")
					nRemoved += e2eBoolInt(ev.kind == "BlockRemoved")
				}
			}
			if float64(len(rep)) != sent+dropped || float64(nStored) != stored || float64(nRemoved) != removed {
				return fmt.Sprintf("rank %d: replay has %d batches (%d stored, %d removed events); metrics: %v sent + %v dropped batches, %v stored, %v removed",
					r, len(rep), nStored, nRemoved, sent, dropped, stored, removed)
			}
			if dropped != 0 {
				return fmt.Sprintf("rank %d: %v batches dropped at the HWM", r, dropped)
			}
			return ""
		})
		for _, b := range rep {
			tr.apply(t, b)
		}
		if tr.nStored == 0 || tr.nRemoved == 0 || tr.withParent == 0 {
			t.Errorf("rank %d: %d BlockStored (%d with a parent) and %d BlockRemoved events; want evictions and parent links",
				r, tr.nStored, tr.withParent, tr.nRemoved)
		}

		// The live SUB catches up to the replay's last batch; from its first
		// received batch on it must hold exactly the replayed pairs.
		last := rep[len(rep)-1].seq
		deadline := time.Now().Add(3 * time.Second)
		for s.live[len(s.live)-1].seq < last {
			if !s.take(t, time.Until(deadline)) {
				t.Fatalf("rank %d: live stream stopped at seq %d, replay has %d", r, s.live[len(s.live)-1].seq, last)
			}
		}
		first := s.live[0].seq
		for i, b := range s.live {
			if b.seq > last {
				break
			}
			want := rep[first+uint64(i)]
			if b.seq != want.seq || !bytes.Equal(b.payload, want.payload) {
				t.Errorf("rank %d: live seq %d differs from replay seq %d", r, b.seq, want.seq)
			}
		}
		t.Logf("rank %d: %d batches (live from seq %d), %d BlockStored / %d BlockRemoved events, %d hashes evicted",
			r, len(rep), first, tr.nStored, tr.nRemoved, tr.removedHashes)
	}
}
