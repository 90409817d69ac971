package engine

import (
	"math"
	"slices"
	"testing"
)

// Without jitter a lone request's first token takes the prefill term
// (overhead + per-token × prompt) and every later token the decode term:
// llm-d-inference-sim's time-to-first-token and inter-token-latency.
func TestJitteredFixedTiming_LoneRequestTTFTAndITL(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Timing = TimingConfig{Model: TimingFixed, FixedPrefillMs: 30, FixedDecodeMs: 12,
			Jitter: FixedJitter{PrefillPerTokenMs: 0.25, LoadFactor: 2, MaxNumSeqs: 16}}
	})
	prompt := make([]uint32, 200)
	for i := range prompt {
		prompt[i] = uint32(i + 10)
	}
	r := h.submitAt(0, prompt, []uint32{5, 6, 7, 8})
	h.sim.Run(0)
	res := drain(r)
	want := []float64{30 + 0.25*200, 30 + 0.25*200 + 12, 30 + 0.25*200 + 24, 30 + 0.25*200 + 36}
	if len(res.times) != len(want) {
		t.Fatalf("token times %v, want %v", res.times, want)
	}
	for i := range want {
		if math.Abs(res.times[i]-want[i]) > 1e-6 {
			t.Errorf("token times %v, want %v", res.times, want)
			break
		}
	}
}

// The load factor is the simulator's: 1 for one sequence, the factor for
// max_num_seqs, linear between.
func TestJitteredFixedTiming_LoadFactor(t *testing.T) {
	m := JitteredFixedTiming{FixedTiming: FixedTiming{Prefill: 100, Decode: 10},
		J: FixedJitter{LoadFactor: 3, MaxNumSeqs: 5}}
	for _, c := range []struct {
		decodes int
		want    float64
	}{{1, 10}, {2, 15}, {3, 20}, {5, 30}, {9, 30}} {
		if got := m.PassMs(&PassContents{Decodes: c.decodes, DecodeCtxSum: 100}); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%d decodes: %v ms, want %v", c.decodes, got, c.want)
		}
	}
}

// The draws are seeded normals with the configured deviation, clipped to
// [0.3, 1.7] × the term as the simulator clips them, and a pure function of
// the seed and the pass: the same pass draws the same, another seed draws
// otherwise.
func TestJitteredFixedTiming_Draws(t *testing.T) {
	const mean, std, n = 10.0, 3.0, 20000
	draw := func(seed uint64) []float64 {
		m := JitteredFixedTiming{FixedTiming: FixedTiming{Decode: mean}, J: FixedJitter{DecodeStdMs: std, Seed: seed}}
		out := make([]float64, n)
		for i := range out {
			out[i] = m.PassMs(&PassContents{Decodes: 1, DecodeCtxSum: 100 + i})
		}
		return out
	}
	a := draw(1)
	if !slices.Equal(a, draw(1)) {
		t.Fatal("the same seed and passes drew differently")
	}
	if slices.Equal(a, draw(2)) {
		t.Fatal("another seed drew the same")
	}
	var sum, sq float64
	for _, v := range a {
		if v < 0.3*mean || v > 1.7*mean {
			t.Fatalf("draw %v outside [%v, %v]", v, 0.3*mean, 1.7*mean)
		}
		sum += v
		sq += v * v
	}
	gotMean := sum / n
	gotStd := math.Sqrt(sq/n - gotMean*gotMean)
	// 3σ of the sample mean is 3·3/√20000 ≈ 0.064; the clip at ±2.33σ
	// lowers the deviation by about 4%.
	if math.Abs(gotMean-mean) > 0.07 || gotStd < 0.9*std || gotStd > std {
		t.Errorf("mean %.3f std %.3f, want about %v and a little under %v", gotMean, gotStd, mean, std)
	}
}

// Bad values are refused when the model is built.
func TestJitteredFixedTiming_Validation(t *testing.T) {
	for _, j := range []FixedJitter{{PrefillStdMs: -1}, {LoadFactor: 0.5}, {PrefillPerTokenMs: math.NaN()}, {LoadFactor: math.Inf(1)}} {
		if _, err := NewTimingModel(TimingConfig{Model: TimingFixed, FixedPrefillMs: 1, FixedDecodeMs: 1, Jitter: j}); err == nil {
			t.Errorf("%+v: no error", j)
		}
	}
	m, err := NewTimingModel(TimingConfig{Model: TimingFixed, FixedPrefillMs: 1, FixedDecodeMs: 1})
	if _, plain := m.(FixedTiming); err != nil || !plain {
		t.Errorf("zero jitter: %T, %v; want the plain FixedTiming", m, err)
	}
}
