package engine

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func assertNear(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.IsNaN(got) || math.Abs(got-want) > tol {
		t.Errorf("%s = %.9f, want %.9f (±%g)", what, got, want, tol)
	}
}

func TestPolynomialTimingPrefill(t *testing.T) {
	m := PolynomialTiming{}
	tests := []struct {
		name string
		t    int
		want float64
	}{
		{"no new tokens costs nothing", 0, 0},
		{"negative token count costs nothing", -5, 0},
		{"one token is about the constant term", 1, 16.5166038609989},
		{"S1 100 prompt tokens", 100, 18.023973989},
		{"S4 full 8192-token chunk", 8192, 169.136918},
		{"S4 final 3616-token chunk", 3616, 76.909492},
		{"16384 tokens", 16384, 378.277932657},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertNear(t, "PrefillMs", m.PrefillMs(tc.t), tc.want, 1e-6)
		})
	}
}

func TestPolynomialTimingDecode(t *testing.T) {
	m := PolynomialTiming{}
	tests := []struct {
		name          string
		active, total int
		want          float64
	}{
		{"S1 two active blocks of 64 in 16384", 128, 16384 * 64, 5.746593},
		{"S4 313 active blocks of 64 in 16384", 313 * 64, 16384 * 64, 6.762413},
		{"empty cache is the constant term", 0, 16384 * 64, 5.74},
		{"half-full cache", 512, 1024, 26.31},
		{"full cache", 1024, 1024, 34.01},
		{"zero total capacity counts as full (x = 1)", 0, 0, 34.01},
		{"over-full cache follows the polynomial", 2048, 1024, 10.80},
		{"polynomial below 1 ms is clamped to 1 ms", 3072, 1024, 1.0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, avgCtx := range []int{0, 100, 1 << 20} { // avg context does not matter
				assertNear(t, "DecodeMs", m.DecodeMs(tc.active, tc.total, avgCtx), tc.want, 1e-6)
			}
		})
	}
}

// TestPolynomialTimingReferenceScenarios checks the pass sums of reference
// scenarios S1 and S4 (scenario_test.go) at speedup 1.
func TestPolynomialTimingReferenceScenarios(t *testing.T) {
	m := PolynomialTiming{}
	const total = 16384 * 64
	s1First := m.PrefillMs(100) + m.DecodeMs(128, total, 100)
	assertNear(t, "S1 first token", s1First, 23.770567, 1e-6)
	// Passes 2 and 3 still hold 2 physical blocks (101 and 102 tokens).
	assertNear(t, "S1 third token", s1First+m.DecodeMs(128, total, 100)+m.DecodeMs(128, total, 101), 35.263752, 1e-6)
	s4 := 2*m.PrefillMs(8192) + m.PrefillMs(3616) + m.DecodeMs(313*64, total, 20000)
	assertNear(t, "S4 token", s4, 421.945742, 1e-6)
}

func TestFixedTiming(t *testing.T) {
	m := FixedTiming{Prefill: 20, Decode: 10}
	tests := []struct {
		name string
		got  float64
		want float64
	}{
		{"prefill with new tokens", m.PrefillMs(1), 20},
		{"prefill size does not matter", m.PrefillMs(100000), 20},
		{"no new tokens costs nothing", m.PrefillMs(0), 0},
		{"decode is constant", m.DecodeMs(128, 1048576, 100), 10},
		{"decode ignores cache fill", m.DecodeMs(1048576, 1048576, 1), 10},
		{"zero times stay zero", FixedTiming{}.PrefillMs(5) + FixedTiming{}.DecodeMs(1, 1, 1), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
	// S3: prefill 20 + decode 10, then two decode passes: tokens at 30, 40, 50 ms.
	var clock float64
	var times []float64
	clock += m.PrefillMs(100) + m.DecodeMs(128, 1048576, 100)
	times = append(times, clock)
	for range 2 {
		clock += m.DecodeMs(128, 1048576, 101)
		times = append(times, clock)
	}
	if times[0] != 30 || times[1] != 40 || times[2] != 50 {
		t.Errorf("S3 token times = %v, want [30 40 50]", times)
	}
}

// interpTestProfile is a small hand-checkable profile:
// prefill slope 0.2 ms/token (10 ms at 100, 30 at 200, 70 at 400);
// decode grid rows kv 1000/2000/4000, columns ctx 100/300.
func interpTestProfile() *Profile {
	return &Profile{
		PrefillISL:           []float64{100, 200, 400},
		PrefillTTFTMs:        []float64{10, 30, 70},
		DecodeActiveKVTokens: []float64{1000, 2000, 4000},
		DecodeContextLength:  []float64{100, 300},
		DecodeITL: [][]float64{
			{5, 7},
			{9, 11},
			{13, 19},
		},
	}
}

func TestInterpolatedTimingPrefill(t *testing.T) {
	m, err := NewInterpolatedTiming(interpTestProfile())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		t    int
		want float64
	}{
		{"no new tokens costs nothing", 0, 0},
		{"first grid point", 100, 10},
		{"interior grid point", 200, 30},
		{"last grid point", 400, 70},
		{"midpoint of first segment", 150, 20},
		{"midpoint of second segment", 300, 50},
		{"below the axis extrapolates from the first two points", 75, 5},
		{"below the axis reaching zero", 50, 0},
		{"below the axis is clamped at 0", 25, 0},
		{"above the axis extrapolates from the last two points", 500, 90},
		{"far above the axis", 800, 150},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertNear(t, "PrefillMs", m.PrefillMs(tc.t), tc.want, 1e-9)
		})
	}
}

