package events

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	zmq "github.com/pebbe/zmq4"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/kv"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

// idleSub connects a SUB that subscribes to everything and never reads,
// with the smallest receive buffers, so that its pipe at the publisher
// fills after a few hundred messages.
func idleSub(t *testing.T, zctx *zmq.Context, ep string) *testutil.ZMQSocket {
	return testutil.NewZMQSocket(t, zctx, zmq.SUB, ep, false, func(s *zmq.Socket) error {
		if err := s.SetRcvhwm(1); err != nil {
			return err
		}
		if err := s.SetRcvbuf(4096); err != nil {
			return err
		}
		return s.SetSubscribe("")
	})
}

// drainTo receives from sub until want messages in total have come,
// checking that their sequence numbers (frame 1) run 0, 1, 2, ... without
// a gap; it fails when delivery stalls for 5 s.
func drainTo(t *testing.T, sub *testutil.ZMQSocket, what string, got *uint64, want uint64) {
	t.Helper()
	for *got < want {
		msg := sub.Recv(5 * time.Second)
		if msg == nil {
			t.Fatalf("%s subscriber froze: %d of %d messages (a never-reading subscriber blocks delivery)", what, *got, want)
		}
		if len(msg) != 3 || len(msg[1]) != 8 {
			t.Fatalf("%s message with %d frames", what, len(msg))
		}
		if seq := binary.BigEndian.Uint64(msg[1]); seq != *got {
			t.Fatalf("%s subscriber got seq %d after %d messages: a gap", what, seq, *got)
		}
		*got++
	}
}

// TestIdleSubscriberDoesNotFreezeOthers connects, to both the KV event and
// the FPM publisher, a subscriber that never reads, next to a healthy one.
// With ZMQ_XPUB_NODROP the first full pipe refused every later message for
// everybody (the healthy KV subscriber froze at seq 1422 in the issue's
// probe); with a plain PUB, as vLLM has, only the idle subscriber loses
// messages. The healthy KV subscriber sees every sequence number, and the
// replay socket confirms the last one is the last published.
func TestIdleSubscriberDoesNotFreezeOthers(t *testing.T) {
	zctx := newCtx(t)
	kvEP, replayEP, fpmEP := ipcEndpoint(t, "kv"), ipcEndpoint(t, "replay"), ipcEndpoint(t, "fpm")
	const kvN, fpmN = 12_000, 24_000
	kvp := newKVPub(t, zctx, KVSettings{Endpoint: kvEP, Bind: true, ReplayEndpoint: replayEP, BufferSteps: kvN,
		HWM: 1000, MaxQueueSize: 1000, Publish: true}, nil)
	fp, err := NewFPMPublisher(FPMPublisherOptions{FPMSettings: FPMSettings{Endpoint: fpmEP, Bind: true, WorkerID: "w"}, Context: zctx})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fp.Close() })

	idleKV, idleFPM := idleSub(t, zctx, kvEP), idleSub(t, zctx, fpmEP)
	kvSub := testutil.NewZMQSub(t, zctx, kvEP, false, "")
	fpmSub := testutil.NewZMQSub(t, zctx, fpmEP, false, "")
	for _, s := range []*testutil.ZMQSocket{idleKV, idleFPM, kvSub, fpmSub} {
		s.Settle(100 * time.Millisecond)
	}

	// ~600-byte KV payloads: the idle pipe (HWM 1,000 plus the socket
	// buffers) is full after a few thousand batches; a healthy pipe never
	// holds more than one chunk.
	tokens := make([]uint32, 150)
	for i := range tokens {
		tokens[i] = uint32(100_000 + i)
	}
	var kvGot, fpmGot uint64
	const chunk = 100
	for sent := 0; sent < max(kvN, fpmN); sent += chunk {
		for i := sent; i < sent+chunk; i++ {
			if i < kvN {
				kvp.PublishKVEvents(engine.KVEventBatch{Time: time.Unix(1760000000, 0), Events: []kv.Event{
					{Kind: kv.Stored, BlockHashes: []uint64{uint64(i)}, TokenIDs: tokens, BlockSize: 150}}})
			}
			if i < fpmN {
				fp.PublishFPM(engine.ForwardPassSnapshot{NumDecodeRequests: i % 97, SumDecodeKVTokens: i})
			}
		}
		drainTo(t, kvSub, "KV event", &kvGot, uint64(min(sent+chunk, kvN)))
		drainTo(t, fpmSub, "FPM", &fpmGot, uint64(min(sent+chunk, fpmN)))
	}
	// Nothing lost for the healthy subscriber: the replay's last batch is
	// the last one it saw.
	got := newReplayClient(t, zctx, replayEP).replay(kvN-5, false)
	if fmt.Sprint(seqs(got)) != fmt.Sprint([]uint64{kvN - 5, kvN - 4, kvN - 3, kvN - 2, kvN - 1}) || kvGot != kvN {
		t.Errorf("replay from %d: %v; the healthy subscriber saw %d", kvN-5, seqs(got), kvGot)
	}
	// The idle subscriber's pipe did fill: it holds far fewer messages than
	// were published, so the others were tested against a full pipe.
	idleCount := 0
	for idleKV.Recv(50*time.Millisecond) != nil {
		idleCount++
	}
	if idleCount >= kvN/2 {
		t.Errorf("the idle KV subscriber buffered %d of %d batches: its pipe never filled", idleCount, kvN)
	}
	t.Logf("healthy KV %d/%d, healthy FPM %d/%d, idle KV kept %d", kvGot, kvN, fpmGot, fpmN, idleCount)
}
