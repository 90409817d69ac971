package replay

import (
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// RequestRow is one request's outcome. Times are milliseconds of virtual
// time; latencies follow AIPerf: TTFT = first token − arrival, E2E = last
// token − arrival, ITL = (E2E − TTFT) / (output tokens − 1).
type RequestRow struct {
	Index        int     `json:"index"`
	Arrival      float64 `json:"arrival_ms"`
	Worker       string  `json:"worker"`
	PromptTokens int     `json:"prompt_tokens"`
	CachedTokens int     `json:"cached_tokens"`
	OutputTokens int     `json:"output_tokens"`
	// QueueMs is first scheduled − arrival.
	QueueMs float64 `json:"queue_ms"`
	TTFTMs  float64 `json:"ttft_ms"`
	E2EMs   float64 `json:"e2e_ms"`
	// ITLMeanMs, ITLMinMs and ITLMaxMs summarise the request's gaps
	// between consecutive tokens (0 with fewer than two tokens).
	ITLMeanMs    float64 `json:"itl_mean_ms"`
	ITLMinMs     float64 `json:"itl_min_ms"`
	ITLMaxMs     float64 `json:"itl_max_ms"`
	Preemptions  int     `json:"preemptions"`
	FinishReason string  `json:"finish_reason"`
	// Error is the engine's rejection message of a request that could
	// never run (FinishReason "rejected").
	Error string `json:"error,omitempty"`
}

// Report is the outcome of one run. It holds no wall-clock readings, so the
// same run always gives the same report.
type Report struct {
	Label    string         `json:"label"`
	Router   RouterKind     `json:"router"`
	Summary  Summary        `json:"summary"`
	Workers  []WorkerReport `json:"workers"`
	Timeline Timeline       `json:"timeline"`
	// Rejections explain Summary.Rejected: one entry per reason, most
	// frequent first.
	Rejections []RejectionCount `json:"rejections,omitempty"`
	Charts     Charts           `json:"charts"`
}

// Summary aggregates every request of a run.
type Summary struct {
	Requests   int `json:"requests"`
	Completed  int `json:"completed"`
	Rejected   int `json:"rejected"`
	Unfinished int `json:"unfinished"`
	// DurationS is the last token's time minus the first arrival.
	DurationS float64 `json:"duration_s"`
	// RequestThroughput and OutputTokenThroughput are per second of
	// DurationS.
	RequestThroughput     float64 `json:"request_throughput"`
	OutputTokenThroughput float64 `json:"output_token_throughput"`
	// GPUs is the fleet's GPU count: over workers, DP ranks × GPUs per
	// rank (the tensor-parallel size). OutputTokenThroughputPerGPU is
	// OutputTokenThroughput / GPUs, the figure GPU benchmarks publish.
	GPUs                        int     `json:"gpus"`
	OutputTokenThroughputPerGPU float64 `json:"output_token_throughput_per_gpu"`
	PromptTokens                int     `json:"prompt_tokens"`
	CachedTokens                int     `json:"cached_tokens"`
	OutputTokens                int     `json:"output_tokens"`
	// PrefixCacheHitRate is cached prompt tokens at first admission over
	// prompt tokens, over completed requests.
	PrefixCacheHitRate float64 `json:"prefix_cache_hit_rate"`
	Preemptions        int     `json:"preemptions"`
	TTFTMs             Stat    `json:"ttft_ms"`
	ITLMs              Stat    `json:"itl_ms"`
	E2EMs              Stat    `json:"e2e_ms"`
	QueueMs            Stat    `json:"queue_ms"`
	// InterTokenGapMs is every gap between consecutive tokens of a request
	// (what mocker-bench reports as ITL); its percentiles come from a
	// logarithmic histogram, within ±0.05 %.
	InterTokenGapMs Stat `json:"inter_token_gap_ms"`
	// OutputThroughputPerUser is AIPerf's per-request 1 / ITL in tokens/s.
	OutputThroughputPerUser Stat `json:"output_token_throughput_per_user"`
}

// WorkerReport is one target's share of the run.
type WorkerReport struct {
	Name               string  `json:"name"`
	Routed             int     `json:"routed"`
	Completed          int     `json:"completed"`
	Rejected           int     `json:"rejected"`
	OutputTokens       int     `json:"output_tokens"`
	PrefixCacheHitRate float64 `json:"prefix_cache_hit_rate"`
	Preemptions        int     `json:"preemptions"`
	Passes             int     `json:"passes"`
	KVUsageMax         float64 `json:"kv_usage_max"`
}

// Timeline holds per-bucket series over virtual time: the peak of each
// gauge within the bucket, per worker, and the prefix-cache hit rate of the
// requests whose first token came in the bucket: null for a bucket where
// none did (a run's last, draining seconds), so the chart shows a gap
// there rather than a fall to 0.
type Timeline struct {
	BucketS float64     `json:"bucket_s"`
	KVUsage [][]float64 `json:"kv_usage"`
	Running [][]float64 `json:"running"`
	Waiting [][]float64 `json:"waiting"`
	HitRate []*float64  `json:"hit_rate"`
}

// Charts are the data of the HTML report's charts.
type Charts struct {
	// CDF points (value ms, fraction) of TTFT, ITL and E2E.
	TTFTCDF [][2]float64 `json:"ttft_cdf"`
	ITLCDF  [][2]float64 `json:"itl_cdf"`
	E2ECDF  [][2]float64 `json:"e2e_cdf"`
	// TTFTvsPrompt is a thinned sample of (prompt tokens, TTFT ms).
	TTFTvsPrompt [][2]float64 `json:"ttft_vs_prompt"`
}

// targetStats accumulates one target's share.
type targetStats struct {
	name                        string
	routed, completed, rejected int
	output, prompt, cached      int
	preemptions, passes         int
	kvMax                       float64
	kv, running, waiting        *series
}

// reportBuilder accumulates rows into a Report. Per-request latencies are
// kept (4 × 8 bytes per request) for exact percentiles; everything else is
// bounded in size.
type reportBuilder struct {
	ttft, itl, e2e, queue, perUser []float64
	targets                        []*targetStats
	tl                             *timeline
	gaps                           gapHistogram
	hitCached, hitPrompt           *series
	scatter                        sampler[[2]float64]
	rejections                     rejections

	requests, finished, rejected, unfinished int
	prompt, cached, output, preemptions      int
	firstArrival, lastToken                  float64
	seen                                     bool
}

func newReportBuilder() *reportBuilder {
	b := &reportBuilder{tl: newTimeline(), scatter: sampler[[2]float64]{limit: 2000}}
	b.hitCached = b.tl.newSeries(mergeSum)
	b.hitPrompt = b.tl.newSeries(mergeSum)
	return b
}

func (b *reportBuilder) newTarget(name string) *targetStats {
	s := &targetStats{name: name, kv: b.tl.newSeries(mergeMax), running: b.tl.newSeries(mergeMax), waiting: b.tl.newSeries(mergeMax)}
	b.targets = append(b.targets, s)
	return s
}

func (b *reportBuilder) gauges(s *targetStats, now time.Duration, g engine.Gauges) {
	t := now.Seconds()
	b.tl.observe(s.kv, t, g.KVUsage)
	b.tl.observe(s.running, t, float64(g.Running))
	b.tl.observe(s.waiting, t, float64(g.Waiting))
	s.kvMax = max(s.kvMax, g.KVUsage)
}

func (b *reportBuilder) firstToken(now time.Duration, prompt, cached int) {
	t := now.Seconds()
	b.tl.observe(b.hitCached, t, float64(cached))
	b.tl.observe(b.hitPrompt, t, float64(prompt))
}

// add accounts one row and hands it to rows.
func (b *reportBuilder) add(row *RequestRow, s *targetStats, rows func(*RequestRow) error) error {
	b.requests++
	if !b.seen || row.Arrival < b.firstArrival {
		b.firstArrival, b.seen = row.Arrival, true
	}
	if row.FinishReason == "rejected" {
		b.rejected++
		s.rejected++
	} else {
		b.finished++
		s.completed++
		s.output += row.OutputTokens
		s.prompt += row.PromptTokens
		s.cached += row.CachedTokens
		b.prompt += row.PromptTokens
		b.cached += row.CachedTokens
		b.output += row.OutputTokens
		b.preemptions += row.Preemptions
		b.queue = append(b.queue, row.QueueMs)
		b.ttft = append(b.ttft, row.TTFTMs)
		b.e2e = append(b.e2e, row.E2EMs)
		b.lastToken = max(b.lastToken, row.Arrival+row.E2EMs)
		b.scatter.add([2]float64{float64(row.PromptTokens), row.TTFTMs})
		if row.OutputTokens > 1 {
			b.itl = append(b.itl, row.ITLMeanMs)
			if row.ITLMeanMs > 0 {
				b.perUser = append(b.perUser, 1000/row.ITLMeanMs)
			}
		}
	}
	if rows != nil {
		return rows(row)
	}
	return nil
}

func (b *reportBuilder) build(r *runner) *Report {
	rep := &Report{Router: r.opts.Router}
	s := &rep.Summary
	s.Requests = b.requests + b.unfinished
	s.Completed, s.Rejected, s.Unfinished = b.finished, b.rejected, b.unfinished
	s.PromptTokens, s.CachedTokens, s.OutputTokens = b.prompt, b.cached, b.output
	s.Preemptions = b.preemptions
	if b.finished > 0 {
		s.DurationS = (b.lastToken - b.firstArrival) / 1000
	}
	if s.DurationS > 0 {
		s.RequestThroughput = float64(b.finished) / s.DurationS
		s.OutputTokenThroughput = float64(b.output) / s.DurationS
	}
	for _, t := range r.targets {
		s.GPUs += max(1, r.opts.Workers[t.worker].GPUsPerRank)
	}
	s.OutputTokenThroughputPerGPU = s.OutputTokenThroughput / float64(s.GPUs)
	s.PrefixCacheHitRate = ratio(b.cached, b.prompt)
	s.TTFTMs, s.ITLMs, s.E2EMs = summarize(b.ttft), summarize(b.itl), summarize(b.e2e)
	s.QueueMs, s.OutputThroughputPerUser = summarize(b.queue), summarize(b.perUser)
	s.InterTokenGapMs = b.gaps.stat()
	rep.Rejections = b.rejections.sorted()
	rep.Charts = Charts{TTFTCDF: cdfPoints(b.ttft, 200), ITLCDF: cdfPoints(b.itl, 200), E2ECDF: cdfPoints(b.e2e, 200),
		TTFTvsPrompt: b.scatter.items}
	tl := &rep.Timeline
	b.tl.bucket(r.now.Seconds()) // every series covers the whole run (this may widen the buckets)
	for _, t := range b.targets {
		rep.Workers = append(rep.Workers, WorkerReport{Name: t.name, Routed: t.routed, Completed: t.completed,
			Rejected: t.rejected, OutputTokens: t.output, PrefixCacheHitRate: ratio(t.cached, t.prompt),
			Preemptions: t.preemptions, Passes: t.passes, KVUsageMax: t.kvMax})
		tl.KVUsage = append(tl.KVUsage, t.kv.values)
		tl.Running = append(tl.Running, t.running.values)
		tl.Waiting = append(tl.Waiting, t.waiting.values)
	}
	tl.BucketS = b.tl.width
	tl.HitRate = make([]*float64, len(b.hitPrompt.values))
	for i := range tl.HitRate {
		if b.hitPrompt.values[i] > 0 {
			r := ratio(int(b.hitCached.values[i]), int(b.hitPrompt.values[i]))
			tl.HitRate[i] = &r
		}
	}
	return rep
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
