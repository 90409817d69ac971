package metrics

import (
	"math"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.uber.org/goleak"

	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

// The registry serves scrapes through real HTTP servers.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testConfig returns the default configuration with bs 64 (S1's setup),
// adjusted by mutate.
func testConfig(mutate func(c *config.Config)) *config.Config {
	cfg := config.Default()
	cfg.BlockSize = 64
	if mutate != nil {
		mutate(&cfg)
	}
	return &cfg
}

// newReg builds the registry of a configuration, with its Options derived
// as internal/worker derives them (worker.MetricsOptions; its tests check
// the same derivation), so the tests here can state their setups as
// configurations, as a user would.
func newReg(cfg *config.Config, version string) *Registry {
	return New(optionsOf(cfg), version)
}

// optionsOf mirrors worker.MetricsOptions, which this package cannot import.
func optionsOf(cfg *config.Config) Options {
	ec := cfg.EngineConfig(nil)
	o := Options{
		Model:                  cfg.ServedName(),
		Family:                 Family(cfg.ResolvedMetricsFamily()),
		HideDeprecated:         !cfg.DeprecatedMetrics,
		DPSize:                 cfg.DPSize,
		EngineType:             cfg.EngineType,
		WorkerType:             string(cfg.WorkerType),
		TimingModel:            cfg.TimingModel,
		BlockSize:              cfg.EffectiveBlockSize(),
		NumGPUBlocks:           cfg.NumGPUBlocks,
		NumGPUBlocksOverridden: cfg.NumGPUBlocksOverridden,
		MaxModelLen:            cfg.MaxModelLen,
		EnablePrefixCaching:    cfg.EnablePrefixCaching,
		HashAlgo:               string(cfg.PrefixCachingHashAlgo),
		KVCacheDtype:           cfg.KVCacheDtype,
		GPUMemoryUtilization:   cfg.GPUMemoryUtilization,
		Hardware:               cfg.Hardware,
		Disaggregated:          cfg.Disaggregated(),
		SpeculativeTokens:      ec.Speculative.NumSpeculativeTokens,
		SleepMode:              cfg.EnableSleepMode,
	}
	if cfg.EnableLoRA {
		o.MaxLoRAs = cfg.MaxLoRAs
	}
	for _, t := range ec.Offload.Tiers {
		o.OffloadTiers = append(o.OffloadTiers, t.Medium)
	}
	return o
}

// scrapeText GETs the registry's handler through a real HTTP server and
// returns the exposition.
func scrapeText(t testing.TB, reg *Registry) *testutil.Exposition {
	t.Helper()
	srv := httptest.NewServer(reg.Handler())
	defer srv.Close()
	return testutil.Scrape(t, srv.Client(), srv.URL+"/metrics", "")
}

// scrape returns the parsed exposition.
func scrape(t testing.TB, reg *Registry) families {
	t.Helper()
	e := scrapeText(t, reg)
	if ct := e.Header.Get("Content-Type"); ct != ContentType {
		t.Fatalf("Content-Type %q, want %q", ct, ContentType)
	}
	return e.Families
}

type families map[string]*dto.MetricFamily

// metric returns the sample of family name whose labels include want
// (name=value pairs), failing the test when there is not exactly one.
func (f families) metric(t testing.TB, name string, want ...string) *dto.Metric {
	t.Helper()
	mf, ok := f[name]
	if !ok {
		t.Fatalf("metric %s missing", name)
	}
	var found *dto.Metric
	for _, m := range mf.Metric {
		if hasLabels(m, want...) {
			if found != nil {
				t.Fatalf("metric %s%v matches several samples", name, want)
			}
			found = m
		}
	}
	if found == nil {
		t.Fatalf("metric %s%v missing", name, want)
	}
	return found
}

func hasLabels(m *dto.Metric, want ...string) bool {
	for i := 0; i+1 < len(want); i += 2 {
		ok := false
		for _, l := range m.Label {
			if l.GetName() == want[i] && l.GetValue() == want[i+1] {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// value returns a counter's, gauge's or untyped sample's value.
func (f families) value(t testing.TB, name string, want ...string) float64 {
	t.Helper()
	m := f.metric(t, name, want...)
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	t.Fatalf("metric %s has no scalar value", name)
	return 0
}

// hist returns a histogram sample's count and sum.
func (f families) hist(t testing.TB, name string, want ...string) (uint64, float64) {
	t.Helper()
	m := f.metric(t, name, want...)
	if m.Histogram == nil {
		t.Fatalf("metric %s is not a histogram", name)
	}
	return m.Histogram.GetSampleCount(), m.Histogram.GetSampleSum()
}

// bounds returns the finite bucket upper bounds of a histogram sample.
func (f families) bounds(t testing.TB, name string) []float64 {
	t.Helper()
	mf, ok := f[name]
	if !ok || len(mf.Metric) == 0 || mf.Metric[0].Histogram == nil {
		t.Fatalf("histogram %s missing", name)
	}
	var out []float64
	for _, b := range mf.Metric[0].Histogram.Bucket {
		if !math.IsInf(b.GetUpperBound(), 1) {
			out = append(out, b.GetUpperBound())
		}
	}
	return out
}

func labelNames(m *dto.Metric) []string {
	var out []string
	for _, l := range m.Label {
		out = append(out, l.GetName())
	}
	slices.Sort(out)
	return out
}

// fpmRecorder records snapshots.
type fpmRecorder struct{ snaps []engine.ForwardPassSnapshot }

func (r *fpmRecorder) PublishFPM(s engine.ForwardPassSnapshot) { r.snaps = append(r.snaps, s) }

// run drives one rank through the simulator with the registry's observer
// and FPM sink (teed to a recorder) until all work is done.
type run struct {
	reg  *Registry
	core *engine.Core
	sim  *engine.Simulator
	fpm  *fpmRecorder
}

func newRun(t testing.TB, cfg *config.Config) *run {
	t.Helper()
	reg := newReg(cfg, "test")
	rec := &fpmRecorder{}
	core, err := engine.NewCore(cfg.EngineConfig(nil), engine.CoreOptions{
		Observer: reg.Observer(0),
		FPMSink:  TeeFPM(reg.FPMSink(0), rec),
	})
	if err != nil {
		t.Fatalf("NewCore: %v", err)
	}
	return &run{reg: reg, core: core, sim: engine.NewSimulator(core), fpm: rec}
}

func (r *run) submit(at time.Duration, prompt, planned []uint32) *engine.Request {
	req := &engine.Request{ID: engine.NewRequestID(), Prompt: prompt, PlannedOutput: planned, Out: engine.NewOutput()}
	r.sim.SubmitAt(at, req)
	return req
}

// tokens returns n consecutive token ids starting at first.
func tokens(first, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(first + i)
	}
	return out
}

func approx(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
