package replay

import (
	"math"
)

// Stat summarises one metric over requests. Values are in the metric's unit
// (milliseconds for latencies, tokens/s for throughput per user).
type Stat struct {
	Count int     `json:"count"`
	Mean  float64 `json:"mean"`
	Min   float64 `json:"min"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
	Std   float64 `json:"std"`
}

// summarize sorts values in place and computes their Stat. Percentiles
// interpolate linearly between the closest ranks (numpy's default, which
// AIPerf uses).
func summarize(values []float64) Stat {
	n := len(values)
	if n == 0 {
		return Stat{}
	}
	sortFloats(values)
	var sum float64
	for _, v := range values {
		sum += v
	}
	mean := sum / float64(n)
	var ss float64
	for _, v := range values {
		ss += (v - mean) * (v - mean)
	}
	return Stat{
		Count: n, Mean: mean, Min: values[0], Max: values[n-1], Std: math.Sqrt(ss / float64(n)),
		P50: percentile(values, 50), P90: percentile(values, 90), P95: percentile(values, 95), P99: percentile(values, 99),
	}
}

// percentile of sorted values, linear interpolation (numpy "linear").
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := p / 100 * float64(len(sorted)-1)
	lo := int(math.Floor(rank))
	hi := min(lo+1, len(sorted)-1)
	frac := rank - float64(lo)
	return sorted[lo] + (sorted[hi]-sorted[lo])*frac
}

// cdfPoints returns at most n (value, fraction ≤ value) points of sorted
// values for a CDF chart: every value when there are few, else evenly
// spaced ranks plus the maximum.
func cdfPoints(sorted []float64, n int) [][2]float64 {
	if len(sorted) == 0 {
		return nil
	}
	step := max(1, len(sorted)/n)
	out := make([][2]float64, 0, len(sorted)/step+1)
	for i := step - 1; i < len(sorted); i += step {
		out = append(out, [2]float64{sorted[i], float64(i+1) / float64(len(sorted))})
	}
	if last := len(sorted) - 1; (last+1)%step != 0 {
		out = append(out, [2]float64{sorted[last], 1})
	}
	return out
}

// timeline holds per-bucket series over virtual time. Buckets start at
// initialBucket wide; when a time falls beyond maxBuckets, the width doubles
// and neighbouring buckets merge, so memory stays fixed however long the run.
type timeline struct {
	width  float64 // seconds per bucket
	series []*series
}

const (
	initialBucket = 0.05
	maxBuckets    = 240
)

// mergeKind says how two buckets of a series combine.
type mergeKind uint8

const (
	mergeMax mergeKind = iota // gauges: the bucket's peak
	mergeSum                  // counters
)

// series is one value per bucket.
type series struct {
	merge  mergeKind
	values []float64
}

func newTimeline() *timeline { return &timeline{width: initialBucket} }

func (tl *timeline) newSeries(m mergeKind) *series {
	s := &series{merge: m}
	tl.series = append(tl.series, s)
	return s
}

// bucket returns the bucket index of time t (seconds), widening first if
// needed, and grows every series to cover it.
func (tl *timeline) bucket(t float64) int {
	i := int(t / tl.width)
	for i >= maxBuckets {
		tl.widen()
		i = int(t / tl.width)
	}
	for _, s := range tl.series {
		for len(s.values) <= i {
			s.values = append(s.values, 0)
		}
	}
	return i
}

func (tl *timeline) widen() {
	tl.width *= 2
	for _, s := range tl.series {
		merged := make([]float64, (len(s.values)+1)/2)
		for i, v := range s.values {
			j := i / 2
			if s.merge == mergeSum {
				merged[j] += v
			} else {
				merged[j] = max(merged[j], v)
			}
		}
		s.values = merged
	}
}

// observe records v at time t.
func (tl *timeline) observe(s *series, t, v float64) {
	i := tl.bucket(t)
	if s.merge == mergeSum {
		s.values[i] += v
	} else {
		s.values[i] = max(s.values[i], v)
	}
}

// sampler keeps an evenly thinned, deterministic sample of a stream: every
// stride-th item, the stride doubling (and half the kept items dropped)
// whenever limit items are kept.
type sampler[T any] struct {
	limit, stride, seen int
	items               []T
}

func (s *sampler[T]) add(x T) {
	if s.stride == 0 {
		s.stride = 1
	}
	s.seen++
	if (s.seen-1)%s.stride != 0 {
		return
	}
	if len(s.items) >= s.limit {
		kept := s.items[:0]
		for i := 0; i < len(s.items); i += 2 {
			kept = append(kept, s.items[i])
		}
		s.items = kept
		s.stride *= 2
		if (s.seen-1)%s.stride != 0 {
			return
		}
	}
	s.items = append(s.items, x)
}

// gapHistogram summarises a stream too long to keep (every inter-token gap
// of a run) in fixed memory: logarithmic buckets gapGrowth apart, so a
// percentile is within ±0.05 % of the exact value; count, mean, min and max
// are exact.
//
// The requests of one pass mostly have the same gap, so add only counts a
// run of equal values and flush accounts for the run at once — in the same
// order, so the sums are bit-for-bit those of adding one value at a time.
type gapHistogram struct {
	counts  []uint64
	n       int
	sum, ss float64
	lo, hi  float64
	zero    uint64 // gaps of exactly 0 (tokens delivered in one pass)
	// runValue is repeated runLength times since the last flush.
	runValue  float64
	runLength int
}

const (
	gapGrowth = 1.001
	gapMinMs  = 1e-6 // 1 ns: the virtual clock's resolution
)

var logGapGrowth = math.Log(gapGrowth)

// add is small enough to inline into the per-token loop.
func (h *gapHistogram) add(v float64) {
	if v != h.runValue || h.runLength == 0 {
		h.startRun(v)
		return
	}
	h.runLength++
}

// startRun flushes the pending run and starts one of v. It stays out of
// line so that add itself fits the inliner's budget.
//
//go:noinline
func (h *gapHistogram) startRun(v float64) {
	h.flush()
	h.runValue, h.runLength = v, 1
}

// flush accounts for the pending run of equal values.
func (h *gapHistogram) flush() {
	k, v := h.runLength, h.runValue
	if k == 0 {
		return
	}
	h.runLength = 0
	if h.n == 0 || v < h.lo {
		h.lo = v
	}
	h.hi = max(h.hi, v)
	h.n += k
	// One value at a time, since float addition is not associative; the
	// sums live in locals so the loop keeps them in registers.
	sum, ss := h.sum, h.ss
	for range k {
		sum += v
		ss += v * v
	}
	h.sum, h.ss = sum, ss
	if v < gapMinMs {
		h.zero += uint64(k)
		return
	}
	i := int(math.Log(v/gapMinMs) / logGapGrowth)
	for len(h.counts) <= i {
		h.counts = append(h.counts, 0)
	}
	h.counts[i] += uint64(k)
}

// quantile returns the value at fraction q, interpolating linearly between
// ranks as percentile does, with each rank at its bucket's geometric centre.
func (h *gapHistogram) quantile(q float64) float64 {
	h.flush()
	rank := q * float64(h.n-1)
	lo := h.at(int(math.Floor(rank)))
	hi := h.at(int(math.Ceil(rank)))
	return lo + (hi-lo)*(rank-math.Floor(rank))
}

// at returns the value of the rank-th smallest gap (0-based).
func (h *gapHistogram) at(rank int) float64 {
	if rank == 0 {
		return h.lo
	}
	if rank == h.n-1 {
		return h.hi
	}
	seen := h.zero
	if uint64(rank) < seen {
		return 0
	}
	for i, c := range h.counts {
		seen += c
		if uint64(rank) < seen {
			v := gapMinMs * math.Pow(gapGrowth, float64(i)+0.5)
			return min(max(v, h.lo), h.hi)
		}
	}
	return h.hi
}

func (h *gapHistogram) stat() Stat {
	h.flush()
	if h.n == 0 {
		return Stat{}
	}
	mean := h.sum / float64(h.n)
	return Stat{Count: h.n, Mean: mean, Min: h.lo, Max: h.hi, Std: math.Sqrt(max(0, h.ss/float64(h.n)-mean*mean)),
		P50: h.quantile(0.50), P90: h.quantile(0.90), P95: h.quantile(0.95), P99: h.quantile(0.99)}
}
