package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	zmq4 "github.com/pebbe/zmq4"

	"github.com/mocker-server/mocker-server/internal/testutil"
)

// Sleep mode end to end on `serve` (docs/sleep-mode.md): vLLM's dev-mode
// routes over HTTP, the KV cache cleared on the ZMQ subscriber, the metrics,
// a request that arrives while asleep, and the modeled wake-up time.

// sleepServer starts serve with sleep mode, dev mode and a KV-event
// publisher. 2 GB of weights reload in 200 ms from host memory (10 GB/s)
// and in 1 s from disk (2 GB/s).
func sleepServer(t *testing.T) (*running, *e2eKVSub) {
	t.Helper()
	var srv *running
	var port int
	testutil.WithPortRuns(t, 1, 1, func(bases []int) error {
		port = bases[0]
		var err error
		srv, err = e2eTryStartProduction(t, loadConfig(t, map[string]any{
			"block_size": 4, "num_gpu_blocks": 64, "max_model_len": 256, "log_level": "error",
			"speedup_ratio": 1, "timing_model": "fixed", "fixed_prefill_ms": 2, "fixed_decode_ms": 20,
			"zmq_kv_events_port": port, "dev_mode": true, "enable_sleep_mode": true,
			"sleep_weights_gb": 2, "sleep_host_bandwidth": 10, "sleep_disk_bandwidth": 2,
		}))
		return err
	})
	sub := &e2eKVSub{sub: testutil.NewZMQSocket(t, nil, zmq4.SUB, fmt.Sprintf("tcp://127.0.0.1:%d", port), false,
		func(s *zmq4.Socket) error { return s.SetSubscribe("") })}
	// Synchronise the SUB on probes, each storing new blocks.
	deadline := time.Now().Add(5 * time.Second)
	for k := 0; !sub.take(t, 150*time.Millisecond); k++ {
		if time.Now().After(deadline) {
			t.Fatal("no live KV event within 5 s of probing")
		}
		if code, body := sleepDo(t, srv, http.MethodPost, "/v1/completions", completionBody(30000+100*k, 1)); code != 200 {
			t.Fatalf("probe: %d %s", code, body)
		}
	}
	return srv, sub
}

func completionBody(base, maxTokens int) string {
	prompt := make([]int, 16)
	for i := range prompt {
		prompt[i] = base + i
	}
	b, _ := json.Marshal(map[string]any{"model": "mocker-model", "prompt": prompt, "max_tokens": maxTokens,
		"ignore_eos": true})
	return string(b)
}

func sleepDo(t *testing.T, srv *running, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := srv.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// checkSleepCORS: a browser may call the sleep routes from another origin,
// as vLLM's CORS middleware allows on every route: a preflight is answered
// and the answer carries Access-Control-Allow-Origin.
func checkSleepCORS(t *testing.T, srv *running) {
	t.Helper()
	for _, method := range []string{http.MethodOptions, http.MethodGet} {
		req, err := http.NewRequest(method, srv.url+"/is_sleeping", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Origin", "http://dashboard.example")
		req.Header.Set("Access-Control-Request-Method", http.MethodGet)
		resp, err := srv.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("%s /is_sleeping: %d, Access-Control-Allow-Origin %q", method, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
		}
	}
}

// waitCleared reads live KV batches until one holds AllBlocksCleared.
func waitCleared(t *testing.T, sub *e2eKVSub) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if !sub.take(t, 200*time.Millisecond) {
			continue
		}
		for _, ev := range sub.live[len(sub.live)-1].events {
			if ev.kind == "AllBlocksCleared" {
				return
			}
		}
	}
	t.Fatal("no AllBlocksCleared on the KV-event subscriber within 5 s")
}

type completionResult struct {
	code int
	body string
	took time.Duration
}

