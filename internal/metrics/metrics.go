// Package metrics exports mocker-server's Prometheus metrics (docs/metrics.md):
// the vLLM family (vllm:*), the SGLang family (sglang:*), the product
// metrics (mocker_*) and the forward-pass-metrics gauges (mocker_fpm_*),
// computed from the simulation through engine.Observer and engine.FPMSink.
//
// Every labelled child is created when the Registry is built, so each series
// is present (at 0) before the first request, and the per-pass hot path only
// touches pre-resolved children.
package metrics

import (
	"compress/gzip"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// ContentType is the Content-Type of every /metrics response (text format 0.0.4).
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Label names: vLLM's per-engine labels and SGLang's per-rank label.
const (
	labelModel  = "model_name"
	labelEngine = "engine"
	labelRank   = "dp_rank"
)

// Finish reasons of vllm:request_success_total, in child order.
var finishReasons = [...]string{"stop", "length", "abort", "error"}

const (
	reasonStop = iota
	reasonLength
	reasonAbort
	reasonError
)

// Bucket sets, copied from vLLM and SGLang so dashboards built for them
// show the same quantiles.
var (
	// BucketsTTFT is vLLM's time-to-first-token bucket set.
	BucketsTTFT = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
		0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	// BucketsITL is vLLM's inter-token-latency (and time-per-output-token) bucket set.
	BucketsITL = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
		0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	// BucketsLatency is vLLM's request latency bucket set.
	BucketsLatency = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0,
		30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
	// BucketsIter is vLLM's iteration-tokens bucket set.
	BucketsIter = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
	// BucketsPreemptions is the bucket set of vllm:request_num_preemptions.
	BucketsPreemptions = []float64{1, 2, 3, 4, 5, 10, 20}
	// BucketsParamsN is the bucket set of vllm:request_params_n.
	BucketsParamsN = []float64{1, 2, 5, 10, 20}

	// BucketsSGLangQueue is sglang:queue_time_seconds' bucket set.
	BucketsSGLangQueue = []float64{0.0, 0.1, 0.2, 0.5, 1, 2, 3, 4, 5, 10, 15, 20, 30, 40, 50,
		60, 70, 80, 90, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1200, 1400, 1600,
		1800, 2000, 2500, 3000}
	// BucketsSGLangTTFT is sglang:time_to_first_token_seconds' bucket set.
	BucketsSGLangTTFT = []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80,
		100, 200, 400}
	// BucketsSGLangITL is sglang:inter_token_latency_seconds' bucket set.
	BucketsSGLangITL = []float64{0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025,
		0.030, 0.035, 0.040, 0.060, 0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.0, 2.0, 4.0,
		6.0, 8.0}
	// BucketsSGLangE2E is sglang:e2e_request_latency_seconds' bucket set.
	BucketsSGLangE2E = []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80,
		100, 200, 400, 600, 1200, 1800, 2400}
	// BucketsDeliveryLag is mocker_token_delivery_lag_seconds' bucket set:
	// the Renard R20 series (twenty bounds a decade, each about 12 % above
	// the last) from 0.5 ms to 1 s, so that a quantile interpolated inside
	// a bucket is within a few per cent — what comparing the lag with the
	// machine's write floor (docs/BENCHMARKS.md) needs.
	BucketsDeliveryLag = deliveryLagBuckets()
)

// r20 is the Renard R20 series of preferred numbers in one decade.
var r20 = [...]float64{1.00, 1.12, 1.25, 1.40, 1.60, 1.80, 2.00, 2.24, 2.50, 2.80,
	3.15, 3.55, 4.00, 4.50, 5.00, 5.60, 6.30, 7.10, 8.00, 9.00}

// deliveryLagBuckets returns R20 bounds from 0.5 ms to 1 s.
func deliveryLagBuckets() []float64 {
	var b []float64
	for _, decade := range []float64{1e-4, 1e-3, 1e-2, 1e-1} {
		for _, m := range r20 {
			// Rounded to the series' own digits: 0.1*1.12 is not 0.112.
			if v := math.Round(m*decade*1e6) / 1e6; v >= 0.0005 {
				b = append(b, v)
			}
		}
	}
	return append(b, 1)
}