func TestInterpolatedTimingDecode(t *testing.T) {
	m, err := NewInterpolatedTiming(interpTestProfile())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		kv, ctx     int
		want        float64
		exactResult bool
	}{
		{"grid corner low/low", 1000, 100, 5, true},
		{"grid corner low/high", 1000, 300, 7, true},
		{"interior grid row", 2000, 300, 11, true},
		{"grid corner high/high", 4000, 300, 19, true},
		{"grid corner high/low", 4000, 100, 13, true},
		{"centre of first cell", 1500, 200, 8, false},
		{"midpoint on a context grid line", 3000, 100, 11, false},
		{"centre of second cell", 3000, 200, 13, false},
		{"kv below the axis", 500, 100, 3, false},
		{"kv below the axis at high context", 0, 300, 3, false},
		{"kv above the axis", 8000, 100, 21, false},
		{"kv above the axis at high context", 8000, 300, 35, false},
		{"context below the axis", 1000, 0, 4, false},
		{"context above the axis", 1000, 500, 9, false},
		{"both above the axes", 8000, 500, 49, false},
		{"extrapolation reaching 1 ms", 0, 100, 1, false},
		{"extrapolation below 1 ms is clamped to 1 ms", 0, 0, 1, false},
		{"far below both axes is clamped to 1 ms", -1000000, -1000000, 1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, total := range []int{0, 4096, 1 << 30} { // total KV tokens does not matter
				got := m.DecodeMs(tc.kv, total, tc.ctx)
				if tc.exactResult {
					if got != tc.want {
						t.Errorf("DecodeMs(%d, %d, %d) = %v, want exactly %v", tc.kv, total, tc.ctx, got, tc.want)
					}
					continue
				}
				assertNear(t, "DecodeMs", got, tc.want, 1e-9)
			}
		})
	}
}

func TestInterpolatedTimingCopiesProfile(t *testing.T) {
	p := interpTestProfile()
	m, err := NewInterpolatedTiming(p)
	if err != nil {
		t.Fatal(err)
	}
	p.PrefillTTFTMs[0] = 1000
	p.DecodeITL[0][0] = 1000
	p.DecodeActiveKVTokens[0] = -5
	if got := m.PrefillMs(100); got != 10 {
		t.Errorf("PrefillMs after mutating the profile = %v, want 10", got)
	}
	if got := m.DecodeMs(1000, 0, 100); got != 5 {
		t.Errorf("DecodeMs after mutating the profile = %v, want 5", got)
	}
}

func TestNewInterpolatedTimingRejectsInvalidProfile(t *testing.T) {
	p := interpTestProfile()
	p.DecodeContextLength = []float64{300, 100}
	if _, err := NewInterpolatedTiming(p); err == nil || !strings.Contains(err.Error(), "decode_context_length") {
		t.Errorf("err = %v, want one naming decode_context_length", err)
	}
	if _, err := NewInterpolatedTiming(nil); err == nil {
		t.Error("nil profile accepted")
	}
}

