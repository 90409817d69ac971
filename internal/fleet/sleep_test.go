package fleet

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/testutil"
)

// Sleep mode in a fleet (docs/sleep-mode.md): the admin API puts a worker
// to sleep and wakes it, /workers shows it, a request to the sleeping
// worker waits until the wake-up, which takes its modeled time, and the
// worker's KV-event subscriber sees the cache cleared.
func TestFleetSleepAndWakeAWorker(t *testing.T) {
	file, err := ParseFile([]byte("workers:\n  - count: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	var (
		f      *Fleet
		admin  string
		kvPort int
	)
	// 2 GB of weights at 10 GB/s from host memory: a 200 ms wake-up.
	testutil.WithPortRuns(t, 1, 2, func(bases []int) error {
		kvPort = bases[0]
		members, _, err := Plan(Spec{File: file, Base: testLoadOptions(map[string]any{
			"speedup_ratio": 1, "timing_model": "fixed", "fixed_prefill_ms": 2, "fixed_decode_ms": 20,
			"block_size": 16, "zmq_kv_events_port": kvPort, "log_level": "warn", "host": "127.0.0.1",
			"enable_sleep_mode": true, "sleep_weights_gb": 2, "sleep_host_bandwidth": 10,
		})})
		if err != nil {
			t.Fatal(err)
		}
		f, err = Start(t.Context(), members, Options{AdminAddr: "127.0.0.1:0", AdminKey: adminKey,
			ShutdownGrace: 2 * time.Second})
		if err == nil {
			admin = f.AdminURL()
		}
		return err
	})
	client := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	t.Cleanup(func() {
		f.Stop()
		client.CloseIdleConnections()
	})
	url0 := f.Worker(0).URL()
	complete := func(n, maxTokens int) (int, string) {
		body := fmt.Sprintf(`{"prompt":%q,"max_tokens":%d,"ignore_eos":true}`, prompt(0, n), maxTokens)
		resp, err := client.Post(url0+"/v1/completions", "application/json", strings.NewReader(body))
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	sub := newKVSub(t, fmt.Sprintf("tcp://127.0.0.1:%d", kvPort))
	for n := 0; !sub.take(t, 150*time.Millisecond); n++ {
		if n == 30 {
			t.Fatal("no KV event from worker 0")
		}
		complete(1000+n, 1)
	}
	sleepOf := func(i int) map[string]any {
		t.Helper()
		code, v := adminCall(t, client, http.MethodGet, admin+"/workers", adminKey, "")
		list, _ := v.([]any)
		if code != 200 || len(list) != 2 {
			t.Fatalf("/workers: %d %v", code, v)
		}
		return list[i].(map[string]any)["sleep"].(map[string]any)
	}

	// A stream in flight is aborted by the sleep (vLLM's default mode).
	st := startStream(t, client, url0, "mocker-model", prompt(0, 1), 200)
	<-st.tokens
	code, v := adminCall(t, client, http.MethodPost, admin+"/workers/0/sleep?level=1", adminKey, "")
	if code != 200 {
		t.Fatalf("sleep: %d %v", code, v)
	}
	if s := v.(map[string]any)["sleep"].(map[string]any); s["is_sleeping"] != true || s["sleep_level"] != 1.0 {
		t.Errorf("sleep answer's state: %v", s)
	}
	select {
	case <-st.done:
		if n := len(st.tokens); n >= 199 {
			t.Errorf("the stream got %d tokens: not aborted", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream did not end with the sleep")
	}
	for cleared := false; !cleared; {
		if !sub.take(t, 3*time.Second) {
			t.Fatal("no AllBlocksCleared after the sleep")
		}
		cleared = slices.Contains(sub.live[len(sub.live)-1].kinds, "AllBlocksCleared")
	}
	if s := sleepOf(0); s["is_sleeping"] != true || s["sleep_level"] != 1.0 || s["waking"] != false {
		t.Errorf("/workers: worker 0 sleep = %v", s)
	}
	if s := sleepOf(1); s["is_sleeping"] != false {
		t.Errorf("/workers: worker 1 sleep = %v", s)
	}
	// The fleet page's tiles read the same state.
	req, _ := http.NewRequest(http.MethodGet, admin+"/ui/stream?view=fleet", nil)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(res.Body).ReadString('\n')
	res.Body.Close()
	var tiles struct {
		Workers []struct {
			State string `json:"state"`
			Sleep string `json:"sleep"`
		} `json:"workers"`
	}
	if err != nil || json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &tiles) != nil || len(tiles.Workers) != 2 {
		t.Fatalf("fleet stream: %q %v", line, err)
	}
	if w := tiles.Workers[0]; w.State != "running" || w.Sleep != "level 1" {
		t.Errorf("worker 0's tile: %+v", w)
	}
	if w := tiles.Workers[1]; w.Sleep != "" {
		t.Errorf("worker 1's tile: %+v", w)
	}

	// A request to the sleeping worker waits for the wake-up.
	type result struct {
		code int
		body string
	}
	queued := make(chan result, 1)
	go func() {
		c, b := complete(2000, 2)
		queued <- result{c, b}
	}()
	select {
	case r := <-queued:
		t.Fatalf("served while asleep: %d %s", r.code, r.body)
	case <-time.After(300 * time.Millisecond):
	}
	start := time.Now()
	code, v = adminCall(t, client, http.MethodPost, admin+"/workers/0/wake_up", adminKey, "")
	took := time.Since(start)
	if code != 200 || v.(map[string]any)["sleep"].(map[string]any)["is_sleeping"] != false {
		t.Fatalf("wake_up: %d %v", code, v)
	}
	if took < 200*time.Millisecond || took > 1200*time.Millisecond {
		t.Errorf("wake-up took %v, want 200 ms", took)
	}
	t.Logf("fleet wake-up: %v (modeled 200 ms)", took)
	select {
	case r := <-queued:
		if r.code != 200 || !strings.Contains(r.body, `"completion_tokens":2`) {
			t.Errorf("queued request: %d %s", r.code, r.body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the queued request did not complete after the wake-up")
	}

	for _, tc := range []struct{ path, want string }{
		{"/workers/0/sleep?level=9", "level must be 0, 1 or 2"},
		{"/workers/1/sleep?mode=nap", "mode must be abort, wait or keep"},
		{"/workers/1/wake_up?tags=gpu", `unknown tag "gpu"`},
	} {
		code, v := adminCall(t, client, http.MethodPost, admin+tc.path, adminKey, "")
		msg, _ := v.(map[string]any)["error"].(map[string]any)["message"].(string)
		if code != 400 || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: %d %v, want 400 with %q", tc.path, code, v, tc.want)
		}
	}
	if s := sleepOf(1); s["is_sleeping"] != false {
		t.Errorf("a refused sleep put worker 1 to sleep: %v", s)
	}
}
