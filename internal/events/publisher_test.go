package events

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	zmq "github.com/pebbe/zmq4"
	"go.uber.org/goleak"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/kv"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

// testLogger collects log lines (to check warnings) and is safe for
// concurrent use.
type testLogger struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *testLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *testLogger) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *testLogger) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func newKVPub(t testing.TB, zctx *zmq.Context, s KVSettings, log *slog.Logger) *KVPublisher {
	t.Helper()
	if s.BufferSteps == 0 {
		s.BufferSteps = DefaultBufferSteps
	}
	if s.HWM == 0 {
		s.HWM = DefaultHWM
	}
	if s.MaxQueueSize == 0 {
		s.MaxQueueSize = DefaultMaxQueueSize
	}
	p, err := NewKVPublisher(KVPublisherOptions{KVSettings: s, Context: zctx, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// batchN is a one-event batch whose single hash is n (distinguishable payloads).
func batchN(n int) engine.KVEventBatch {
	return engine.KVEventBatch{Time: time.Unix(1760000000, 500000000), Events: []kv.Event{
		{Kind: kv.Stored, BlockHashes: []uint64{uint64(n)}, TokenIDs: []uint32{1, 2, 3, 4}, BlockSize: 4}}}
}

// replayClient is a DEALER on a replay endpoint.
type replayClient struct {
	t testing.TB
	*testutil.ZMQSocket
}

func newReplayClient(t testing.TB, zctx *zmq.Context, ep string) replayClient {
	return replayClient{t, testutil.NewZMQSocket(t, zctx, zmq.DEALER, ep, false, nil)}
}

func (c replayClient) request(frames ...[]byte) {
	c.t.Helper()
	if _, err := c.Sock.SendMessage(frames); err != nil {
		c.t.Fatal(err)
	}
}

type replayed struct {
	seq     uint64
	topic   string
	payload []byte
}

// replay requests start and collects the reply up to the end marker.
func (c replayClient) replay(start uint64, topicFrame bool) []replayed {
	c.t.Helper()
	c.request([]byte{}, be64(start))
	var out []replayed
	for {
		msg := c.MustRecv(3*time.Second, "replay reply")
		if len(msg) == 0 || len(msg[0]) != 0 {
			c.t.Fatalf("reply does not start with the empty delimiter: %q", msg)
		}
		var r replayed
		switch {
		case topicFrame && len(msg) == 4:
			r.topic, msg = string(msg[1]), msg[2:]
		case !topicFrame && len(msg) == 3:
			msg = msg[1:]
		default:
			c.t.Fatalf("reply has %d frames (topic frame %v): %q", len(msg), topicFrame, msg)
		}
		if len(msg[0]) != 8 {
			c.t.Fatalf("seq frame %d bytes", len(msg[0]))
		}
		if bytes.Equal(msg[0], endSeq) {
			if len(msg[1]) != 0 || r.topic != "" {
				c.t.Fatalf("end marker with payload %q topic %q", msg[1], r.topic)
			}
			return out
		}
		r.seq, r.payload = binary.BigEndian.Uint64(msg[0]), msg[1]
		out = append(out, r)
	}
}

func seqs(rs []replayed) []uint64 {
	var out []uint64
	for _, r := range rs {
		out = append(out, r.seq)
	}
	return out
}

func TestReplay(t *testing.T) {
	for _, topicFrame := range []bool{true, false} {
		t.Run(fmt.Sprintf("topic_frame=%v", topicFrame), func(t *testing.T) {
			zctx := newCtx(t)
			logs := &testLogger{}
			replayEP := ipcEndpoint(t, "replay")
			p := newKVPub(t, zctx, KVSettings{Endpoint: ipcEndpoint(t, "pub"), Bind: true,
				ReplayEndpoint: replayEP, Topic: "kv@pod-a@mocker-model", BufferSteps: 5,
				ReplayTopicFrame: topicFrame, Publish: true}, logs.logger())
			c := newReplayClient(t, zctx, replayEP)

			// Empty buffer: only the end marker.
			if got := c.replay(0, topicFrame); len(got) != 0 {
				t.Fatalf("empty buffer replayed %v", seqs(got))
			}
			for i := range 8 {
				p.PublishKVEvents(batchN(i))
			}
			testutil.WaitFor(t, 5*time.Second, "8 batches sent", func() bool { return p.Sent() == 8 })

			// The ring keeps seqs 3..7.
			for _, c2 := range []struct {
				start uint64
				want  []uint64
			}{
				{5, []uint64{5, 6, 7}},
				{7, []uint64{7}},
				{0, []uint64{3, 4, 5, 6, 7}}, // older than the buffer: from the oldest
				{3, []uint64{3, 4, 5, 6, 7}},
				{8, nil}, // newer than the newest: only the end marker
				{1 << 62, nil},
			} {
				got := c.replay(c2.start, topicFrame)
				if fmt.Sprint(seqs(got)) != fmt.Sprint(c2.want) {
					t.Errorf("replay from %d: seqs %v, want %v", c2.start, seqs(got), c2.want)
				}
				for _, r := range got {
					want := EncodeBatch(nil, goldenTS, batchN(int(r.seq)).Events, 0, EncodingMap)
					if !bytes.Equal(r.payload, want) {
						t.Errorf("seq %d payload %s", r.seq, hexs(r.payload))
					}
					if topicFrame && r.topic != "kv@pod-a@mocker-model" {
						t.Errorf("seq %d topic %q", r.seq, r.topic)
					}
				}
			}

			// Malformed requests get no reply and a warning.
			c.request([]byte{}, []byte{0, 0, 0, 1})                // seq not 8 bytes
			c.request([]byte{}, be64(0), []byte("extra"))          // 4 frames at the ROUTER
			c.request(be64(0))                                     // 2 frames at the ROUTER
			c.request([]byte{}, []byte{0, 0, 0, 0, 0, 0, 0, 0, 0}) // 9 bytes
			if msg := c.Recv(400 * time.Millisecond); msg != nil {
				t.Fatalf("malformed request answered: %q", msg)
			}
			if n := strings.Count(logs.String(), "malformed replay request ignored"); n != 4 {
				t.Errorf("%d malformed-request warnings, want 4:\n%s", n, logs.String())
			}
			// The socket still serves valid requests afterwards.
			if got := c.replay(6, topicFrame); fmt.Sprint(seqs(got)) != "[6 7]" {
				t.Errorf("replay after malformed: %v", seqs(got))
			}
		})
	}
}

// TestReplayRingWrap checks the ring's indexing across many wraps.
func TestReplayRingWrap(t *testing.T) {
	r := newReplayRing(4)
	var got []uint64
	collect := func(start uint64) []uint64 {
		got = got[:0]
		r.from(start, func(s uint64, p []byte) bool {
			if string(p) != strconv.FormatUint(s, 10) {
				t.Fatalf("seq %d payload %q", s, p)
			}
			got = append(got, s)
			return true
		})
		return got
	}
	if len(collect(0)) != 0 {
		t.Fatal("empty ring replayed")
	}
	for s := range uint64(11) {
		e := r.next(s)
		e.payload = strconv.AppendUint(e.payload[:0], s, 10)
		lo := uint64(0)
		if s >= 3 {
			lo = s - 3
		}
		for start := uint64(0); start <= s+1; start++ {
			want := []uint64{}
			for q := max(start, lo); q <= s; q++ {
				want = append(want, q)
			}
			if fmt.Sprint(collect(start)) != fmt.Sprint(want) {
				t.Fatalf("after %d, from %d: %v, want %v", s, start, got, want)
			}
		}
	}
}

// TestQueueFullDrops drives the enqueue path without a publisher goroutine:
// a full queue drops and counts, never blocks.
func TestQueueFullDrops(t *testing.T) {
	logs := &testLogger{}
	p := &KVPublisher{publish: true, queue: newBoundedQueue[kvItem](1), log: logs.logger()}
	for i := range 3 {
		p.PublishKVEvents(batchN(i))
	}
	if p.QueueDropped() != 2 || p.Dropped() != 2 || p.queue.len() != 1 {
		t.Errorf("queue dropped %d, queued %d", p.QueueDropped(), p.queue.len())
	}
	if n := strings.Count(logs.String(), "KV event queue full"); n != 1 {
		t.Errorf("%d drop log lines within a second, want 1", n)
	}
	// Empty batches and a muted publisher queue nothing.
	p.PublishKVEvents(engine.KVEventBatch{})
	m := &KVPublisher{publish: false, queue: newBoundedQueue[kvItem](1)}
	m.PublishKVEvents(batchN(0))
	if m.queue.len() != 0 || m.Dropped() != 0 || p.Dropped() != 2 {
		t.Errorf("muted publisher queued %d", m.queue.len())
	}
	// Taking frees room again; order is kept.
	if got := p.queue.take(nil); len(got) != 1 || got[0].events[0].BlockHashes[0] != 0 {
		t.Errorf("took %v", got)
	}
	p.PublishKVEvents(batchN(7))
	if p.queue.len() != 1 || p.QueueDropped() != 2 {
		t.Errorf("after take: queued %d dropped %d", p.queue.len(), p.QueueDropped())
	}

	f := &FPMPublisher{queue: newBoundedQueue[engine.ForwardPassSnapshot](2), log: logs.logger()}
	for range 5 {
		f.PublishFPM(engine.ForwardPassSnapshot{})
	}
	if f.Dropped() != 3 {
		t.Errorf("FPM dropped %d, want 3", f.Dropped())
	}
}

// TestPublishNeverBlocks floods a real publisher with a tiny queue: every
// call returns at once, and every batch is either sent or counted dropped.
func TestPublishNeverBlocks(t *testing.T) {
	zctx := newCtx(t)
	p := newKVPub(t, zctx, KVSettings{Endpoint: ipcEndpoint(t, "pub"), Bind: true, MaxQueueSize: 4,
		Publish: true}, nil)
	const n = 100000
	b := batchN(1)
	start := time.Now()
	var worst time.Duration
	for range n {
		t0 := time.Now()
		p.PublishKVEvents(b)
		worst = max(worst, time.Since(t0))
	}
	total := time.Since(start)
	if total > 3*time.Second || worst > 200*time.Millisecond {
		t.Errorf("%d publishes took %v (worst call %v)", n, total, worst)
	}
	testutil.WaitFor(t, 5*time.Second, "queue drained", func() bool { return p.Sent()+p.Dropped() == n })
	if p.QueueDropped() == 0 {
		t.Errorf("no batch dropped with max_queue_size 4 (sent %d)", p.Sent())
	}
	t.Logf("%d publishes in %v (worst %v): sent %d, dropped %d", n, total, worst, p.Sent(), p.Dropped())
}

// TestStalledSubscriberLosesOnlyItsOwnBatches stalls a subscriber at HWM 1:
// the publisher never waits and never refuses a batch (a plain PUB drops
// at the stalled pipe only: nothing is counted as dropped at the
// publisher), the stalled subscriber holds a small part of what was sent,
// and every sequence number stays replayable.
func TestStalledSubscriberLosesOnlyItsOwnBatches(t *testing.T) {
	zctx := newCtx(t)
	pubEP, replayEP := ipcEndpoint(t, "pub"), ipcEndpoint(t, "replay")
	p := newKVPub(t, zctx, KVSettings{Endpoint: pubEP, Bind: true, ReplayEndpoint: replayEP,
		HWM: 1, BufferSteps: 100000, Publish: true}, nil)
	sub := testutil.NewZMQSocket(t, zctx, zmq.SUB, pubEP, false, func(s *zmq.Socket) error {
		_ = s.SetRcvhwm(1)
		return s.SetSubscribe("")
	})
	sub.Settle(300 * time.Millisecond)
	// Large batches fill the socket buffers quickly; the SUB never reads.
	big := engine.KVEventBatch{Events: []kv.Event{{Kind: kv.Stored, BlockHashes: make([]uint64, 64),
		TokenIDs: make([]uint32, 64*64), BlockSize: 64}}}
	for i := range big.Events[0].TokenIDs {
		big.Events[0].TokenIDs[i] = uint32(100000 + i)
	}
	const published = 2000
	for range published / 50 {
		for range 50 {
			p.PublishKVEvents(big)
		}
	}
	testutil.WaitFor(t, 5*time.Second, "queue drained", func() bool { return p.Sent()+p.Dropped() == published })
	if p.Sent() != published || p.Dropped() != 0 {
		t.Fatalf("sent %d, dropped %d of %d: the publisher refused batches", p.Sent(), p.Dropped(), published)
	}
	held := 0
	for sub.Recv(100*time.Millisecond) != nil {
		held++
	}
	if held == 0 || held >= published/2 {
		t.Errorf("the stalled subscriber received %d of %d batches", held, published)
	}
	// Every seq is in the replay buffer.
	got := newReplayClient(t, zctx, replayEP).replay(0, false)
	if len(got) != published || got[0].seq != 0 || got[len(got)-1].seq != uint64(published-1) {
		t.Errorf("replayed %d batches (%d published)", len(got), published)
	}
	t.Logf("published %d: the stalled subscriber got %d", published, held)
}

// TestOpenRanks opens a Dynamo-style dp_size 2 configuration: rank 1
// publishes on port+1 with dp_rank 1 in the payload.
func TestOpenRanks(t *testing.T) {
	zctx := newCtx(t)
	var (
		pubs *Publishers
		port int
	)
	testutil.WithPortRuns(t, 1, 2, func(bases []int) error { // rank r on port+r
		port = bases[0]
		var err error
		pubs, err = Open(Options{KVPort: port, DPSize: 2, Host: "127.0.0.1"}, nil)
		return err
	})
	t.Cleanup(func() { _ = pubs.Close() })
	if pubs.FPMSink(0) != nil || pubs.FPMSink(1) != nil || pubs.KVSink(2) != nil {
		t.Errorf("unexpected sinks")
	}
	for rank := range 2 {
		sub := testutil.NewZMQSub(t, zctx, "tcp://127.0.0.1:"+strconv.Itoa(port+rank), false, "")
		sub.Settle(200 * time.Millisecond)
		// Publish until the subscription has certainly arrived.
		var msg [][]byte
		for i := 0; msg == nil && i < 100; i++ {
			pubs.KVSink(rank).PublishKVEvents(engine.KVEventBatch{Rank: rank, Time: time.Unix(5, 0),
				Events: []kv.Event{{Kind: kv.AllCleared}}})
			msg = sub.Recv(50 * time.Millisecond)
		}
		if msg == nil {
			t.Fatalf("rank %d: nothing received on port %d", rank, port+rank)
		}
		if len(msg) != 3 || len(msg[0]) != 0 || len(msg[1]) != 8 {
			t.Fatalf("rank %d frames %q", rank, msg)
		}
		batch := decodeAny(t, msg[2]).([]any)
		if got := num(t, batch[2]); got != uint64(rank) {
			t.Errorf("port %d carries dp_rank %d, want %d", port+rank, got, rank)
		}
		if batch[0] != 5.0 {
			t.Errorf("ts %v", batch[0])
		}
		testutil.WaitFor(t, time.Second, "sent counter", func() bool { return pubs.KVBatchesSent(rank) > 0 })
		if pubs.KVBatchesDropped(rank) != 0 {
			t.Errorf("rank %d counters sent %d dropped %d", rank, pubs.KVBatchesSent(rank), pubs.KVBatchesDropped(rank))
		}
	}
}

// TestOpenFPMConnect opens FPM publishers that connect (no '*'): the test
// SUBs bind, one per rank port.
func TestOpenFPMConnect(t *testing.T) {
	zctx := newCtx(t)
	// The SUBs bind: rank 0's on a port the kernel chose, rank 1's on the
	// next one, which is usually free too.
	var subs []*testutil.ZMQSocket
	var port int
	for try := 0; subs == nil; try++ {
		s0 := testutil.NewZMQSub(t, zctx, testutil.AnyLoopbackPort, true, FPMTopic)
		port = testutil.EndpointPort(t, testutil.LastEndpoint(t, s0.Sock))
		s1, err := testutil.OpenZMQSocket(t, zctx, zmq.SUB, "tcp://127.0.0.1:"+strconv.Itoa(port+1), true,
			func(s *zmq.Socket) error { return s.SetSubscribe(FPMTopic) })
		if err == nil {
			subs = []*testutil.ZMQSocket{s0, s1}
		} else if try == 20 {
			t.Fatalf("no free port next to %d: %v", port, err)
		}
	}
	pubs, err := Open(Options{FPMEndpoint: "tcp://127.0.0.1:" + strconv.Itoa(port), DPSize: 2, WorkerID: "w0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pubs.Close() })
	if pubs.KVSink(0) != nil {
		t.Error("KV sink without KV events")
	}
	for rank, sub := range subs {
		sub.Settle(300 * time.Millisecond)
		var msg [][]byte
		for i := 0; msg == nil && i < 100; i++ {
			pubs.FPMSink(rank).PublishFPM(engine.ForwardPassSnapshot{Rank: rank, CounterID: uint64(i + 1), Heartbeat: true})
			msg = sub.Recv(50 * time.Millisecond)
		}
		if msg == nil {
			t.Fatalf("rank %d: no FPM message", rank)
		}
		m := decodeAny(t, msg[2]).(map[string]any)
		if string(msg[0]) != FPMTopic || num(t, m["dp_rank"]) != uint64(rank) || m["worker_id"] != "w0" {
			t.Errorf("rank %d: topic %q payload %v", rank, msg[0], m)
		}
		testutil.WaitFor(t, time.Second, "sent counter", func() bool { return pubs.FPMSent(rank) > 0 })
		if pubs.FPMDropped(rank) != 0 {
			t.Errorf("rank %d FPM counters %d %d", rank, pubs.FPMSent(rank), pubs.FPMDropped(rank))
		}
	}
}

func TestOpenBindFailureNamesEndpoint(t *testing.T) {
	port := testutil.Port(testutil.Listen(t).Addr())
	_, err := Open(Options{KVPort: port, Host: "127.0.0.1"}, nil)
	want := "tcp://127.0.0.1:" + strconv.Itoa(port)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want one naming %s", err, want)
	}
	// A busy replay port (rank 1 of 2) is reported too, and what was opened
	// before is closed again (goleak in TestMain). Rank 0's replay port q
	// must be free and rank 1's, q+1, busy.
	testutil.WithPortRuns(t, 2, 2, func(bases []int) error {
		q := bases[1]
		busy, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(q+1))
		if err != nil {
			return err
		}
		defer busy.Close()
		_, err = Open(Options{KVPort: bases[0], ReplayPort: q, DPSize: 2, Host: "127.0.0.1"}, nil)
		want := "tcp://127.0.0.1:" + strconv.Itoa(q+1)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "ROUTER") {
			return fmt.Errorf("replay: err = %v, want a ROUTER error naming %s", err, want)
		}
		return nil
	})
}

// TestOpenNothingPublished: silent publishers (prefix caching disabled, a
// decode worker: worker.EventsOptions) keep the sockets (a subscriber can
// connect) but send nothing; without a vLLM-style configuration (the null
// publisher, disabled events) nothing opens.
func TestOpenNothingPublished(t *testing.T) {
	zctx := newCtx(t)
	ep := ipcEndpoint(t, "pub")
	o := Options{VLLM: &VLLMKVEvents{Endpoint: ep}, Silent: true}
	logs := &testLogger{}
	pubs, err := Open(o, logs.logger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pubs.Close() })
	sub := testutil.NewZMQSub(t, zctx, ep, false, "")
	sub.Settle(200 * time.Millisecond)
	sink := pubs.KVSink(0)
	if sink == nil {
		t.Fatal("no sink")
	}
	for i := range 10 {
		sink.PublishKVEvents(batchN(i))
	}
	sub.Settle(300 * time.Millisecond)
	if pubs.KVBatchesSent(0) != 0 || pubs.KVBatchesDropped(0) != 0 {
		t.Errorf("counters %d %d", pubs.KVBatchesSent(0), pubs.KVBatchesDropped(0))
	}
	if !strings.Contains(logs.String(), "mode=bind") || !strings.Contains(logs.String(), "nothing will be published") {
		t.Errorf("startup log:\n%s", logs.String())
	}

	none, err := Open(Options{}, nil)
	if err != nil || none.KVSink(0) != nil || none.FPMSink(0) != nil || none.zctx != nil {
		t.Errorf("null publisher: %v %v", none, err)
	}
	_ = none.Close()
	var nilPubs *Publishers
	if nilPubs.Close() != nil || nilPubs.KVSink(0) != nil || nilPubs.KVBatchesSent(0) != 0 {
		t.Error("nil Publishers")
	}
}

// TestCloseEndsGoroutines: Close returns only after the publisher
// goroutines ended and the context is terminated; it is idempotent.
func TestCloseEndsGoroutines(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	o := Options{VLLM: &VLLMKVEvents{Endpoint: "inproc://kv", ReplayEndpoint: "inproc://replay"},
		DPSize: 3, FPMEndpoint: "inproc://fpm"}
	pubs, err := Open(o, nil)
	if err != nil {
		t.Fatal(err)
	}
	for r := range 3 {
		pubs.KVSink(r).PublishKVEvents(batchN(r))
		pubs.FPMSink(r).PublishFPM(engine.ForwardPassSnapshot{CounterID: 1})
	}
	done := make(chan error)
	go func() { done <- pubs.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close hangs")
	}
	if err := pubs.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	// Publishing after Close neither blocks nor panics.
	pubs.KVSink(0).PublishKVEvents(batchN(9))

	// A standalone publisher with its own context.
	p, err := NewKVPublisher(KVPublisherOptions{KVSettings: KVSettings{Endpoint: "inproc://solo",
		Bind: true, MaxQueueSize: 8, BufferSteps: 8, Publish: true}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("standalone close: %v", err)
	}
}
