package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// batchHist is one histogram child built for many observations at once: a
// pass hands it every inter-token gap it produced and pays one lock for all
// of them instead of three atomic operations per value. Several exported
// families may share one batchHist (vllm:time_per_output_token_seconds is
// every observation of vllm:inter_token_latency_seconds).
type batchHist struct {
	upper []float64 // sorted upper bounds, +Inf implicit; shared, read-only

	mu     sync.Mutex
	counts []uint64 // per bucket, not cumulative; counts[len(upper)] is +Inf
	sum    float64
	count  uint64
}

func newBatchHist(upper []float64) *batchHist {
	return &batchHist{upper: upper, counts: make([]uint64, len(upper)+1)}
}

// bucket returns the index of the first bucket whose upper bound is ≥ v.
func (h *batchHist) bucket(v float64) int {
	for i, u := range h.upper {
		if v <= u {
			return i
		}
	}
	return len(h.upper)
}

// observe records one value.
func (h *batchHist) observe(v float64) {
	i := h.bucket(v)
	h.mu.Lock()
	h.counts[i]++
	h.sum += v
	h.count++
	h.mu.Unlock()
}

// observeAll records every value of vs under one lock. Runs of equal values
// (the gaps of requests decoding in consecutive passes) reuse the bucket.
func (h *batchHist) observeAll(vs []float64) {
	if len(vs) == 0 {
		return
	}
	h.mu.Lock()
	last, li := vs[0], h.bucket(vs[0])
	for _, v := range vs {
		if v != last {
			last, li = v, h.bucket(v)
		}
		h.counts[li]++
		h.sum += v
	}
	h.count += uint64(len(vs))
	h.mu.Unlock()
}

// snapshot returns the cumulative bucket counts, the sum and the count.
func (h *batchHist) snapshot() (map[float64]uint64, float64, uint64) {
	buckets := make(map[float64]uint64, len(h.upper))
	h.mu.Lock()
	defer h.mu.Unlock()
	var cum uint64
	for i, u := range h.upper {
		cum += h.counts[i]
		buckets[u] = cum
	}
	return buckets, h.sum, h.count
}

// batchHistVec exports batchHist children under one metric family.
type batchHistVec struct {
	desc     *prometheus.Desc
	children []batchHistChild
}

type batchHistChild struct {
	labels []string
	h      *batchHist
}

func (v *batchHistVec) add(h *batchHist, labelValues ...string) {
	v.children = append(v.children, batchHistChild{labels: labelValues, h: h})
}

// Describe implements prometheus.Collector.
func (v *batchHistVec) Describe(ch chan<- *prometheus.Desc) { ch <- v.desc }

// Collect implements prometheus.Collector.
func (v *batchHistVec) Collect(ch chan<- prometheus.Metric) {
	for _, c := range v.children {
		buckets, sum, count := c.h.snapshot()
		ch <- prometheus.MustNewConstHistogram(v.desc, count, sum, buckets, c.labels...)
	}
}
