package ui

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/kv"
)

// passRecorder forwards to the hub's inspector and notes, independently of
// the hub, what each pass preempted and evicted.
type passRecorder struct {
	engine.Inspector
	lines []string // the expected feed line of each pass that did either
}

func (p *passRecorder) InspectPass(t *engine.PassTrace) {
	evicted := 0
	for _, e := range t.KVEvents {
		if e.Kind == kv.Removed {
			evicted += len(e.BlockHashes)
		}
	}
	if len(t.Preempted) > 0 || evicted > 0 {
		var parts []string
		if len(t.Preempted) > 0 {
			parts = append(parts, fmt.Sprintf("preempted %d:", len(t.Preempted)))
		}
		if evicted > 0 {
			parts = append(parts, fmt.Sprintf("evicted %d block", evicted))
		}
		p.lines = append(p.lines, strings.Join(parts, "|"))
	}
	p.Inspector.InspectPass(t)
}

// A pool too small for its requests preempts and evicts in many passes:
// the feed has exactly one line per such pass, saying how many requests
// it preempted and how many blocks it evicted.
func TestHub_FeedHasOneLinePerPass(t *testing.T) {
	hub := NewHub(Options{})
	rec := &passRecorder{Inspector: hub.Inspector(0)}
	cfg := engine.DefaultConfig()
	cfg.NumBlocks, cfg.BlockSize = 24, 16
	core, err := engine.NewCore(cfg, engine.CoreOptions{Inspector: rec})
	if err != nil {
		t.Fatal(err)
	}
	s := &simulated{core: core, sim: engine.NewSimulator(core)}
	for i := range 6 {
		s.submit(time.Duration(i)*time.Millisecond, fmt.Sprintf("cmpl-%d", i), 60+i*16, 120)
	}
	s.run()
	rv := hub.rankView(0)
	var feed []feedLine
	rv.feed.each(func(f feedLine) { feed = append(feed, f) })
	want := rec.lines[max(0, len(rec.lines)-feedLength):]
	if rv.preemptions == 0 || rv.evictions == 0 {
		t.Fatalf("the run preempted %d and evicted %d blocks; the test needs both", rv.preemptions, rv.evictions)
	}
	if len(feed) != len(want) {
		t.Fatalf("%d feed lines for %d passes that preempted or evicted", len(feed), len(want))
	}
	for i, f := range feed {
		for _, part := range strings.Split(want[i], "|") {
			if !strings.Contains(f.Text, part) {
				t.Errorf("line %d %q lacks %q", i, f.Text, part)
			}
		}
		if wantKind := map[bool]feedKind{true: feedPreempt, false: feedEvict}[strings.HasPrefix(want[i], "preempted")]; f.Kind != wantKind {
			t.Errorf("line %d %q: kind %s, want %s", i, f.Text, f.Kind, wantKind)
		}
	}
}

func TestRates_WindowAndTotals(t *testing.T) {
	var r rates
	t0 := time.Unix(1_700_000_000, 0)
	if got := r.at(t0); got != (Rate{}) {
		t.Errorf("no counts: %+v", got)
	}
	r.add(t0, 100, 1)
	r.add(t0.Add(time.Second), 200, 3)
	for _, tc := range []struct {
		after              time.Duration
		wantTok, wantReqPS float64
	}{
		{0, 100, 1},                        // the window is at least 1 s
		{2 * time.Second, 150, 2},          // 300 tokens over the 2 s since the first
		{5500 * time.Millisecond, 40, 0.6}, // the first bucket left the 5 s window
		{7 * time.Second, 0, 0},            // idle: decayed to 0
	} {
		got := r.at(t0.Add(tc.after))
		if got.TokensPerSec != tc.wantTok || got.RequestsPerSec != tc.wantReqPS || got.OutputTokens != 300 || got.Finished != 4 {
			t.Errorf("after %v: %+v; want %v tok/s, %v req/s, totals 300 and 4", tc.after, got, tc.wantTok, tc.wantReqPS)
		}
	}
}

// The page embeds the current update, so its first paint needs no stream;
// a request label cannot end the script element.
func TestPages_EmbedTheSnapshot(t *testing.T) {
	hub := NewHub(Options{Name: "w0"})
	hub.SetServerInfo(ServerInfo{Address: "127.0.0.1:8000", EngineType: "vllm", DPSize: 1, BlockSize: 16, NumBlocks: 64})
	s := newSimulated(t, hub, 64)
	s.submit(0, "cmpl-</script><script>alert(1)</script>", 40, 3)
	s.run()
	rec := httptest.NewRecorder()
	Handler(hub, HandlerOptions{}).ServeHTTP(rec, httptest.NewRequest("GET", "/ui", nil))
	body := rec.Body.String()
	const open = `<script id="initial" type="application/json">`
	i := strings.Index(body, open)
	if i < 0 {
		t.Fatalf("no embedded snapshot in %.300s", body)
	}
	embedded := body[i+len(open):]
	embedded = embedded[:strings.Index(embedded, "</script>")]
	var u struct {
		Server struct {
			Address   string `json:"address"`
			NumBlocks int    `json:"num_blocks"`
		} `json:"server"`
		Rate struct {
			OutputTokens int `json:"output_tokens"`
			Finished     int `json:"finished"`
		} `json:"rate"`
		Requests [][]any `json:"requests"`
	}
	if err := json.Unmarshal([]byte(embedded), &u); err != nil {
		t.Fatalf("embedded snapshot is not JSON up to its script's end: %v\n%s", err, embedded)
	}
	if u.Server.Address != "127.0.0.1:8000" || u.Server.NumBlocks != 64 || u.Rate.OutputTokens != 3 || u.Rate.Finished != 1 ||
		len(u.Requests) != 1 || u.Requests[0][0] != "cmpl-</script><script>alert(1)</script>" {
		t.Errorf("embedded snapshot %+v", u)
	}
}

func TestFleet_TileSaysHealthDrainingAndSlowdown(t *testing.T) {
	st := WorkerStatus{State: "paused", URL: "http://127.0.0.1:8001", Draining: true, HealthFailing: true, Slow: "+50 ms per pass"}
	f := NewFleet([]FleetWorker{
		{ID: "0", Hub: NewHub(Options{}), Status: func() WorkerStatus { return st }},
		{ID: "1", Status: func() WorkerStatus { return WorkerStatus{State: "killed"} }},
	})
	_, b := f.encode()
	var u struct {
		Workers []tileJSON `json:"workers"`
	}
	if err := json.Unmarshal(b, &u); err != nil {
		t.Fatal(err)
	}
	w0, w1 := u.Workers[0], u.Workers[1]
	if w0.State != "paused" || w0.Health != "failing" || !w0.Draining || w0.Slow != st.Slow || w0.URL != st.URL {
		t.Errorf("paused tile %+v", w0)
	}
	if w1.State != "killed" || w1.Health != "down" || w1.UI {
		t.Errorf("killed tile %+v", w1)
	}
}
