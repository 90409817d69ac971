package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The worker serves the live view next to the API; its stream sees the
// requests the API ran; --ui=false removes it.
func TestUI_ServedNextToTheAPIAndOffWithTheFlag(t *testing.T) {
	for _, on := range []bool{true, false} {
		cfg := testConfig(t)
		cfg.UI = on
		w := New(cfg, Options{})
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		defer http.DefaultClient.CloseIdleConnections()
		if chat(t, w.URL()) != 200 {
			t.Fatal("chat failed")
		}
		res, err := http.Get(w.URL() + "/ui")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if on != (res.StatusCode == 200) || on != (w.UI() != nil) {
			t.Errorf("ui=%v: GET /ui = %d, hub %v", on, res.StatusCode, w.UI() != nil)
		}
		if !on {
			continue
		}
		res, err = http.Get(w.URL() + "/ui/stream?view=engine")
		if err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(res.Body).ReadString('\n')
		res.Body.Close()
		var v struct {
			Requests [][]any `json:"requests"`
			Ranks    []struct {
				NumBlocks int `json:"num_blocks"`
			} `json:"ranks"`
		}
		if err != nil || json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &v) != nil {
			t.Fatalf("stream: %q %v", line, err)
		}
		if len(v.Requests) != 1 || !strings.HasPrefix(v.Requests[0][0].(string), "chatcmpl-") ||
			len(v.Ranks) != 1 || v.Ranks[0].NumBlocks != cfg.NumGPUBlocks {
			t.Errorf("stream: %d requests (%v), %d ranks", len(v.Requests), v.Requests, len(v.Ranks))
		}
	}
}

// A restart gives the engines a fresh pool; the view follows it and keeps
// the request history.
func TestUI_FollowsARestart(t *testing.T) {
	w := New(testConfig(t), Options{})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	defer http.DefaultClient.CloseIdleConnections()
	chat(t, w.URL())
	if err := w.Kill(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	chat(t, w.URL())
	if s := w.UI().Summary(); s.FinishedRequests != 2 || s.BlocksInUse != 0 {
		t.Errorf("after a restart: %+v; want 2 finished requests, nothing in use", s)
	}
}