func completeAsync(t *testing.T, srv *running, body string) <-chan completionResult {
	out := make(chan completionResult, 1)
	go func() {
		start := time.Now()
		resp, err := srv.client.Post(srv.url+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			out <- completionResult{body: err.Error()}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		out <- completionResult{code: resp.StatusCode, body: string(b), took: time.Since(start)}
	}()
	return out
}

func TestE2E_SleepLevel1AbortsClearsAndWakesInModeledTime(t *testing.T) {
	srv, sub := sleepServer(t)
	if code, body := sleepDo(t, srv, http.MethodGet, "/is_sleeping", ""); code != 200 || body != `{"is_sleeping":false}` {
		t.Fatalf("/is_sleeping before: %d %s", code, body)
	}
	checkSleepCORS(t, srv)
	// A 200-token completion (4 s of 20 ms decode passes) is running when
	// the sleep comes: vLLM's default mode aborts it.
	running := completeAsync(t, srv, completionBody(1000, 200))
	testutil.WaitFor(t, 5*time.Second, "the long request running", func() bool {
		select {
		case r := <-running:
			t.Fatalf("the long request ended before the sleep: %d %s", r.code, r.body)
		default:
		}
		return srv.e2eScrape(t).value("vllm:num_requests_running", nil) == 1
	})
	code, body := sleepDo(t, srv, http.MethodPost, "/sleep?level=1", "")
	if code != 200 || body != "" {
		t.Fatalf("POST /sleep?level=1: %d %q, want 200 with no body", code, body)
	}
	select {
	case r := <-running:
		if r.code != 200 || !strings.Contains(r.body, `"finish_reason":"abort"`) {
			t.Errorf("running request after the sleep: %d %s", r.code, r.body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the running request did not end with the sleep")
	}
	waitCleared(t, sub)
	if code, body := sleepDo(t, srv, http.MethodGet, "/is_sleeping", ""); code != 200 || body != `{"is_sleeping":true}` {
		t.Fatalf("/is_sleeping asleep: %d %s", code, body)
	}
	// The gauges follow the engine's stats, published after the sleep
	// took effect: wait for them before reading the rest.
	var m *e2eExposition
	testutil.WaitFor(t, 5*time.Second, "the sleep-state gauge to show the sleep", func() bool {
		m = srv.e2eScrape(t)
		return m.value("vllm:engine_sleep_state", map[string]string{"sleep_state": "awake"}) == 0
	})
	for series, want := range map[string]float64{"awake": 0, "weights_offloaded": 1, "discard_all": 0} {
		if got := m.value("vllm:engine_sleep_state", map[string]string{"sleep_state": series}); got != want {
			t.Errorf("vllm:engine_sleep_state{sleep_state=%q} = %v, want %v", series, got, want)
		}
	}
	if got := m.value("vllm:kv_cache_usage_perc", nil); got != 0 {
		t.Errorf("vllm:kv_cache_usage_perc asleep = %v", got)
	}

	// A request that arrives while asleep waits (vLLM's paused scheduler
	// queues it) and is served after the wake-up.
	// Its prompt is the aborted request's, whose blocks were cached: the
	// cleared cache gives it no hit.
	hits := m.value("vllm:prefix_cache_hits_total", nil)
	queued := completeAsync(t, srv, completionBody(1000, 2))
	testutil.WaitFor(t, 5*time.Second, "the request queued", func() bool {
		return srv.e2eScrape(t).value("vllm:num_requests_waiting", nil) == 1
	})
	select {
	case r := <-queued:
		t.Fatalf("a request completed while asleep: %d %s", r.code, r.body)
	case <-time.After(300 * time.Millisecond):
	}
	start := time.Now()
	code, body = sleepDo(t, srv, http.MethodPost, "/wake_up", "")
	took := time.Since(start)
	if code != 200 || body != "" {
		t.Fatalf("POST /wake_up: %d %q", code, body)
	}
	// 2 GB at 10 GB/s is 200 ms; the machine is shared, so the upper bound
	// is loose.
	if took < 200*time.Millisecond || took > 1200*time.Millisecond {
		t.Errorf("wake-up took %v, want 200 ms (+ scheduling slack)", took)
	}
	t.Logf("level-1 wake-up of 2 GB at 10 GB/s took %v (modeled 200 ms)", took)
	select {
	case r := <-queued:
		if r.code != 200 || !strings.Contains(r.body, `"completion_tokens":2`) {
			t.Errorf("queued request: %d %s", r.code, r.body)
		}
		if after := srv.e2eScrape(t).value("vllm:prefix_cache_hits_total", nil); after != hits {
			t.Errorf("prefix cache hits went from %v to %v: the cache survived the sleep", hits, after)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the queued request did not complete after the wake-up")
	}
	if code, body := sleepDo(t, srv, http.MethodGet, "/is_sleeping", ""); body != `{"is_sleeping":false}` {
		t.Fatalf("/is_sleeping after the wake-up: %d %s", code, body)
	}
	waitSleepGauge(t, srv, "awake")
}

func TestE2E_SleepLevel2WakesByTags(t *testing.T) {
	srv, sub := sleepServer(t)
	if code, body := sleepDo(t, srv, http.MethodPost, "/sleep?level=2", ""); code != 200 {
		t.Fatalf("POST /sleep?level=2: %d %s", code, body)
	}
	waitCleared(t, sub)
	waitSleepGauge(t, srv, "discard_all")
	// The weights alone: 2 GB from disk at 2 GB/s, 1 s; the KV cache is
	// still asleep, so the engine is too.
	start := time.Now()
	if code, body := sleepDo(t, srv, http.MethodPost, "/wake_up?tags=weights", ""); code != 200 {
		t.Fatalf("wake_up?tags=weights: %d %s", code, body)
	}
	took := time.Since(start)
	if took < time.Second || took > 2*time.Second {
		t.Errorf("level-2 weight reload took %v, want 1 s", took)
	}
	t.Logf("level-2 wake-up of 2 GB at 2 GB/s took %v (modeled 1 s)", took)
	if _, body := sleepDo(t, srv, http.MethodGet, "/is_sleeping", ""); body != `{"is_sleeping":true}` {
		t.Errorf("/is_sleeping with the KV cache still asleep: %s", body)
	}
	start = time.Now()
	if code, body := sleepDo(t, srv, http.MethodPost, "/wake_up?tags=kv_cache", ""); code != 200 {
		t.Fatalf("wake_up?tags=kv_cache: %d %s", code, body)
	}
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Errorf("the KV cache alone took %v to wake", took)
	}
	if _, body := sleepDo(t, srv, http.MethodGet, "/is_sleeping", ""); body != `{"is_sleeping":false}` {
		t.Errorf("/is_sleeping after both tags: %s", body)
	}
	if code, body := sleepDo(t, srv, http.MethodPost, "/v1/completions", completionBody(5000, 2)); code != 200 {
		t.Errorf("completion after waking: %d %s", code, body)
	}
}

func TestE2E_SleepBadInputAndRoutes(t *testing.T) {
	srv, _ := sleepServer(t)
	for _, tc := range []struct {
		method, path string
		code         int
		contains     string
	}{
		{http.MethodPost, "/sleep?level=x", 400, `level must be an integer`},
		{http.MethodPost, "/sleep?level=3", 400, `level must be 0, 1 or 2`},
		{http.MethodPost, "/sleep?mode=nap", 400, `mode must be abort, wait or keep`},
		{http.MethodPost, "/wake_up?tags=gpu", 400, `unknown tag \"gpu\"`},
		{http.MethodGet, "/sleep", 405, `{"detail":"Method Not Allowed"}`},
		{http.MethodPost, "/is_sleeping", 405, `{"detail":"Method Not Allowed"}`},
	} {
		code, body := sleepDo(t, srv, tc.method, tc.path, "")
		if code != tc.code || !strings.Contains(body, tc.contains) {
			t.Errorf("%s %s: %d %s, want %d with %s", tc.method, tc.path, code, body, tc.code, tc.contains)
		}
		if code == 400 {
			var e struct {
				Error struct {
					Code int    `json:"code"`
					Type string `json:"type"`
				} `json:"error"`
			}
			if json.Unmarshal([]byte(body), &e) != nil || e.Error.Code != 400 || e.Error.Type != "BadRequestError" {
				t.Errorf("%s: not vLLM's error shape: %s", tc.path, body)
			}
		}
	}
	if _, body := sleepDo(t, srv, http.MethodGet, "/is_sleeping", ""); body != `{"is_sleeping":false}` {
		t.Errorf("a refused sleep put the engine to sleep: %s", body)
	}

	// Without dev mode the routes do not exist, as in vLLM; with dev mode
	// but no sleep mode they refuse.
	for _, tc := range []struct {
		overlay  map[string]any
		code     int
		contains string
	}{
		{map[string]any{"enable_sleep_mode": true}, 404, `{"detail":"Not Found"}`},
		{map[string]any{"dev_mode": true}, 400, `sleep mode is not enabled (start the worker with --enable-sleep-mode)`},
	} {
		tc.overlay["log_level"] = "error"
		other := startServe(t, loadConfig(t, tc.overlay), time.Second)
		code, body := sleepDo(t, other, http.MethodPost, "/sleep", "")
		if code != tc.code || !strings.Contains(body, tc.contains) {
			t.Errorf("%v: POST /sleep = %d %s, want %d %s", tc.overlay, code, body, tc.code, tc.contains)
		}
	}
}

// mode=wait: the sleep answers once the running request has finished its
// whole output; it was not aborted.
func TestE2E_SleepWaitLetsTheRunningRequestFinish(t *testing.T) {
	srv, sub := sleepServer(t)
	running := completeAsync(t, srv, completionBody(3000, 20)) // 20 × 20 ms
	testutil.WaitFor(t, 5*time.Second, "the request running", func() bool {
		return srv.e2eScrape(t).value("vllm:num_requests_running", nil) == 1
	})
	start := time.Now()
	code, body := sleepDo(t, srv, http.MethodPost, "/sleep?level=1&mode=wait", "")
	took := time.Since(start)
	if code != 200 || body != "" {
		t.Fatalf("POST /sleep?mode=wait: %d %q", code, body)
	}
	select {
	case r := <-running:
		if r.code != 200 || !strings.Contains(r.body, `"finish_reason":"length"`) || !strings.Contains(r.body, `"completion_tokens":20`) {
			t.Errorf("the running request: %d %s", r.code, r.body)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the running request did not end")
	}
	// The request had most of its 400 ms to go when the sleep came.
	if took < 100*time.Millisecond {
		t.Errorf("the sleep answered after %v: it did not wait for the running request", took)
	}
	waitCleared(t, sub)
	if _, body := sleepDo(t, srv, http.MethodGet, "/is_sleeping", ""); body != `{"is_sleeping":true}` {
		t.Errorf("/is_sleeping after the drain: %s", body)
	}
}

// waitSleepGauge waits for vllm:engine_sleep_state's series state to read
// 1: the gauges follow the engine's published stats, a moment after the
// HTTP answer of /sleep or /wake_up.
func waitSleepGauge(t *testing.T, srv *running, state string) {
	t.Helper()
	testutil.WaitFor(t, 5*time.Second, "vllm:engine_sleep_state{sleep_state="+state+"} = 1", func() bool {
		return srv.e2eScrape(t).value("vllm:engine_sleep_state", map[string]string{"sleep_state": state}) == 1
	})
}
