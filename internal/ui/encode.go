package ui

import (
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
	"time"
)

// maxRequestRows bounds the requests table sent per update (newest first).
const maxRequestRows = 300

// engineView is one update of the engine and requests pages.
type engineView struct {
	Worker   string     `json:"worker"`
	Time     int64      `json:"time"` // unix ms
	Ranks    []rankJSON `json:"ranks"`
	Requests [][]any    `json:"requests"`
	Columns  []string   `json:"columns"`
}

type rankJSON struct {
	Rank       int                   `json:"rank"`
	Blocks     string                `json:"blocks"` // one code per block (see rank.go)
	InUse      int                   `json:"in_use"`
	Cached     int                   `json:"cached"`
	Free       int                   `json:"free"`
	Running    [][]any               `json:"running"`
	Waiting    [][]any               `json:"waiting"`
	NumWaiting int                   `json:"num_waiting"`
	Passes     map[string][]float64  `json:"passes"`
	Feed       []string              `json:"feed"`
	Latency    map[string][3]float64 `json:"latency"` // p50, p90, p99 ms
	HitRate    float64               `json:"hit_rate"`
	Totals     map[string]int64      `json:"totals"`
}

// requestColumns name the cells of a requests row.
var requestColumns = []string{"id", "rank", "prompt", "output", "cached", "state", "queue_ms", "ttft_ms", "e2e_ms", "finish"}

// encodeEngine returns the JSON of the current engine view, encoding it
// at most once per hub version however many viewers ask.
func (h *Hub) encodeEngine() (uint64, []byte) {
	v := h.version.Load()
	h.encMu.Lock()
	defer h.encMu.Unlock()
	if h.encoded != nil && h.encVersion == v {
		return v, h.encoded
	}
	out := engineView{Worker: h.opts.Name, Time: time.Now().UnixMilli(), Columns: requestColumns}
	for _, rv := range h.rankViews() {
		out.Ranks = append(out.Ranks, rv.json(h))
	}
	out.Requests = h.reqs.rows()
	b, err := json.Marshal(out)
	if err != nil {
		b = []byte(`{}`) // cannot happen: only numbers, strings and slices
	}
	h.encVersion, h.encoded = v, b
	return v, b
}

// json encodes the rank's view. It copies under the lock and builds the
// rest after, so the engine goroutine's InspectPass waits only for copies.
func (rv *rankView) json(h *Hub) rankJSON {
	rv.mu.Lock()
	j := rankJSON{Rank: rv.rank, Blocks: string(rv.grid), InUse: rv.inUse, Cached: rv.cached,
		Free: len(rv.grid) - rv.inUse - rv.cached, NumWaiting: rv.numWaiting,
		Totals: map[string]int64{"passes": rv.passes, "preemptions": rv.preemptions, "evictions": rv.evictions}}
	running, waiting := progressOnly(rv.running), progressOnly(rv.waiting)
	var passes []passPoint
	rv.passRing.each(func(pp passPoint) { passes = append(passes, pp) })
	var feed []feedLine
	rv.feed.each(func(f feedLine) { feed = append(feed, f) })
	ttft, itl, e2e := values(&rv.ttft), values(&rv.itl), values(&rv.e2e)
	if rv.promptToks > 0 {
		j.HitRate = float64(rv.cachedToks) / float64(rv.promptToks)
	}
	rv.mu.Unlock()

	labels := h.reqs.labels(running, waiting)
	for _, s := range running {
		j.Running = append(j.Running, seqRow(s, labels))
	}
	for _, s := range waiting {
		j.Waiting = append(j.Waiting, seqRow(s, labels))
	}
	p := map[string][]float64{}
	for _, pp := range passes {
		p["t"] = append(p["t"], float64(pp.At.UnixMilli())/1000)
		p["batch"] = append(p["batch"], float64(pp.Batch))
		p["prefill"] = append(p["prefill"], float64(pp.Prefill))
		p["decode"] = append(p["decode"], float64(pp.Decode))
		p["modeled_ms"] = append(p["modeled_ms"], round2(pp.Modeled))
		p["actual_ms"] = append(p["actual_ms"], round2(pp.Actual))
	}
	j.Passes = p
	for _, f := range feed {
		j.Feed = append(j.Feed, f.At.Format("15:04:05.000")+" "+f.Text)
	}
	j.Latency = map[string][3]float64{"ttft": percentiles(ttft), "itl": percentiles(itl), "e2e": percentiles(e2e)}
	return j
}

// progressOnly copies the sequences without their block tables.
func progressOnly(seqs []seqView) []seqView {
	out := make([]seqView, len(seqs))
	for i, s := range seqs {
		s.Blocks, s.Hashes = nil, nil
		out[i] = s
	}
	return out
}

func values(r *ring[float64]) []float64 {
	vals := make([]float64, 0, r.len())
	r.each(func(v float64) { vals = append(vals, v) })
	return vals
}

func seqRow(s seqView, labels map[uint64]string) []any {
	return []any{labels[s.ID], s.Prompt, s.Computed, s.Generated, s.Planned, s.Preemptions, s.Preempted}
}

