package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pebbe/zmq4"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/mocker-server/mocker-server/internal/testutil"
)

// e2eFPMMsg is one FPM message as received, decoded generically.
type e2eFPMMsg struct {
	seq       uint64
	keys      []string       // top-level keys in wire order
	m         map[string]any // top-level map
	sched     map[string]any
	queued    map[string]any
	counterID float64
	wallTime  float64
}

// e2eDecodeFPM decodes a 3-frame FPM message without the project's types.
func e2eDecodeFPM(t *testing.T, frames [][]byte) e2eFPMMsg {
	t.Helper()
	if len(frames) != 3 {
		t.Fatalf("FPM message has %d frames, want 3", len(frames))
	}
	if string(frames[0]) != "forward-pass-metrics" {
		t.Fatalf("FPM topic = %q", frames[0])
	}
	if len(frames[1]) != 8 {
		t.Fatalf("FPM sequence frame is %d bytes, want 8", len(frames[1]))
	}
	msg := e2eFPMMsg{seq: binary.BigEndian.Uint64(frames[1]), m: map[string]any{}}
	dec := msgpack.NewDecoder(bytes.NewReader(frames[2]))
	dec.UseLooseInterfaceDecoding(true)
	n, err := dec.DecodeMapLen()
	if err != nil {
		t.Fatalf("FPM payload is not a map: %v", err)
	}
	for range n {
		k, err := dec.DecodeString()
		if err != nil {
			t.Fatal(err)
		}
		v, err := dec.DecodeInterfaceLoose()
		if err != nil {
			t.Fatal(err)
		}
		msg.keys = append(msg.keys, k)
		msg.m[k] = v
	}
	msg.sched, _ = msg.m["scheduled_requests"].(map[string]any)
	msg.queued, _ = msg.m["queued_requests"].(map[string]any)
	msg.counterID, _ = e2eNum(msg.m["counter_id"])
	wt, ok := msg.m["wall_time"].(float64)
	if !ok {
		t.Fatalf("wall_time is %T, want float64", msg.m["wall_time"])
	}
	msg.wallTime = wt
	return msg
}

// field returns a numeric field of scheduled_requests ("s") or
// queued_requests ("q").
func (m e2eFPMMsg) field(t *testing.T, which, key string) float64 {
	t.Helper()
	src := m.sched
	if which == "q" {
		src = m.queued
	}
	v, ok := e2eNum(src[key])
	if !ok {
		t.Fatalf("FPM %s.%s = %#v (not a number)", which, key, src[key])
	}
	return v
}

// heartbeat reports whether every field except counter_id is zero.
func (m e2eFPMMsg) heartbeat(t *testing.T) bool {
	if m.wallTime != 0 {
		return false
	}
	for _, src := range []map[string]any{m.sched, m.queued} {
		for _, v := range src {
			if f, _ := e2eNum(v); f != 0 {
				return false
			}
		}
	}
	return true
}

// gauges maps the message onto the mocker_fpm_* gauge names
// (docs/metrics.md).
func (m e2eFPMMsg) gauges(t *testing.T) map[string]float64 {
	return map[string]float64{
		"num_prefill_requests":        m.field(t, "s", "num_prefill_requests"),
		"sum_prefill_tokens":          m.field(t, "s", "sum_prefill_tokens"),
		"var_prefill_length":          m.field(t, "s", "var_prefill_length"),
		"sum_prefill_kv_tokens":       m.field(t, "s", "sum_prefill_kv_tokens"),
		"num_decode_requests":         m.field(t, "s", "num_decode_requests"),
		"sum_decode_kv_tokens":        m.field(t, "s", "sum_decode_kv_tokens"),
		"var_decode_kv_tokens":        m.field(t, "s", "var_decode_kv_tokens"),
		"num_queued_prefill":          m.field(t, "q", "num_prefill_requests"),
		"sum_queued_prefill_tokens":   m.field(t, "q", "sum_prefill_tokens"),
		"var_queued_prefill_length":   m.field(t, "q", "var_prefill_length"),
		"num_queued_decode":           m.field(t, "q", "num_decode_requests"),
		"sum_queued_decode_kv_tokens": m.field(t, "q", "sum_decode_kv_tokens"),
		"var_queued_decode_kv_tokens": m.field(t, "q", "var_decode_kv_tokens"),
		"wall_time_secs":              m.wallTime,
		"counter_id":                  m.counterID,
	}
}

// e2eFPMStream receives and checks FPM messages of one rank: frames, topic,
// header fields, contiguous sequence numbers and counter_id = seq + 1.
type e2eFPMStream struct {
	sub      *testutil.ZMQSocket
	workerID string
	rank     int
	msgs     []e2eFPMMsg
}

