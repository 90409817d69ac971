package events

import (
	"context"
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

func newFPMPub(t *testing.T, s FPMSettings) *FPMPublisher {
	t.Helper()
	p, err := NewFPMPublisher(FPMPublisherOptions{FPMSettings: s})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// fpmMsg checks an FPM message's frames and decodes its payload generically.
func fpmMsg(t *testing.T, msg [][]byte) (uint64, map[string]any) {
	t.Helper()
	if len(msg) != 3 || string(msg[0]) != FPMTopic || len(msg[1]) != 8 {
		t.Fatalf("FPM frames %q", msg)
	}
	m, ok := decodeAny(t, msg[2]).(map[string]any)
	if !ok {
		t.Fatalf("FPM payload is not a map")
	}
	return binary.BigEndian.Uint64(msg[1]), m
}

func field(t *testing.T, m map[string]any, group, key string) any {
	t.Helper()
	if group != "" {
		m = m[group].(map[string]any)
	}
	v, ok := m[key]
	if !ok {
		t.Fatalf("no %s.%s in %v", group, key, m)
	}
	return v
}

// TestFPMScenarioS1 runs engine scenario S1 (vllm, bs 64, one request of
// 100 prompt tokens and 3 planned tokens) in virtual time with an FPM
// publisher and checks the pass snapshots a real SUB receives.
func TestFPMScenarioS1(t *testing.T) {
	zctx := newCtx(t)
	ep := ipcEndpoint(t, "fpm")
	p := newFPMPub(t, FPMSettings{Endpoint: ep, Bind: true, WorkerID: "w0"})
	sub := testutil.NewZMQSub(t, zctx, ep, false, FPMTopic)
	sub.Settle(700 * time.Millisecond)

	cfg := config.Default()
	cfg.BlockSize = 64
	core, err := engine.NewCore(cfg.EngineConfig(nil), engine.CoreOptions{FPMSink: p})
	if err != nil {
		t.Fatal(err)
	}
	sim := engine.NewSimulator(core)
	sim.SubmitAt(0, &engine.Request{ID: engine.NewRequestID(), Prompt: tokenRange(1000, 100),
		PlannedOutput: []uint32{5, 6, 7}})
	if passes := sim.Run(0); passes != 3 {
		t.Fatalf("%d passes", passes)
	}
	var msgs []map[string]any
	for i := range 3 {
		seq, m := fpmMsg(t, sub.MustRecv(3*time.Second, "FPM pass message"))
		if seq != uint64(i) || num(t, m["counter_id"]) != uint64(i+1) || m["worker_id"] != "w0" ||
			num(t, m["version"]) != 1 || num(t, m["dp_rank"]) != 0 {
			t.Fatalf("message %d: seq %d %v", i, seq, m)
		}
		msgs = append(msgs, m)
	}
	p1, p2 := msgs[0], msgs[1]
	for _, c := range []struct {
		m          map[string]any
		group, key string
		want       uint64
	}{
		{p1, "scheduled_requests", "num_prefill_requests", 1},
		{p1, "scheduled_requests", "sum_prefill_tokens", 100},
		{p1, "scheduled_requests", "sum_prefill_kv_tokens", 0},
		{p1, "scheduled_requests", "num_decode_requests", 0},
		{p2, "scheduled_requests", "num_prefill_requests", 0},
		{p2, "scheduled_requests", "num_decode_requests", 1},
		{p2, "scheduled_requests", "sum_decode_kv_tokens", 101},
		{p1, "queued_requests", "num_prefill_requests", 0},
	} {
		if got := num(t, field(t, c.m, c.group, c.key)); got != c.want {
			t.Errorf("%s.%s = %d, want %d", c.group, c.key, got, c.want)
		}
	}
	if wt, ok := p1["wall_time"].(float64); !ok || math.Abs(wt-0.023770567) > 2e-9 {
		t.Errorf("pass 1 wall_time %#v, want 0.023770567", p1["wall_time"])
	}
	if v := field(t, p1, "scheduled_requests", "var_prefill_length"); v != 0.0 {
		t.Errorf("var_prefill_length %#v", v)
	}
	// The counter moves just after the send returns.
	testutil.WaitFor(t, time.Second, "sent counter", func() bool { return p.Sent() == 3 })
	if p.Dropped() != 0 {
		t.Errorf("dropped %d", p.Dropped())
	}
}

// TestFPMHeartbeat runs a live idle engine with a 50 ms heartbeat: the SUB
// receives 409-byte heartbeats with consecutive counters and seqs.
func TestFPMHeartbeat(t *testing.T) {
	zctx := newCtx(t)
	ep := ipcEndpoint(t, "fpm")
	p := newFPMPub(t, FPMSettings{Endpoint: ep, Bind: true, WorkerID: "w0"})
	sub := testutil.NewZMQSub(t, zctx, ep, false, FPMTopic)
	sub.Settle(300 * time.Millisecond)

	cfg := config.Default()
	e, err := engine.New(cfg.EngineConfig(nil), engine.Options{FPMSink: p, HeartbeatInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()

	var prevSeq, prevCounter uint64
	start := time.Now()
	for i := range 4 {
		msg := sub.MustRecv(2*time.Second, "heartbeat")
		seq, m := fpmMsg(t, msg)
		counter := num(t, m["counter_id"])
		if i == 0 && counter < 128 && len(msg[2]) != 409 {
			t.Errorf("heartbeat payload %d bytes, want 409", len(msg[2]))
		}
		if i > 0 && (seq != prevSeq+1 || counter != prevCounter+1) {
			t.Errorf("heartbeat %d: seq %d counter %d after %d/%d", i, seq, counter, prevSeq, prevCounter)
		}
		prevSeq, prevCounter = seq, counter
		if m["wall_time"] != 0.0 {
			t.Errorf("wall_time %#v", m["wall_time"])
		}
		for _, g := range []string{"scheduled_requests", "queued_requests"} {
			for k, v := range m[g].(map[string]any) {
				if f, ok := v.(float64); ok {
					if f != 0 {
						t.Errorf("%s.%s = %v", g, k, f)
					}
				} else if num(t, v) != 0 {
					t.Errorf("%s.%s = %v", g, k, v)
				}
			}
		}
	}
	if el := time.Since(start); el > 1500*time.Millisecond {
		t.Errorf("4 heartbeats took %v at a 50 ms interval", el)
	}
}