// Buckets125 returns vLLM's 1-2-5 bucket set: 1, 2, 5, 10, 20, 50, … while
// ≤ maxValue (vLLM sizes its token-count histograms by max_model_len this
// way). It never returns an empty set (client_golang
// would substitute its default buckets): for maxValue < 1 it returns [1].
func Buckets125(maxValue int) []float64 {
	var out []float64
	for scale := 1; ; scale *= 10 {
		for _, m := range [...]int{1, 2, 5} {
			v := m * scale
			if v > maxValue {
				if len(out) == 0 {
					return []float64{1}
				}
				return out
			}
			out = append(out, float64(v))
		}
		if scale > math.MaxInt/100 {
			return out
		}
	}
}

// Registry is a Prometheus registry holding the Go and process collectors
// and every metric of the configured families. It is safe for
// concurrent use; each rank's Observer and FPMSink must be driven from one
// goroutine at a time (the rank's engine goroutine).
type Registry struct {
	*prometheus.Registry

	opts       Options
	family     Family
	vllm       bool
	sglang     bool
	deprecated bool
	ranks      []*rankObserver
	kvPub      *kvPublisherCollector
	faults     *prometheus.CounterVec
	http       *httpMetrics // nil without the vLLM family
	mm         multimodal
}

// New builds the registry opts describe: its families, deprecated vLLM
// names unless opts.HideDeprecated, one set of per-rank children for each
// DP rank 0..DPSize-1. version is the mocker_info version label.
func New(opts Options, version string) *Registry {
	family := opts.resolvedFamily()
	r := &Registry{
		Registry:   prometheus.NewRegistry(),
		opts:       opts,
		family:     family,
		vllm:       family == FamilyVLLM || family == FamilyBoth,
		sglang:     family == FamilySGLang || family == FamilyBoth,
		deprecated: !opts.HideDeprecated,
	}
	r.MustRegister(collectors.NewGoCollector())
	r.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	dp := max(opts.DPSize, 1)
	r.ranks = make([]*rankObserver, dp)
	for i := range r.ranks {
		r.ranks[i] = &rankObserver{rank: i, sglangEngine: opts.EngineType == engine.EngineSGLang, blockSize: opts.BlockSize}
	}
	if r.vllm {
		r.buildVLLM()
		r.buildLoRA()
		r.buildSpecOffload()
		r.buildSleep()
		r.buildHTTP()
	}
	if r.sglang {
		r.buildSGLang()
	}
	r.buildMocker(version)
	r.buildFaults()
	r.buildDisagg()
	r.buildMultimodal()
	return r
}

// Family returns the resolved metrics family: FamilyVLLM, FamilySGLang or
// FamilyBoth.
func (r *Registry) Family() Family { return r.family }

// DPSize returns the number of ranks the registry has children for.
func (r *Registry) DPSize() int { return len(r.ranks) }

func (r *Registry) rank(rank int) *rankObserver {
	if rank < 0 || rank >= len(r.ranks) {
		panic(fmt.Sprintf("metrics: rank %d out of range [0, %d)", rank, len(r.ranks)))
	}
	return r.ranks[rank]
}

// Observer returns the engine observer of DP rank rank. It panics if rank is
// not in 0..dp_size-1.
func (r *Registry) Observer(rank int) engine.Observer { return r.rank(rank) }