func (s *e2eFPMStream) next(t *testing.T, timeout time.Duration) (e2eFPMMsg, bool) {
	t.Helper()
	frames := s.sub.Recv(timeout)
	if frames == nil {
		return e2eFPMMsg{}, false
	}
	m := e2eDecodeFPM(t, frames)
	wantKeys := []string{"version", "worker_id", "dp_rank", "counter_id", "wall_time", "scheduled_requests", "queued_requests"}
	if !slices.Equal(m.keys, wantKeys) {
		t.Errorf("FPM keys = %v, want %v", m.keys, wantKeys)
	}
	if v, _ := e2eNum(m.m["version"]); v != 1 || !e2eIsInt(m.m["version"]) {
		t.Errorf("version = %#v", m.m["version"])
	}
	if m.m["worker_id"] != s.workerID {
		t.Errorf("worker_id = %#v, want %q", m.m["worker_id"], s.workerID)
	}
	if v, _ := e2eNum(m.m["dp_rank"]); int(v) != s.rank || !e2eIsInt(m.m["dp_rank"]) {
		t.Errorf("dp_rank = %#v", m.m["dp_rank"])
	}
	if len(m.sched) != 7 || len(m.queued) != 6 {
		t.Errorf("scheduled_requests has %d keys, queued_requests %d; want 7 and 6", len(m.sched), len(m.queued))
	}
	for _, src := range []map[string]any{m.sched, m.queued} {
		for k, v := range src {
			if strings.HasPrefix(k, "var_") {
				if _, ok := v.(float64); !ok {
					t.Errorf("%s is %T, want float64", k, v)
				}
			} else if !e2eIsInt(v) {
				t.Errorf("%s is %T, want an integer", k, v)
			}
		}
	}
	if n := len(s.msgs); n > 0 && m.seq != s.msgs[n-1].seq+1 {
		t.Errorf("FPM seq %d after %d: not contiguous", m.seq, s.msgs[n-1].seq)
	}
	// Every snapshot is published (nothing dropped here), so the per-rank
	// counter (1 for the first message) and the sequence (0 for the first)
	// advance together.
	if m.counterID != float64(m.seq+1) {
		t.Errorf("counter_id %v at seq %d, want %d", m.counterID, m.seq, m.seq+1)
	}
	s.msgs = append(s.msgs, m)
	return m, true
}