func TestNewTimingModel(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(c *Config)
		check   func(t *testing.T, m TimingModel)
		wantErr []string
	}{
		{
			name:   "default is polynomial",
			mutate: func(c *Config) {},
			check: func(t *testing.T, m TimingModel) {
				if _, ok := m.(PolynomialTiming); !ok {
					t.Errorf("model is %T, want PolynomialTiming", m)
				}
			},
		},
		{
			name:   "empty name without profile is polynomial",
			mutate: func(c *Config) { c.Timing.Model = "" },
			check: func(t *testing.T, m TimingModel) {
				if _, ok := m.(PolynomialTiming); !ok {
					t.Errorf("model is %T, want PolynomialTiming", m)
				}
			},
		},
		{
			name:   "empty name with profile is interpolated",
			mutate: func(c *Config) { c.Timing.Model = ""; c.Timing.Profile = interpTestProfile() },
			check: func(t *testing.T, m TimingModel) {
				if _, ok := m.(*InterpolatedTiming); !ok {
					t.Errorf("model is %T, want *InterpolatedTiming", m)
				}
			},
		},
		{
			name: "fixed uses the configured times",
			mutate: func(c *Config) {
				c.Timing.Model = TimingFixed
				c.Timing.FixedPrefillMs = 7.5
				c.Timing.FixedDecodeMs = 2.5
			},
			check: func(t *testing.T, m TimingModel) {
				if got := m.PrefillMs(10); got != 7.5 {
					t.Errorf("PrefillMs = %v, want 7.5", got)
				}
				if got := m.DecodeMs(1, 2, 3); got != 2.5 {
					t.Errorf("DecodeMs = %v, want 2.5", got)
				}
			},
		},
		{
			name:   "fixed defaults are 20 and 10",
			mutate: func(c *Config) { c.Timing.Model = TimingFixed },
			check: func(t *testing.T, m TimingModel) {
				if m.PrefillMs(1) != 20 || m.DecodeMs(1, 1, 1) != 10 {
					t.Errorf("fixed model = %+v, want prefill 20 decode 10", m)
				}
			},
		},
		{
			name: "interpolated uses the profile handed in",
			mutate: func(c *Config) {
				c.Timing.Model = TimingInterpolated
				c.Timing.Profile = interpTestProfile()
			},
			check: func(t *testing.T, m TimingModel) {
				assertNear(t, "PrefillMs(150)", m.PrefillMs(150), 20, 1e-12)
				assertNear(t, "DecodeMs(1500, ·, 200)", m.DecodeMs(1500, 0, 200), 8, 1e-12)
			},
		},
		{
			name:   "polynomial ignores a profile",
			mutate: func(c *Config) { c.Timing.Model = TimingPolynomial; c.Timing.Profile = interpTestProfile() },
			check: func(t *testing.T, m TimingModel) {
				if _, ok := m.(PolynomialTiming); !ok {
					t.Errorf("model is %T, want PolynomialTiming", m)
				}
			},
		},
		{
			name: "interpolated with an invalid profile names the array",
			mutate: func(c *Config) {
				c.Timing.Model = TimingInterpolated
				c.Timing.Profile = interpTestProfile()
				c.Timing.Profile.DecodeContextLength = []float64{300, 100}
			},
			wantErr: []string{"decode_context_length", "strictly increasing"},
		},
		{
			name:    "interpolated without profile is an error",
			mutate:  func(c *Config) { c.Timing.Model = TimingInterpolated },
			wantErr: []string{"planner_profile_data"},
		},
		{
			name:    "unknown model name is an error",
			mutate:  func(c *Config) { c.Timing.Model = "quadratic" },
			wantErr: []string{"quadratic"},
		},
		{
			name:    "negative fixed prefill is an error",
			mutate:  func(c *Config) { c.Timing.Model = TimingFixed; c.Timing.FixedPrefillMs = -1 },
			wantErr: []string{"fixed_prefill_ms"},
		},
		{
			name:    "NaN fixed decode is an error",
			mutate:  func(c *Config) { c.Timing.Model = TimingFixed; c.Timing.FixedDecodeMs = math.NaN() },
			wantErr: []string{"fixed_decode_ms"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.mutate(&cfg)
			m, err := NewTimingModel(cfg.Timing)
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("no error, model %T", m)
				}
				for _, s := range tc.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not mention %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, m)
		})
	}
}

// A profile's prefill_cached_ms_per_mtok charges each prompt chunk for the
// tokens already in its KV cache, on top of the prefill curve: a prompt
// that hits a cached prefix, and the second chunk of a chunked prefill,
// which attends to the first. Without the coefficient the times are
// Dynamo's arithmetic, unchanged.
func TestInterpolatedTimingChargesCachedContext(t *testing.T) {
	run := func(coef float64) (a, b, c result) {
		p := interpTestProfile()
		p.PrefillCachedMsPerMTok = coef
		m, err := NewInterpolatedTiming(p)
		if err != nil {
			t.Fatal(err)
		}
		h := newHarness(t, func(c *Config) { c.BlockSize = 16; c.TimingModel = m; c.MaxNumBatchedTokens = 64 })
		prefix := seqTokens(1000, 64)
		ra := h.submitAt(0, append(slices.Clone(prefix), seqTokens(5000, 36)...), []uint32{1, 2})
		// B arrives once A's prompt is cached and shares its first 64 tokens.
		rb := h.submitAt(500, append(slices.Clone(prefix), seqTokens(7000, 20)...), []uint32{4, 5})
		// C arrives alone later: a 64-token prompt, no cache hit.
		rc := h.submitAt(1000, seqTokens(9000, 64), []uint32{6})
		h.sim.Run(0)
		return drain(ra), drain(rb), drain(rc)
	}
	a0, b0, c0 := run(0)
	a1, b1, c1 := run(1000) // 1 ms per thousand new × cached pairs
	// A's prompt is two chunks (64, then 36 attending to 64): its first
	// token is later by 36·64/1000 ms; its second, a decode, as much.
	// B's prompt is 20 new tokens after a 64-token hit: 20·64/1000 ms.
	// C hits nothing and pays nothing more.
	for _, c := range []struct {
		name       string
		base, with result
		extra      float64
	}{{"A", a0, a1, 2.304}, {"B", b0, b1, 1.28}, {"C", c0, c1, 0}} {
		if len(c.base.times) == 0 || len(c.base.times) != len(c.with.times) {
			t.Fatalf("%s: tokens %v and %v", c.name, c.base.times, c.with.times)
		}
		for i := range c.base.times {
			if got := c.with.times[i] - c.base.times[i]; !approx(got, c.extra, msTolerance) {
				t.Errorf("%s token %d: %.6f ms later, want %.6f", c.name, i, got, c.extra)
			}
		}
	}
}
