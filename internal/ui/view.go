package ui

import (
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/mocker-server/mocker-server/internal/jsonenc"
)

// maxRequestRows bounds the requests table sent per update (newest first).
const maxRequestRows = 300

// requestColumns name the cells of a requests row.
var requestColumns = []string{"id", "rank", "prompt", "output", "cached", "state", "queue_ms", "ttft_ms", "e2e_ms", "finish"}

// rankCopy is what one update shows of a rank, copied out of the rank
// view under its lock so that encoding happens after it.
type rankCopy struct {
	rank                           int
	grid                           []byte // run-length encoded (appendRLE)
	inUse, cached, free            int
	numRunning, numWaiting         int
	sleeping                       bool // sleep mode: no pass runs until /wake_up
	sleepLevel                     int
	running, waiting               []seqView // at most maxQueueShown each
	passes                         []passPoint
	feed                           []feedLine
	ttft, itl, e2e                 []float64
	hitRate                        float64
	passCount, preempts, evictions int64
}

// requestRow is one row of the requests table; NaN times have not happened.
type requestRow struct {
	label                 string
	rank                  int
	prompt, output, cache int
	state                 requestState
	queue, ttft, e2e      float64
	reason                string
}

// encodeEngine returns the JSON of the current engine view, encoding it
// at most once per hub version however many viewers ask. A new buffer each
// time: viewers may still be writing the previous one.
func (h *Hub) encodeEngine() (uint64, []byte) {
	v := h.version.Load()
	now := time.Now()
	// The rate moves without engine activity (it decays to 0 when the
	// worker idles): an update whose shown rate changed is a new one.
	rate := h.rates.at(now)
	rate.TokensPerSec, rate.RequestsPerSec = math.Round(rate.TokensPerSec), math.Round(rate.RequestsPerSec*10)/10
	h.encMu.Lock()
	defer h.encMu.Unlock()
	if h.encoded != nil && h.encVersion == v && h.encRate == rate {
		return h.encSeq, h.encoded
	}
	info := h.ServerInfo()
	var ranks []rankCopy
	for _, rv := range h.rankViews() {
		ranks = append(ranks, rv.copyOut())
	}
	rows := h.reqs.rows()
	b := make([]byte, 0, len(h.encoded)+512)
	b = append(b, '{')
	b = appendKey(b, "worker", true)
	b = jsonenc.AppendString(b, h.opts.Name)
	b = appendKey(b, "time", false)
	b = appendInt(b, now.UnixMilli())
	b = appendKey(b, "server", false)
	b = info.appendJSON(b)
	b = appendKey(b, "rate", false)
	b = append(b, `{"tokens_per_s":`...)
	b = appendFloat(b, rate.TokensPerSec)
	b = append(b, `,"requests_per_s":`...)
	b = appendFloat(b, rate.RequestsPerSec)
	b = append(b, `,"output_tokens":`...)
	b = appendInt(b, rate.OutputTokens)
	b = append(b, `,"finished":`...)
	b = appendInt(b, rate.Finished)
	b = append(b, '}')
	b = appendKey(b, "ranks", false)
	b = append(b, '[')
	for i := range ranks {
		if i > 0 {
			b = append(b, ',')
		}
		b = ranks[i].appendJSON(b, h)
	}
	b = append(b, ']')
	b = appendKey(b, "columns", false)
	b = append(b, '[')
	for i, c := range requestColumns {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonenc.AppendString(b, c)
	}
	b = append(b, ']')
	b = appendKey(b, "requests", false)
	b = append(b, '[')
	for i := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = rows[i].appendJSON(b)
	}
	b = append(b, ']', '}')
	h.encSeq++
	h.encVersion, h.encRate, h.encoded = v, rate, b
	return h.encSeq, b
}

// appendJSON writes the server's description.
func (si *ServerInfo) appendJSON(b []byte) []byte {
	b = append(b, '{')
	b = appendKey(b, "address", true)
	b = jsonenc.AppendString(b, si.Address)
	b = appendKey(b, "engine_type", false)
	b = jsonenc.AppendString(b, si.EngineType)
	b = appendKey(b, "role", false)
	b = jsonenc.AppendString(b, si.Role)
	for _, kv := range []struct {
		key string
		n   int
	}{{"dp_size", si.DPSize}, {"block_size", si.BlockSize}, {"num_blocks", si.NumBlocks}} {
		b = appendKey(b, kv.key, false)
		b = appendInt(b, int64(kv.n))
	}
	return append(b, '}')
}