// TestE2E_FPMOverZMQ runs engine scenario S1 (vllm, block size
// 64, polynomial timing, speedup 1, one completions request with 100
// distinct prompt ids, 3 tokens) through the live server with the FPM PUB
// bound on an ipc:// endpoint, decodes the messages generically, and checks
// the S1 values, the wire form, the idle heartbeat, and that the
// mocker_fpm_* gauges on /metrics equal the last message received.
func TestE2E_FPMOverZMQ(t *testing.T) {
	ep := "ipc://" + filepath.Join(t.TempDir(), "fpm.sock")
	const worker = "e2e-worker-7"
	cfg := loadConfig(t, map[string]any{
		"block_size": 64, "num_gpu_blocks": 16384, "timing_model": "polynomial", "speedup_ratio": 1.0,
		"fpm_endpoint": ep, "worker_id": worker, "log_level": "error",
	})
	srv := e2eStartProduction(t, cfg)
	sub := testutil.NewZMQSocket(t, nil, zmq4.SUB, ep, false, func(s *zmq4.Socket) error { return s.SetSubscribe("forward-pass-metrics") })
	st := &e2eFPMStream{sub: sub, workerID: worker, rank: 0}

	// Synchronise on the idle heartbeat (one per second while idle): once
	// one arrives, the subscription is in place and nothing later is lost.
	first, ok := st.next(t, 3500*time.Millisecond)
	if !ok {
		t.Fatal("no FPM heartbeat within 3.5 s of startup")
	}
	if !first.heartbeat(t) {
		t.Fatalf("first FPM message is not a heartbeat: %+v", first.m)
	}

	// S1.
	prompt := make([]int, 100)
	for i := range prompt {
		prompt[i] = 1000 + i
	}
	body, _ := json.Marshal(map[string]any{"model": "mocker-model", "prompt": prompt, "max_tokens": 3, "ignore_eos": true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp := srv.post(t, ctx, "/v1/completions", string(body))
	respBody, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(respBody), `"completion_tokens":3`) {
		t.Fatalf("S1 request: %d %s", resp.StatusCode, respBody)
	}
	requestDone := time.Now()

	// Collect the three pass snapshots (heartbeats before them are skipped).
	var passes []e2eFPMMsg
	for len(passes) < 3 {
		m, ok := st.next(t, 3*time.Second)
		if !ok {
			t.Fatalf("only %d pass snapshots received", len(passes))
		}
		if !m.heartbeat(t) {
			passes = append(passes, m)
		} else if len(passes) > 0 {
			t.Fatalf("heartbeat between the passes of one request (after %d passes)", len(passes))
		}
	}
	p1, p2, p3 := passes[0], passes[1], passes[2]
	expect := func(name string, got, want float64) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	expect("pass 1 num_prefill_requests", p1.field(t, "s", "num_prefill_requests"), 1)
	expect("pass 1 sum_prefill_tokens", p1.field(t, "s", "sum_prefill_tokens"), 100)
	expect("pass 1 sum_prefill_kv_tokens", p1.field(t, "s", "sum_prefill_kv_tokens"), 0)
	expect("pass 1 var_prefill_length", p1.field(t, "s", "var_prefill_length"), 0)
	expect("pass 1 num_decode_requests", p1.field(t, "s", "num_decode_requests"), 0)
	if math.Abs(p1.wallTime-0.023770567) > 1e-6 {
		t.Errorf("pass 1 wall_time = %.9f, want 0.023770567 ± 1e-6", p1.wallTime)
	}
	expect("pass 2 num_prefill_requests", p2.field(t, "s", "num_prefill_requests"), 0)
	expect("pass 2 num_decode_requests", p2.field(t, "s", "num_decode_requests"), 1)
	expect("pass 2 sum_decode_kv_tokens", p2.field(t, "s", "sum_decode_kv_tokens"), 101)
	// Pass 2 decodes with 2 active blocks: 29.517160 − 23.770567 ms.
	if math.Abs(p2.wallTime-0.005746593) > 1e-6 {
		t.Errorf("pass 2 wall_time = %.9f, want 0.005746593 ± 1e-6", p2.wallTime)
	}
	expect("pass 3 num_decode_requests", p3.field(t, "s", "num_decode_requests"), 1)
	expect("pass 3 sum_decode_kv_tokens", p3.field(t, "s", "sum_decode_kv_tokens"), 102)
	for i, p := range passes {
		for _, k := range []string{"num_prefill_requests", "sum_prefill_tokens", "num_decode_requests", "sum_decode_kv_tokens"} {
			expect(fmt.Sprintf("pass %d queued %s", i+1, k), p.field(t, "q", k), 0)
		}
	}

	// The gauges hold the last snapshot (pass 3) until the next heartbeat.
	e2eCheckFPMGauges(t, srv, st)
	s := srv.e2eScrape(t)
	if v := s.value("mocker_fpm_messages_total", map[string]string{"dp_rank": "0", "kind": "pass"}); v != 3 {
		t.Errorf(`mocker_fpm_messages_total{kind="pass"} = %v, want 3`, v)
	}

	// Idle heartbeats keep coming: at least one within 2.5 s of the request,
	// all-zero, with a larger counter_id.
	var hb e2eFPMMsg
	for hb.m == nil {
		left := time.Until(requestDone.Add(2500 * time.Millisecond))
		m, ok := st.next(t, max(left, 0))
		if !ok {
			t.Fatal("no idle heartbeat within 2.5 s after the request")
		}
		if !m.heartbeat(t) {
			t.Fatalf("non-heartbeat FPM message while idle: %+v", m.m)
		}
		hb = m
	}
	if hb.counterID <= p3.counterID {
		t.Errorf("heartbeat counter_id %v not after pass 3's %v", hb.counterID, p3.counterID)
	}
	e2eCheckFPMGauges(t, srv, st)
	if v := srv.e2eScrape(t).value("mocker_fpm_messages_total", map[string]string{"dp_rank": "0", "kind": "heartbeat"}); !(v >= 2) {
		t.Errorf(`mocker_fpm_messages_total{kind="heartbeat"} = %v, want ≥ 2`, v)
	}
}

// e2eCheckFPMGauges asserts that mocker_fpm_*{dp_rank="0"} on /metrics equal
// the last FPM message received. The gauges are set before the message
// reaches the socket, so a scrape may be one snapshot ahead of the SUB:
// then wait for that message; if the SUB is ahead, scrape again.
func e2eCheckFPMGauges(t *testing.T, srv *running, st *e2eFPMStream) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		s := srv.e2eScrape(t)
		g := map[string]float64{}
		for _, f := range e2eFPMFields {
			g[f] = s.value("mocker_fpm_"+f, map[string]string{"dp_rank": "0"})
		}
		last := st.msgs[len(st.msgs)-1]
		for g["counter_id"] > last.counterID && time.Now().Before(deadline) {
			if m, ok := st.next(t, time.Until(deadline)); ok {
				last = m
			}
		}
		if g["counter_id"] == last.counterID {
			want := last.gauges(t)
			for _, f := range e2eFPMFields {
				if g[f] != want[f] {
					t.Errorf("mocker_fpm_%s = %v, last FPM message (counter %v) has %v", f, g[f], last.counterID, want[f])
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("mocker_fpm_counter_id %v never matched the last FPM message (%v)", g["counter_id"], last.counterID)
		}
	}
}
