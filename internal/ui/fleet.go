package ui

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"sync"
	"time"
)

// Fleet sparklines: one KV-usage sample per worker every sparkEvery while
// someone watches, sparkPoints of them.
const (
	sparkEvery  = 500 * time.Millisecond
	sparkPoints = 60
)

// FleetWorker is one worker as the fleet page lists it.
type FleetWorker struct {
	ID string
	// Status reports the worker's state and what operator actions did to
	// it.
	Status func() WorkerStatus
	// Hub is nil when the worker runs without the UI.
	Hub *Hub
}

// WorkerStatus is a worker's condition as its fleet tile shows it.
type WorkerStatus struct {
	// State is the worker's lifecycle state ("running", "paused",
	// "draining", "killed", "starting", "stopped").
	State string
	// URL is the worker's API base URL ("" before it listened).
	URL string
	// Draining is also true when State names something more significant.
	Draining bool
	// HealthFailing: /health answers 503.
	HealthFailing bool
	// Slow describes a slow action's timing change ("+50 ms per pass");
	// "" when the worker runs at its configured timing.
	Slow string
	// Sleep describes a worker in vLLM's sleep mode ("level 1", "waking");
	// "" when awake.
	Sleep string
}

// Fleet is the fleet page's state: the workers and their sparklines.
type Fleet struct {
	workers []FleetWorker
	byID    map[string]*Hub

	mu        sync.Mutex
	spark     map[string]*ring[float64]
	lastSpark time.Time
	lastEnc   time.Time
	encoded   []byte
	version   uint64
	viewers   viewers
}

// NewFleet returns the fleet view of workers.
func NewFleet(workers []FleetWorker) *Fleet {
	f := &Fleet{workers: workers, byID: map[string]*Hub{}, spark: map[string]*ring[float64]{}}
	for _, w := range workers {
		f.byID[w.ID] = w.Hub
		r := newRing[float64](sparkPoints)
		f.spark[w.ID] = &r
	}
	f.viewers.stall = defaultStallTimeout
	return f
}

type tileJSON struct {
	ID       string    `json:"id"`
	State    string    `json:"state"`
	URL      string    `json:"url"`
	Draining bool      `json:"draining"`
	Health   string    `json:"health"` // ok, failing, down
	Slow     string    `json:"slow"`
	Sleep    string    `json:"sleep"`
	UI       bool      `json:"ui"`
	TokensPS float64   `json:"tokens_per_s"`
	ReqPS    float64   `json:"requests_per_s"`
	TTFTp50  float64   `json:"ttft_p50_ms"`
	ITLp50   float64   `json:"itl_p50_ms"`
	Running  int       `json:"running"`
	Waiting  int       `json:"waiting"`
	InUse    int       `json:"in_use"`
	Cached   int       `json:"cached"`
	Blocks   int       `json:"blocks"`
	Usage    float64   `json:"usage"`
	Passes   int64     `json:"passes"`
	Finished int64     `json:"finished"`
	Spark    []float64 `json:"spark"`
}

// encode returns the fleet update, rebuilt at most every 1/MaxRate s
// whatever the number of viewers.
func (f *Fleet) encode() (uint64, []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	if f.encoded != nil && now.Sub(f.lastEnc) < time.Second/MaxRate {
		return f.version, f.encoded
	}
	sample := now.Sub(f.lastSpark) >= sparkEvery
	if sample {
		f.lastSpark = now
	}
	tiles := make([]tileJSON, 0, len(f.workers))
	for _, w := range f.workers {
		st := w.Status()
		t := tileJSON{ID: w.ID, State: st.State, URL: st.URL, Draining: st.Draining, Slow: st.Slow, Sleep: st.Sleep, UI: w.Hub != nil}
		switch {
		case st.HealthFailing:
			t.Health = "failing"
		case st.State == "running" || st.State == "paused" || st.State == "draining":
			t.Health = "ok"
		default:
			t.Health = "down"
		}
		if w.Hub != nil {
			s := w.Hub.Summary()
			t.Running, t.Waiting, t.InUse, t.Cached, t.Blocks = s.Running, s.Waiting, s.BlocksInUse, s.BlocksCached, s.Blocks
			t.Passes, t.Finished = s.Passes, s.FinishedRequests
			t.TokensPS, t.ReqPS = math.Round(s.Rate.TokensPerSec), math.Round(s.Rate.RequestsPerSec*10)/10
			t.TTFTp50, t.ITLp50 = s.TTFTp50, s.ITLp50
			if s.Blocks > 0 {
				t.Usage = round2(float64(s.BlocksInUse) / float64(s.Blocks) * 100)
			}
		}
		sp := f.spark[w.ID]
		if sample {
			sp.push(t.Usage)
		}
		sp.each(func(v float64) { t.Spark = append(t.Spark, v) })
		tiles = append(tiles, t)
	}
	b, _ := json.Marshal(map[string]any{"workers": tiles})
	f.lastEnc = now
	if !bytes.Equal(b, f.encoded) { // an idle fleet sends nothing new
		f.encoded = b
		f.version++
	}
	return f.version, f.encoded
}

// FleetHandler serves the fleet's UI under /ui: the fleet page and its
// stream, and each worker's engine page under /ui/worker/{id}. keys, when
// not empty, are required (the fleet's admin key).
func FleetHandler(f *Fleet, keys []string) http.Handler {
	a := newAuth(keys)
	mux := http.NewServeMux()
	mux.Handle("GET /ui/assets/", a.wrap(serveAssets, false))
	mux.HandleFunc("GET /ui", a.wrap(func(w http.ResponseWriter, r *http.Request) {
		_, snap := f.encode()
		renderPage(w, http.StatusOK, "fleet.html", pageData{Title: "fleet", Base: "/ui", Snapshot: scriptJSON(snap)})
	}, true))
	mux.HandleFunc("GET /ui/stream", a.wrap(func(w http.ResponseWriter, r *http.Request) {
		stream(w, r, &f.viewers, "fleet", f.encode)
	}, false))
	for _, w := range f.workers {
		if w.Hub == nil {
			continue
		}
		base := "/ui/worker/" + w.ID
		hub := w.Hub
		mux.HandleFunc("GET "+base, a.wrap(func(rw http.ResponseWriter, r *http.Request) {
			_, snap := hub.encodeEngine()
			renderPage(rw, http.StatusOK, "engine.html", pageData{Title: hub.Name(), Base: base, Fleet: true, Snapshot: scriptJSON(snap)})
		}, true))
		mountWorker(mux, base, hub, a)
	}
	mux.HandleFunc("/ui/", a.wrap(notFoundPage, true))
	return mux
}