// percentiles returns p50, p90 and p99 of vals (zeros when empty); it
// sorts vals.
func percentiles(vals []float64) [3]float64 {
	if len(vals) == 0 {
		return [3]float64{}
	}
	slices.Sort(vals)
	at := func(q float64) float64 { return round2(vals[min(len(vals)-1, int(q*float64(len(vals))))]) }
	return [3]float64{at(0.5), at(0.9), at(0.99)}
}

func round2(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }

// labels returns the label of each listed sequence (its engine id when it
// has none).
func (l *requestLog) labels(lists ...[]seqView) map[uint64]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[uint64]string{}
	for _, list := range lists {
		for _, s := range list {
			if r := l.live[s.ID]; r != nil && r.Label != "" {
				out[s.ID] = r.Label
			} else {
				out[s.ID] = strconv.FormatUint(s.ID, 10)
			}
		}
	}
	return out
}

// rows returns the requests table, newest arrival first. Rows are copied
// under the lock and sorted after it, so the engine goroutine, which takes
// the same lock once per pass, never waits for the sort.
func (l *requestLog) rows() [][]any {
	type row struct {
		arrival time.Time
		id      uint64
		cells   []any
	}
	l.mu.Lock()
	recs := make([]row, 0, len(l.live)+l.done.len())
	add := func(r *requestRecord) {
		label := r.Label
		if label == "" {
			label = strconv.FormatUint(r.ID, 10)
		}
		recs = append(recs, row{r.Arrival, r.ID, []any{label, r.Rank, r.Prompt, r.Generated, r.Cached, r.State,
			optMs(r, r.Admitted), optMs(r, r.FirstToken), optMs(r, r.Finished), r.Reason}})
	}
	for _, r := range l.live {
		add(r)
	}
	l.done.each(add)
	l.mu.Unlock()
	slices.SortFunc(recs, func(a, b row) int {
		if c := b.arrival.Compare(a.arrival); c != 0 {
			return c
		}
		return cmp.Compare(b.id, a.id)
	})
	recs = recs[:min(len(recs), maxRequestRows)]
	rows := make([][]any, len(recs))
	for i, r := range recs {
		rows[i] = r.cells
	}
	return rows
}

// optMs is t − arrival in ms, or nil when t has not happened.
func optMs(r *requestRecord, t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return round2(r.since(t))
}

// requestDetail is one sequence's timeline (GET .../api/request).
type requestDetail struct {
	ID          string          `json:"id"`
	EngineID    uint64          `json:"engine_id"`
	Rank        int             `json:"rank"`
	Arrival     int64           `json:"arrival_unix_ms"`
	Prompt      int             `json:"prompt_tokens"`
	Planned     int             `json:"planned_tokens"`
	Generated   int             `json:"output_tokens"`
	Cached      int             `json:"cached_tokens"`
	State       requestState    `json:"state"`
	Reason      string          `json:"finish_reason"`
	Preemptions int             `json:"preemptions"`
	Events      []timelineEvent `json:"events"`
	Tokens      []float32       `json:"token_ms"`
	KV          []kvNote        `json:"kv_events"`
	Dropped     int             `json:"dropped"`
}

func (r *requestRecord) detail() requestDetail {
	return requestDetail{ID: r.Label, EngineID: r.ID, Rank: r.Rank, Arrival: r.Arrival.UnixMilli(),
		Prompt: r.Prompt, Planned: r.Planned, Generated: r.Generated, Cached: r.Cached, State: r.State,
		Reason: r.Reason, Preemptions: r.Preemptions, Events: slices.Clone(r.Events),
		Tokens: slices.Clone(r.Tokens), KV: slices.Clone(r.KV), Dropped: r.Dropped}
}

// blockDetail is one block's hover card (GET .../api/block).
type blockDetail struct {
	Rank    int      `json:"rank"`
	Block   int      `json:"block"`
	State   string   `json:"state"`
	Refs    int      `json:"refs"`
	Hash    string   `json:"hash,omitempty"`
	Parent  string   `json:"parent,omitempty"`
	Holders []string `json:"holders"`
}

// block describes block b as of the last state snapshot; ok is false when
// b is out of range.
func (rv *rankView) block(b int, h *Hub) (blockDetail, bool) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if b < 0 || b >= len(rv.grid) {
		return blockDetail{}, false
	}
	d := blockDetail{Rank: rv.rank, Block: b, Holders: []string{}}
	switch c := rv.grid[b]; c {
	case blockFree:
		d.State = "free"
	case blockCached:
		d.State = "cached"
	default:
		d.State, d.Refs = "in_use", int(c-'0')
	}
	var holders []seqView
	if hash := rv.hashes[b]; hash != 0 || d.State == "cached" {
		d.Hash = hashText(hash)
		if p, ok := rv.parents[hash]; ok {
			d.Parent = hashText(p)
		}
	}
	for _, s := range rv.running {
		for i, blk := range s.Blocks {
			if int(blk) != b {
				continue
			}
			holders = append(holders, s)
			if d.Parent == "" && i > 0 && i-1 < len(s.Hashes) {
				d.Parent = hashText(s.Hashes[i-1])
			}
			break
		}
	}
	labels := h.reqs.labels(holders)
	for _, s := range holders {
		d.Holders = append(d.Holders, labels[s.ID])
	}
	if d.Refs == 9 {
		d.Refs = len(holders) // the grid saturates at 9; the holders are exact
	}
	return d, true
}
