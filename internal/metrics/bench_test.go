package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/engine"
)

// decodeReport is a steady-state decode pass of 256 running sequences: 256
// tokens, 256 inter-token gaps (mostly equal, as in consecutive decode
// passes), no admission, no finish.
func decodeReport(varied bool) *engine.PassReport {
	r := &engine.PassReport{IsPass: true, Duration: 12 * time.Millisecond, IterationTokens: 256,
		GenerationTokens: 256, ITL: make([]float64, 256)}
	for i := range r.ITL {
		r.ITL[i] = 0.012
		if varied {
			r.ITL[i] = 0.001 * float64(1+i%97)
		}
	}
	return r
}

// observePassCases are the metric families and gap patterns ObservePass is
// measured (BenchmarkObservePass) and guarded (TestObservePassAllocationFree) with.
var observePassCases = []struct {
	name   string
	family string
	varied bool
}{
	{"vllm", "vllm", false},
	{"vllm-varied-gaps", "vllm", true},
	{"both", "both", false},
	{"both-varied-gaps", "both", true},
}

// observePass is one decode pass as the engine reports it: gauges before
// and after the pass report.
func observePass(o engine.Observer, r *engine.PassReport) {
	g := engine.Gauges{Running: 256, Waiting: 3, ActiveBlocks: 4000, KVUsage: 4000.0 / 16384}
	o.ObserveGauges(g)
	o.ObservePass(r)
	o.ObserveGauges(g)
}

func BenchmarkObservePass(b *testing.B) {
	for _, bc := range observePassCases {
		b.Run(bc.name, func(b *testing.B) {
			reg := newReg(testConfig(func(c *config.Config) { c.MetricsFamily = config.MetricsFamily(bc.family) }), "bench")
			o := reg.Observer(0)
			r := decodeReport(bc.varied)
			b.ReportAllocs()
			for b.Loop() {
				observePass(o, r)
			}
		})
	}
	// Reference: the same 256 gaps into two client_golang histograms (ITL
	// and its deprecated alias), as a non-batched implementation would.
	b.Run("reference-native-histograms", func(b *testing.B) {
		h1 := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "a", Buckets: BucketsITL})
		h2 := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "b", Buckets: BucketsITL})
		r := decodeReport(false)
		b.ReportAllocs()
		for b.Loop() {
			for _, v := range r.ITL {
				h1.Observe(v)
				h2.Observe(v)
			}
		}
	})
}

func BenchmarkPublishFPM(b *testing.B) {
	reg := newReg(testConfig(nil), "bench")
	sink := reg.FPMSink(0)
	s := engine.ForwardPassSnapshot{NumDecodeRequests: 256, SumDecodeKVTokens: 300000, VarDecodeKVTokens: 1234.5,
		WallTimeSecs: 0.012, CounterID: 1}
	b.ReportAllocs()
	for b.Loop() {
		sink.PublishFPM(s)
	}
}

func BenchmarkObserveDeliveryLag(b *testing.B) {
	reg := newReg(testConfig(nil), "bench")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			reg.ObserveDeliveryLag(0, 0.0007)
		}
	})
}
