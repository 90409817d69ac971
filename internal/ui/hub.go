package ui

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// Defaults of Options.
const (
	defaultMaxRequests   = 500
	defaultStateInterval = 100 * time.Millisecond
	defaultStallTimeout  = 10 * time.Second
	passHistory          = 120 // passes kept for the timeline chart
	feedLength           = 40  // preemption/eviction lines kept
	latencyWindow        = 1024
)

// Options configure a Hub. The zero value is usable.
type Options struct {
	// Name labels the worker on the pages ("" = "server").
	Name string
	// MaxRequests bounds the ring of finished requests kept for the
	// requests table (default 500). Live requests are always kept.
	MaxRequests int
	// StateInterval is the shortest time between two state snapshots the
	// hub asks an engine for (default 100 ms: the pages never show more
	// than 10 updates per second).
	StateInterval time.Duration
	// StallTimeout is how long one write to a viewer may block before the
	// viewer is dropped (default 10 s).
	StallTimeout time.Duration
}

// Hub collects what one worker's engines report (it hands each rank an
// engine.Inspector) and encodes the views the pages stream. Safe for
// concurrent use.
type Hub struct {
	opts Options

	ranksMu sync.Mutex
	ranks   []*rankView

	reqs  requestLog
	rates rates

	infoMu sync.Mutex
	info   ServerInfo

	// version changes whenever anything shown changes; encoders cache by it.
	version atomic.Uint64
	viewers viewers

	encMu      sync.Mutex
	encVersion uint64
	encRate    Rate   // the rate shown in encoded
	encSeq     uint64 // counts encodings: the version streams compare
	encoded    []byte
}

// NewHub returns an empty hub.
func NewHub(opts Options) *Hub {
	if opts.Name == "" {
		opts.Name = "server"
	}
	if opts.MaxRequests <= 0 {
		opts.MaxRequests = defaultMaxRequests
	}
	if opts.StateInterval <= 0 {
		opts.StateInterval = defaultStateInterval
	}
	if opts.StallTimeout <= 0 {
		opts.StallTimeout = defaultStallTimeout
	}
	h := &Hub{opts: opts, viewers: viewers{stall: opts.StallTimeout}}
	h.reqs.init(opts.MaxRequests)
	return h
}

// Name returns the worker's label.
func (h *Hub) Name() string { return h.opts.Name }

// Viewers returns the number of streams currently open.
func (h *Hub) Viewers() int { return int(h.viewers.open.Load()) }

// viewers counts a page's open streams and says how long a write to one
// may block.
type viewers struct {
	open  atomic.Int64
	stall time.Duration
}

// Inspector returns the engine.Inspector for DP rank r. Each call starts
// the rank's view afresh: a restarted worker has fresh engines and a fresh
// pool. The request log is kept across restarts.
func (h *Hub) Inspector(rank int) engine.Inspector {
	rv := newRankView(h, rank)
	h.ranksMu.Lock()
	for len(h.ranks) <= rank {
		h.ranks = append(h.ranks, nil)
	}
	h.ranks[rank] = rv
	h.ranksMu.Unlock()
	h.version.Add(1)
	return rv
}

// rankViews returns the current views, rank order.
func (h *Hub) rankViews() []*rankView {
	h.ranksMu.Lock()
	defer h.ranksMu.Unlock()
	out := make([]*rankView, 0, len(h.ranks))
	for _, rv := range h.ranks {
		if rv != nil {
			out = append(out, rv)
		}
	}
	return out
}

// rankView returns rank r's view, or nil.
func (h *Hub) rankView(r int) *rankView {
	h.ranksMu.Lock()
	defer h.ranksMu.Unlock()
	if r < 0 || r >= len(h.ranks) {
		return nil
	}
	return h.ranks[r]
}

// ServerInfo is what the engine page's header says about the server.
type ServerInfo struct {
	// Address is the API's host:port.
	Address string
	// EngineType is vllm, sglang or trtllm.
	EngineType string
	// Role is the disaggregation role (aggregated, prefill, decode).
	Role string
	// DPSize is the number of DP ranks; BlockSize the tokens per block
	// (page); NumBlocks the blocks (pages) per rank.
	DPSize, BlockSize, NumBlocks int
}

// SetServerInfo sets what the page header shows; a worker calls it when
// it listens.
func (h *Hub) SetServerInfo(si ServerInfo) {
	h.infoMu.Lock()
	h.info = si
	h.infoMu.Unlock()
	h.version.Add(1)
}

// ServerInfo returns what SetServerInfo set.
func (h *Hub) ServerInfo() ServerInfo {
	h.infoMu.Lock()
	defer h.infoMu.Unlock()
	return h.info
}

// Summary is a worker's load at a glance (the fleet page's tile).
type Summary struct {
	Running, Waiting    int
	BlocksInUse, Blocks int
	BlocksCached        int
	Passes, Preemptions int64
	FinishedRequests    int64
	// Rate is the recent throughput and the output tokens delivered.
	Rate Rate
	// TTFTp50 and ITLp50 are the medians (ms) over the last 1024
	// finished requests of every rank (0 before the first).
	TTFTp50, ITLp50 float64
}

// Summary adds up the ranks' latest state.
func (h *Hub) Summary() Summary {
	var s Summary
	var ttft, itl []float64
	for _, rv := range h.rankViews() {
		rv.mu.Lock()
		s.Running += len(rv.running)
		s.Waiting += rv.numWaiting
		s.BlocksInUse += rv.inUse
		s.BlocksCached += rv.cached
		s.Blocks += len(rv.grid)
		s.Passes += rv.passes
		s.Preemptions += rv.preemptions
		rv.ttft.each(func(v float64) { ttft = append(ttft, v) })
		rv.itl.each(func(v float64) { itl = append(itl, v) })
		rv.mu.Unlock()
	}
	s.FinishedRequests = h.reqs.finishedTotal()
	s.Rate = h.rates.at(time.Now())
	s.TTFTp50, s.ITLp50 = percentiles(ttft)[0], percentiles(itl)[0]
	return s
}