// copyOut copies the rank's view under its lock.
func (rv *rankView) copyOut() rankCopy {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	c := rankCopy{rank: rv.rank, grid: appendRLE(nil, rv.grid), inUse: rv.inUse, cached: rv.cached,
		free: len(rv.grid) - rv.inUse - rv.cached, numRunning: len(rv.running), numWaiting: rv.numWaiting,
		sleeping: rv.sleep.Sleeping, sleepLevel: rv.sleep.Level,
		running: progressOnly(rv.running[:min(len(rv.running), maxQueueShown)]), waiting: progressOnly(rv.waiting),
		ttft: values(&rv.ttft), itl: values(&rv.itl), e2e: values(&rv.e2e),
		passCount: rv.passes, preempts: rv.preemptions, evictions: rv.evictions}
	rv.passRing.each(func(pp passPoint) { c.passes = append(c.passes, pp) })
	rv.feed.each(func(f feedLine) { c.feed = append(c.feed, f) })
	if rv.promptToks > 0 {
		c.hitRate = float64(rv.cachedToks) / float64(rv.promptToks)
	}
	return c
}

// appendRLE run-length encodes grid codes: each run is its code followed
// by its length in decimal when longer than one block (".4000c12" is 4000
// free blocks then 12 cached ones). Pools are mostly long runs; the worst
// case is the raw codes.
func appendRLE(b, grid []byte) []byte {
	for i := 0; i < len(grid); {
		j := i + 1
		for j < len(grid) && grid[j] == grid[i] {
			j++
		}
		b = append(b, grid[i])
		if j-i > 1 {
			b = strconv.AppendInt(b, int64(j-i), 10)
		}
		i = j
	}
	return b
}

