package calibrate

import (
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// virtualMeasurements runs plan on the engine's simulator with the truth
// profile, as a noise-free server would answer it, and returns what a
// client would have measured. Streams are sent at their Offset (After and
// AtToken are not used by the plans here).
func virtualMeasurements(t *testing.T, plan Plan, truth *engine.Profile, rounds int) *Measurements {
	t.Helper()
	g := &Grid{Prefill: truth.PrefillISL, KV: truth.DecodeActiveKVTokens, Ctx: truth.DecodeContextLength}
	theta := append([]float64(nil), truth.PrefillTTFTMs...)
	for _, row := range truth.DecodeITL {
		theta = append(theta, row...)
	}
	theta = append(theta, truth.PrefillCachedMsPerMTok)
	m := &Measurements{Plan: plan, Rounds: rounds}
	cfg := SimConfig(m.Server)
	for round := range rounds {
		for ei, e := range plan.Experiments {
			run := ExperimentRun{Experiment: ei, Round: round, Results: make([]Result, len(e.Streams))}
			for si, s := range e.Streams {
				// Requests of a burst leave the client 50 µs apart.
				run.Results[si] = Result{Sent: s.Offset + time.Duration(si)*50*time.Microsecond,
					PromptTokens: s.Prompt, CompletionTokens: s.Output, TokenTimes: []time.Duration{0}}
			}
			sim, err := simulate(cfg, g, theta, requestsOf(plan, &run), len(e.Streams))
			if err != nil {
				t.Fatal(err)
			}
			for si := range run.Results {
				run.Results[si].TokenTimes = sim.tokens[si]
			}
			m.Runs = append(m.Runs, run)
		}
	}
	return m
}

// TestFitRecoversAProfileThroughTheScheduler: measurements made by the
// engine itself with a profile on other axes are fitted back (in-sample
// median error under 1 %), and the fitted profile predicts every
// experiment, the held-out ones too — a batch size, cached-prefix
// proportions and a prefill arriving during decodes it was not fitted to —
// within 5 %. What is left is the fitted grid's shape against the truth's:
// no noise here. Once without a cached-context term in the truth (the fit
// must not invent one) and once with one (the fit must find it).
func TestFitRecoversAProfileThroughTheScheduler(t *testing.T) {
	for _, cached := range []float64{0, 3} {
		t.Run(fmt.Sprintf("cached %g ms per M pairs", cached), func(t *testing.T) { testFitRecovers(t, cached) })
	}
}

func testFitRecovers(t *testing.T, cached float64) {
	truth := &engine.Profile{
		PrefillCachedMsPerMTok: cached,
		PrefillISL:             []float64{1, 1000, 4000, 16000},
		PrefillTTFTMs:          []float64{12, 30, 95, 420},
		DecodeActiveKVTokens:   []float64{0, 50000, 200000, 1000000},
		DecodeContextLength:    []float64{0, 4000, 32000},
		DecodeITL:              [][]float64{{7, 7.5, 9}, {9, 9.8, 12}, {14, 15, 18}, {30, 32, 38}},
	}
	prefill := func(l int, held bool) Experiment {
		return Experiment{ID: fmt.Sprintf("prefill-%d", l), Kind: KindPrefill, HeldOut: held,
			Streams: []Stream{{Role: RoleProbe, After: -1, Prompt: l, Output: 4}}}
	}
	decode := func(b, ctx int, held bool) Experiment {
		return Experiment{ID: fmt.Sprintf("decode-b%d-ctx%d", b, ctx), Kind: KindDecode, HeldOut: held,
			Streams: repeatStream(Stream{Role: RoleProbe, After: -1, Prompt: ctx, Output: 64}, b)}
	}
	prefix := func(p, n int, held bool) Experiment {
		return Experiment{ID: fmt.Sprintf("prefix-%d+%d", p, n), Kind: KindPrefix, HeldOut: held,
			Streams: []Stream{
				{Role: RoleWarm, After: -1, Prompt: p + 16, Prefix: p, Output: 1},
				{Role: RoleProbe, After: 0, Offset: 2 * time.Second, Prompt: p + n, Prefix: p, Output: 4},
			}}
	}
	mixed := Experiment{ID: "mixed", Kind: KindMixed, HeldOut: true,
		Streams: append(repeatStream(Stream{Role: RoleBackground, After: -1, Prompt: 256, Output: 64}, 8),
			Stream{Role: RoleProbe, After: -1, Offset: 150 * time.Millisecond, Prompt: 3000, Output: 4})}
	plan := Plan{Repeats: 1, Experiments: []Experiment{
		prefill(32, false), prefill(256, false), prefill(700, true), prefill(1024, false), prefill(2048, false),
		prefill(3000, true), prefill(4096, false), prefill(8192, false),
		decode(1, 128, false), decode(4, 128, false), decode(16, 128, true), decode(64, 128, false),
		decode(1, 4096, false), decode(4, 4096, false), decode(16, 4096, false), decode(1, 12288, false),
		prefix(1024, 256, true), prefix(4096, 512, false), prefix(8192, 256, true), prefix(16384, 512, false),
		mixed,
	}}
	m := virtualMeasurements(t, plan, truth, 1)
	fit, err := FitProfile(m, FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range fit.Experiments {
		t.Logf("%-20s held=%-5v TTFT %8.2f → %8.2f  ITL %6.2f → %6.2f", e.ID, e.HeldOut,
			e.TTFTMeasured, e.TTFTPredicted, e.ITLMeasured, e.ITLPredicted)
		limit := 0.05
		if e.TTFTAPE > limit || e.ITLAPE > limit {
			t.Errorf("%s: TTFT error %.2f %%, ITL error %.2f %% (limit %.0f %%)", e.ID, 100*e.TTFTAPE, 100*e.ITLAPE, 100*limit)
		}
	}
	t.Logf("in-sample %+v held-out %+v history %v", fit.InSample, fit.HeldOut, fit.History)
	if got := fit.Profile.PrefillCachedMsPerMTok; math.Abs(got-cached) > 0.1*max(cached, 1) {
		t.Errorf("fitted cached-context coefficient %.3f ms per M pairs, truth %.3f", got, cached)
	}
	if fit.InSample.TTFTMedian > 0.01 || fit.InSample.ITLMedian > 0.01 {
		t.Errorf("in-sample median errors %.2f %% / %.2f %%, want under 1 %%", 100*fit.InSample.TTFTMedian, 100*fit.InSample.ITLMedian)
	}
	// The fit is deterministic: the same measurements give the same profile.
	again, err := FitProfile(m, FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fit.Profile, again.Profile) {
		t.Errorf("two fits of the same measurements differ")
	}
}

func TestPlanRespectsLimits(t *testing.T) {
	for _, o := range []PlanOptions{
		{MaxConcurrency: 8},
		{MaxConcurrency: 64, MaxModelLen: 4096},
		{MaxConcurrency: 256, KVTokens: 65536},
		{Quick: true},
	} {
		p := NewPlan(o)
		o = o.withDefaults()
		fitted := 0
		for _, e := range p.Experiments {
			if !e.HeldOut {
				fitted++
			}
			kv := 0
			for _, s := range e.Streams {
				if s.Prompt+s.Output > o.MaxModelLen {
					t.Errorf("%+v: %s asks %d+%d tokens, model length %d", o, e.ID, s.Prompt, s.Output, o.MaxModelLen)
				}
				kv += s.Prompt + s.Output
			}
			if len(e.Streams) > o.MaxConcurrency {
				t.Errorf("%+v: %s has %d streams, concurrency %d", o, e.ID, len(e.Streams), o.MaxConcurrency)
			}
			if o.KVTokens > 0 && e.Kind == KindDecode && 2*kv > o.KVTokens {
				t.Errorf("%+v: %s needs %d KV tokens, over half of %d", o, e.ID, kv, o.KVTokens)
			}
		}
		if fitted < 6 || fitted == len(p.Experiments) {
			t.Errorf("%+v: %d of %d experiments fitted", o, fitted, len(p.Experiments))
		}
	}
}