// Handler serves the registry in Prometheus text format 0.0.4 whatever the
// Accept header asks for (no OpenMetrics, no protobuf, hence no *_created
// samples), gzip-compressed when the client accepts it. A collector error
// does not fail the scrape: what could be gathered is served.
func (r *Registry) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mfs, err := r.Gather()
		if err != nil && len(mfs) == 0 {
			http.Error(w, "gathering metrics: "+err.Error(), http.StatusInternalServerError)
			return
		}
		h := w.Header()
		h.Set("Content-Type", ContentType)
		h.Add("Vary", "Accept-Encoding")
		if req.Method == http.MethodHead {
			return
		}
		if acceptsGzip(req.Header.Get("Accept-Encoding")) {
			h.Set("Content-Encoding", "gzip")
			gz := gzip.NewWriter(w)
			defer gz.Close()
			for _, mf := range mfs {
				if _, err := expfmt.MetricFamilyToText(gz, mf); err != nil {
					return
				}
			}
			return
		}
		for _, mf := range mfs {
			if _, err := expfmt.MetricFamilyToText(w, mf); err != nil {
				return
			}
		}
	})
}

// acceptsGzip reports whether an Accept-Encoding header allows gzip.
func acceptsGzip(h string) bool {
	for part := range strings.SplitSeq(h, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		params = strings.ReplaceAll(params, " ", "")
		if q, ok := strings.CutPrefix(params, "q="); ok {
			if f, err := strconv.ParseFloat(q, 64); err == nil && f == 0 {
				return false
			}
		}
		return true
	}
	return false
}

// ObserveRequest records the per-HTTP-request parameter histograms
// (vllm:request_params_n, vllm:request_params_max_tokens,
// vllm:request_max_num_generation_tokens) on the engine="<rank>" children;
// an out-of-range rank is recorded on rank 0. It implements the HTTP layer's
// RequestObserver. A no-op when the vLLM family is not exported.
func (r *Registry) ObserveRequest(rank, n, maxTokens, maxGenerated int) {
	if !r.vllm {
		return
	}
	if rank < 0 || rank >= len(r.ranks) {
		rank = 0
	}
	v := r.ranks[rank].v
	v.paramsN.Observe(float64(n))
	v.paramsMaxTokens.Observe(float64(maxTokens))
	v.maxGen.Observe(float64(maxGenerated))
}

// ObserveDeliveryLag records on mocker_token_delivery_lag_seconds{dp_rank}
// how late (seconds) the HTTP layer flushed a token after its modeled
// delivery deadline. Negative lags (flushed early) count as 0; an
// out-of-range rank is ignored. Safe for concurrent use.
func (r *Registry) ObserveDeliveryLag(rank int, seconds float64) {
	if rank < 0 || rank >= len(r.ranks) {
		return
	}
	if seconds < 0 {
		seconds = 0
	}
	r.ranks[rank].lag.Observe(seconds)
}

// RegisterKVPublisherCounters makes mocker_kv_event_batches_total and
// mocker_kv_event_batches_dropped_total of rank read the KV event
// publisher's counters (typically atomic loads) at scrape time. Until it is
// called, or for a nil function, the series read 0. Calling it again
// replaces the functions. It panics if rank is out of range.
func (r *Registry) RegisterKVPublisherCounters(rank int, sent, dropped func() uint64) {
	r.rank(rank)
	r.kvPub.sent[rank].Store(funcPtr(sent))
	r.kvPub.dropped[rank].Store(funcPtr(dropped))
}

func funcPtr(f func() uint64) *func() uint64 {
	if f == nil {
		return nil
	}
	return &f
}

// kvPublisherCollector exports the publisher's batch counters per rank.
type kvPublisherCollector struct {
	sentDesc, droppedDesc *prometheus.Desc
	sent, dropped         []atomic.Pointer[func() uint64]
}

func (c *kvPublisherCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.sentDesc
	ch <- c.droppedDesc
}

func (c *kvPublisherCollector) Collect(ch chan<- prometheus.Metric) {
	read := func(p *atomic.Pointer[func() uint64]) float64 {
		if f := p.Load(); f != nil {
			return float64((*f)())
		}
		return 0
	}
	for i := range c.sent {
		rank := strconv.Itoa(i)
		ch <- prometheus.MustNewConstMetric(c.sentDesc, prometheus.CounterValue, read(&c.sent[i]), rank)
		ch <- prometheus.MustNewConstMetric(c.droppedDesc, prometheus.CounterValue, read(&c.dropped[i]), rank)
	}
}

// pyBool formats a bool like Python's str().
func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}