func (c *rankCopy) appendJSON(b []byte, h *Hub) []byte {
	b = append(b, '{')
	b = appendKey(b, "rank", true)
	b = appendInt(b, int64(c.rank))
	b = appendKey(b, "blocks_rle", false)
	b = jsonenc.AppendString(b, string(c.grid))
	for _, kv := range []struct {
		key string
		n   int
	}{{"num_blocks", c.inUse + c.cached + c.free}, {"in_use", c.inUse}, {"cached", c.cached}, {"free", c.free},
		{"num_running", c.numRunning}, {"num_waiting", c.numWaiting}} {
		b = appendKey(b, kv.key, false)
		b = appendInt(b, int64(kv.n))
	}
	b = appendKey(b, "sleeping", false)
	b = strconv.AppendBool(b, c.sleeping)
	b = appendKey(b, "sleep_level", false)
	b = appendInt(b, int64(c.sleepLevel))
	labels := h.reqs.labels(c.running, c.waiting)
	for _, q := range []struct {
		key  string
		seqs []seqView
	}{{"running", c.running}, {"waiting", c.waiting}} {
		b = appendKey(b, q.key, false)
		b = append(b, '[')
		for i, s := range q.seqs {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '[')
			b = jsonenc.AppendString(b, labels[s.ID])
			for _, n := range []int{s.Prompt, s.Computed, s.Generated, s.Planned, s.Preemptions} {
				b = append(b, ',')
				b = appendInt(b, int64(n))
			}
			b = append(b, ',')
			b = strconv.AppendBool(b, s.Preempted)
			b = append(b, ']')
		}
		b = append(b, ']')
	}
	b = appendKey(b, "passes", false)
	b = append(b, '{')
	for i, col := range []struct {
		key string
		of  func(passPoint) float64
	}{
		{"t", func(p passPoint) float64 { return float64(p.At.UnixMilli()) / 1000 }},
		{"batch", func(p passPoint) float64 { return float64(p.Batch) }},
		{"prefill", func(p passPoint) float64 { return float64(p.Prefill) }},
		{"decode", func(p passPoint) float64 { return float64(p.Decode) }},
		{"modeled_ms", func(p passPoint) float64 { return p.Modeled }},
		{"actual_ms", func(p passPoint) float64 { return p.Actual }},
	} {
		b = appendKey(b, col.key, i == 0)
		b = append(b, '[')
		for j, p := range c.passes {
			if j > 0 {
				b = append(b, ',')
			}
			if col.key == "t" { // seconds with milliseconds: more than two decimals
				b = strconv.AppendFloat(b, col.of(p), 'f', 3, 64)
				continue
			}
			b = appendFloat(b, col.of(p))
		}
		b = append(b, ']')
	}
	b = append(b, '}')
	b = appendKey(b, "feed", false)
	b = append(b, '[')
	for i, f := range c.feed {
		if i > 0 {
			b = append(b, ',')
		}
		// [wall clock ms, kind, text]: the page formats every time alike.
		b = append(b, '[')
		b = appendInt(b, f.At.UnixMilli())
		b = append(b, ',')
		b = jsonenc.AppendString(b, string(f.Kind))
		b = append(b, ',')
		b = jsonenc.AppendString(b, f.Text)
		b = append(b, ']')
	}
	b = append(b, ']')
	b = appendKey(b, "latency", false)
	b = append(b, '{')
	for i, l := range []struct {
		key  string
		vals []float64
	}{{"ttft", c.ttft}, {"itl", c.itl}, {"e2e", c.e2e}} {
		b = appendKey(b, l.key, i == 0)
		p := percentiles(l.vals)
		b = append(b, '[')
		b = appendFloat(b, p[0])
		b = append(b, ',')
		b = appendFloat(b, p[1])
		b = append(b, ',')
		b = appendFloat(b, p[2])
		b = append(b, ']')
	}
	b = append(b, '}')
	b = appendKey(b, "hit_rate", false)
	b = strconv.AppendFloat(b, c.hitRate, 'f', 4, 64)
	b = appendKey(b, "totals", false)
	b = append(b, `{"passes":`...)
	b = appendInt(b, c.passCount)
	b = append(b, `,"preemptions":`...)
	b = appendInt(b, c.preempts)
	b = append(b, `,"evictions":`...)
	b = appendInt(b, c.evictions)
	return append(b, '}', '}')
}

func (r *requestRow) appendJSON(b []byte) []byte {
	b = append(b, '[')
	b = jsonenc.AppendString(b, r.label)
	for _, n := range []int{r.rank, r.prompt, r.output, r.cache} {
		b = append(b, ',')
		b = appendInt(b, int64(n))
	}
	b = append(b, ',')
	b = jsonenc.AppendString(b, string(r.state))
	for _, f := range []float64{r.queue, r.ttft, r.e2e} {
		b = append(b, ',')
		b = appendFloat(b, f)
	}
	b = append(b, ',')
	b = jsonenc.AppendString(b, r.reason)
	return append(b, ']')
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

// rows returns the requests table: the last maxRequestRows requests
// queued, newest first (with several ranks, queue order can differ from
// arrival order by the time a mailbox takes to apply).
func (l *requestLog) rows() []requestRow {
	l.mu.Lock()
	defer l.mu.Unlock()
	rows := make([]requestRow, 0, l.recent.len())
	l.recent.each(func(r *requestRecord) {
		label := r.Label
		if label == "" {
			label = strconv.FormatUint(r.ID, 10)
		}
		rows = append(rows, requestRow{label: label, rank: r.Rank, prompt: r.Prompt,
			output: r.Generated, cache: r.Cached, state: r.State, queue: sinceOrNaN(r, r.Admitted),
			ttft: sinceOrNaN(r, r.FirstToken), e2e: sinceOrNaN(r, r.Finished), reason: r.Reason})
	})
	slices.Reverse(rows)
	return rows
}

// sinceOrNaN is t − arrival in ms, NaN when t has not happened.
func sinceOrNaN(r *requestRecord, t time.Time) float64 {
	if t.IsZero() {
		return math.NaN()
	}
	return r.since(t)
}

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

func round2(v float64) float64 { return math.Round(v*100) / 100 }
