package routerlab

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/mocker-server/mocker-server/internal/replay"
)

// Report is a run's outcome: the online side as the driver measured it,
// the workers' sampled load, the faults applied, and the offline replays
// of the same requests with each built-in policy.
type Report struct {
	URL         string  `json:"url"`
	Model       string  `json:"model"`
	Interrupted bool    `json:"interrupted"`
	WallS       float64 `json:"wall_s"`
	// Online is the router under test; Offline the replays, one per policy.
	Online  Side   `json:"online"`
	Offline []Side `json:"offline,omitempty"`
	// OfflineRouters name the offline sides in order (the CSV's columns).
	OfflineRouters []string        `json:"-"`
	Bound          *Bound          `json:"clairvoyant_bound,omitempty"`
	Samples        []WorkerSamples `json:"samples,omitempty"`
	Faults         []FaultOutcome  `json:"faults,omitempty"`
	// Verdict states the router against the best offline policies.
	Verdict []string `json:"verdict"`
	// Notes say what differs between online and offline and what is
	// missing.
	Notes []string `json:"notes"`

	rows           []*record
	start          time.Time
	workerIDs      []string
	offlineWorkers map[*record][]string
}

// Side is one routing of the workload: the router online or a policy
// offline.
type Side struct {
	Name      string `json:"name"`
	Requests  int    `json:"requests"`
	Completed int    `json:"completed"`
	Failed    int    `json:"failed"`
	// Unattributed counts failed requests no worker answered (refused
	// connections, the router's own errors): no worker header.
	Unattributed int `json:"failed_unattributed"`
	// PrefixCacheHitRate is cached prompt tokens over prompt tokens of
	// completed requests; -1 when the workers did not report cached
	// tokens (start them with --enable-prompt-tokens-details).
	PrefixCacheHitRate float64      `json:"prefix_cache_hit_rate"`
	PromptTokens       int          `json:"prompt_tokens"`
	CachedTokens       int          `json:"cached_tokens"`
	OutputTokens       int          `json:"output_tokens"`
	TTFTMs             replay.Stat  `json:"ttft_ms"`
	ITLMs              replay.Stat  `json:"itl_ms"`
	E2EMs              replay.Stat  `json:"e2e_ms"`
	Imbalance          Imbalance    `json:"imbalance"`
	Workers            []WorkerLoad `json:"workers"`
	// SameRouting is the fraction of requests this policy sent to the
	// worker the router under test sent them to (offline sides only).
	SameRouting float64 `json:"same_routing,omitempty"`
}

// WorkerLoad is one worker's share of a side.
type WorkerLoad struct {
	Worker       string  `json:"worker"`
	Requests     int     `json:"requests"`
	Failed       int     `json:"failed"`
	PromptTokens int     `json:"prompt_tokens"`
	OutputTokens int     `json:"output_tokens"`
	HitRate      float64 `json:"prefix_cache_hit_rate"`
}

// Imbalance is the load spread over workers as max / mean (1 = even):
// of the requests each worker got, of the tokens (prompt + output), and of
// the requests in flight on each worker over time (sampled at BucketS,
// averaged over the instants anything was in flight).
type Imbalance struct {
	Requests float64   `json:"requests"`
	Tokens   float64   `json:"tokens"`
	InFlight float64   `json:"in_flight_mean"`
	PeakOver float64   `json:"in_flight_max"`
	BucketS  float64   `json:"bucket_s"`
	OverTime []float64 `json:"over_time"`
}

// Bound is the clairvoyant upper bound on prefix-cache hits (see
// clairvoyantBound).
type Bound struct {
	HitRate      float64 `json:"prefix_cache_hit_rate"`
	CachedTokens int     `json:"cached_tokens"`
	PromptTokens int     `json:"prompt_tokens"`
	BlockSize    int     `json:"block_size"`
}

// span is one request as a side saw it, for the load computations.
type span struct {
	worker                 string
	start, end             float64 // ms from the start
	prompt, output, cached int
	ok                     bool
	ttft, e2e, itl         float64
}

// sideOf summarises spans.
func sideOf(name string, spans []span, workers []string, cachedKnown bool) Side {
	s := Side{Name: name, Requests: len(spans)}
	var ttft, itl, e2e []float64
	byWorker := map[string]*WorkerLoad{}
	cachedBy := map[string]int{}
	for _, w := range workers {
		byWorker[w] = &WorkerLoad{Worker: w}
	}
	for _, sp := range spans {
		wl := byWorker[sp.worker]
		if wl == nil && sp.worker != "" {
			wl = &WorkerLoad{Worker: sp.worker}
			byWorker[sp.worker] = wl
		}
		if !sp.ok {
			s.Failed++
			if sp.worker == "" {
				s.Unattributed++
			}
			if wl != nil {
				wl.Requests++
				wl.Failed++
			}
			continue
		}
		s.Completed++
		s.PromptTokens += sp.prompt
		s.CachedTokens += sp.cached
		s.OutputTokens += sp.output
		ttft = append(ttft, sp.ttft)
		e2e = append(e2e, sp.e2e)
		if sp.output > 1 {
			itl = append(itl, sp.itl)
		}
		if wl != nil {
			wl.Requests++
			wl.PromptTokens += sp.prompt
			wl.OutputTokens += sp.output
			cachedBy[sp.worker] += sp.cached
		}
	}
	s.TTFTMs, s.ITLMs, s.E2EMs = replay.Summarize(ttft), replay.Summarize(itl), replay.Summarize(e2e)
	s.PrefixCacheHitRate = -1
	if cachedKnown {
		s.PrefixCacheHitRate = ratio(s.CachedTokens, s.PromptTokens)
	}
	names := make([]string, 0, len(byWorker))
	for w := range byWorker {
		names = append(names, w)
	}
	slices.SortFunc(names, compareIDs)
	for _, w := range names {
		wl := byWorker[w]
		wl.HitRate = -1
		if cachedKnown {
			wl.HitRate = ratio(cachedBy[w], wl.PromptTokens)
		}
		s.Workers = append(s.Workers, *wl)
	}
	s.Imbalance = imbalance(spans, s.Workers)
	return s
}

// compareIDs orders admin ids numerically ("2" before "10").
func compareIDs(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	return 0
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// imbalanceBuckets is the number of instants the in-flight spread is
// sampled at.
const imbalanceBuckets = 200

func imbalance(spans []span, workers []WorkerLoad) Imbalance {
	var im Imbalance
	n := len(workers)
	if n == 0 {
		return im
	}
	reqs := make([]float64, n)
	toks := make([]float64, n)
	idx := map[string]int{}
	for i, w := range workers {
		reqs[i] = float64(w.Requests)
		toks[i] = float64(w.PromptTokens + w.OutputTokens)
		idx[w.Worker] = i
	}
	im.Requests, im.Tokens = maxOverMean(reqs), maxOverMean(toks)
	var end float64
	for _, sp := range spans {
		end = max(end, sp.end)
	}
	if end <= 0 {
		return im
	}
	width := end / imbalanceBuckets
	im.BucketS = width / 1000
	// Requests in flight per worker at each bucket's middle, by sweeping
	// starts (+1) and ends (−1) into a difference array.
	diff := make([][]float64, n)
	for i := range diff {
		diff[i] = make([]float64, imbalanceBuckets+1)
	}
	for _, sp := range spans {
		i, ok := idx[sp.worker]
		if !ok || !sp.ok {
			continue
		}
		// Active at the middle m of bucket b when start ≤ m < end.
		first := int(math.Ceil(sp.start/width - 0.5))
		last := int(math.Ceil(sp.end/width-0.5)) - 1
		first, last = max(first, 0), min(last, imbalanceBuckets-1)
		if first > last {
			continue
		}
		diff[i][first]++
		diff[i][last+1]--
	}
	active := make([]float64, n)
	cur := make([]float64, n)
	var sum float64
	var count int
	for b := 0; b < imbalanceBuckets; b++ {
		for i := range cur {
			cur[i] += diff[i][b]
			active[i] = cur[i]
		}
		v := maxOverMean(active)
		im.OverTime = append(im.OverTime, v)
		if v > 0 {
			sum += v
			count++
			im.PeakOver = max(im.PeakOver, v)
		}
	}
	if count > 0 {
		im.InFlight = sum / float64(count)
	}
	return im
}

// maxOverMean is max(v) / mean(v), 0 when everything is 0.
func maxOverMean(v []float64) float64 {
	var sum, mx float64
	for _, x := range v {
		sum += x
		mx = max(mx, x)
	}
	if sum == 0 {
		return 0
	}
	return mx / (sum / float64(len(v)))
}

// report builds the online side of the report.
func (d *driver) report(info *fleetInfo, samples []WorkerSamples, applied []AppliedFault, wall time.Duration, interrupted bool) *Report {
	rep := &Report{URL: d.opts.URL, Model: d.client.model, Interrupted: interrupted, WallS: wall.Seconds(),
		Samples: samples, rows: d.records, start: d.start, offlineWorkers: map[*record][]string{}}
	if info != nil {
		for _, w := range info.Workers {
			rep.workerIDs = append(rep.workerIDs, w.ID)
		}
	}
	var spans []span
	cachedKnown := true
	for _, r := range d.records {
		if r.skipped != "" || r.res.sent.IsZero() {
			continue
		}
		spans = append(spans, r.span(d.start))
		if r.res.err == "" && r.res.cached < 0 {
			cachedKnown = false
		}
	}
	rep.Online = sideOf("online", spans, rep.workerIDs, cachedKnown)
	if !cachedKnown {
		rep.Notes = append(rep.Notes, "the workers did not report cached_tokens: start the fleet with --enable-prompt-tokens-details for the online hit rate")
	}
	skipped := map[string]int{}
	for _, r := range d.records {
		if r.skipped != "" {
			skipped[r.skipped]++
		}
	}
	for why, n := range skipped {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d request(s) not sent: %s", n, why))
	}
	slices.Sort(rep.Notes)
	rep.Faults = faultOutcomes(applied, d.records, d.start)
	return rep
}

// span is the record as the online side saw it.
func (r *record) span(start time.Time) span {
	res := &r.res
	sp := span{worker: res.worker, start: msSince(res.sent, start), prompt: len(r.prompt), output: res.tokens,
		cached: max(res.cached, 0), ok: res.err == "" && res.tokens > 0}
	sp.end = msSince(res.end, start)
	if sp.ok {
		sp.ttft = msSince(res.first, res.sent)
		sp.e2e = msSince(res.last, res.sent)
		if res.tokens > 1 {
			sp.itl = msSince(res.last, res.first) / float64(res.tokens-1)
		}
		sp.end = msSince(res.last, start)
	}
	return sp
}

func msSince(t, since time.Time) float64 { return float64(t.Sub(since)) / float64(time.Millisecond) }

// offlineSide summarises one offline replay's rows.
func offlineSide(name string, rows []replay.RequestRow, workers []string) Side {
	spans := make([]span, len(rows))
	for i, row := range rows {
		ok := row.FinishReason != "rejected" && row.OutputTokens > 0
		spans[i] = span{worker: workerOf(row.Worker), start: row.Arrival, end: row.Arrival + row.E2EMs,
			prompt: row.PromptTokens, output: row.OutputTokens, cached: row.CachedTokens, ok: ok,
			ttft: row.TTFTMs, e2e: row.E2EMs, itl: row.ITLMeanMs}
	}
	return sideOf(name, spans, workers, true)
}
