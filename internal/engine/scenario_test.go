package engine

import (
	"math"
	"slices"
	"testing"

	"github.com/mocker-server/mocker-server/internal/kv"
)

// Reference scenarios for the vllm and trtllm engines, in virtual time:
// small, fully worked situations whose token times, KV events, FPM
// snapshots and observer totals are known exactly. Their names (S1, S2, …)
// are reused by the metrics, events and end-to-end tests that replay them.

func TestScenarioS1SingleRequestPolynomial(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.BlockSize = 64 })
	prompt := seqTokens(1000, 100)
	r := h.submitAt(0, prompt, []uint32{5, 6, 7})
	h.sim.Run(0)

	res := drain(r)
	wantTimes := []float64{23.770567, 29.517160, 35.263752}
	if len(res.times) != 3 {
		t.Fatalf("got %d tokens, want 3", len(res.times))
	}
	for i, w := range wantTimes {
		if !approx(res.times[i], w, msTolerance) {
			t.Errorf("token %d at %.9f ms, want %.6f", i, res.times[i], w)
		}
	}
	if !slices.Equal(res.tokens, []uint32{5, 6, 7}) {
		t.Errorf("tokens %v", res.tokens)
	}
	if res.fin == nil || res.fin.Reason != FinishLength || res.fin.NumGenerated != 3 {
		t.Errorf("terminal %+v", res.fin)
	}
	// One BlockStored in pass 1 with block 0 (tokens 0–63), parent null.
	ev := h.events[1]
	if len(ev) != 1 || ev[0].Kind != kv.Stored || len(ev[0].BlockHashes) != 1 || ev[0].HasParent ||
		!slices.Equal(ev[0].TokenIDs, prompt[:64]) || ev[0].BlockSize != 64 {
		t.Errorf("pass 1 events: %+v", ev)
	}
	if len(h.events) != 1 {
		t.Errorf("events in passes %v, want only pass 1", h.events)
	}
	if n := h.core.Pool().NumActive(); n != 0 {
		t.Errorf("active blocks after completion = %d", n)
	}
	f1 := h.fpm[1]
	if f1.NumPrefillRequests != 1 || f1.SumPrefillTokens != 100 || f1.SumPrefillKVTokens != 0 ||
		f1.NumDecodeRequests != 0 || !approx(f1.WallTimeSecs, 0.023770567, 2e-9) {
		t.Errorf("FPM pass 1: %+v", f1)
	}
	if f2 := h.fpm[2]; f2.NumDecodeRequests != 1 || f2.SumDecodeKVTokens != 101 || f2.NumPrefillRequests != 0 {
		t.Errorf("FPM pass 2: %+v", f2)
	}
	// The totals the vLLM metrics must show after S1, from the observer's
	// reports (internal/metrics checks the same values on the exposition).
	o := h.obs
	if got := o.total(func(p *PassReport) int { return p.IterationTokens }); got != 102 {
		t.Errorf("iteration tokens sum = %d, want 102", got)
	}
	if got := o.total(func(p *PassReport) int { return p.GenerationTokens }); got != 3 {
		t.Errorf("generation tokens = %d", got)
	}
	if q, hits := o.total(func(p *PassReport) int { return p.PrefixQueries }), o.total(func(p *PassReport) int { return p.PrefixHits }); q != 100 || hits != 0 {
		t.Errorf("prefix queries/hits = %d/%d", q, hits)
	}
	if len(o.passes[0].First) != 1 || !approx(o.passes[0].First[0].TTFT, 0.023770567, 2e-9) {
		t.Errorf("TTFT record %+v", o.passes[0].First)
	}
	if len(o.finished) != 1 || o.finished[0].Reason != FinishLength || o.gauges.Running != 0 || o.gauges.KVUsage != 0 {
		t.Errorf("finished %+v gauges %+v", o.finished, o.gauges)
	}
}

func TestScenarioS2SpeedupRatios(t *testing.T) {
	base := []float64{23.770567, 29.517160, 35.263752}
	for _, tc := range []struct {
		name  string
		ratio float64
		scale float64 // 0 = all at t=0
	}{
		{"ten", 10, 10},
		{"zero", 0, 0},
		{"inf", math.Inf(1), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.BlockSize = 64; c.SpeedupRatio = tc.ratio })
			r := h.submitAt(0, seqTokens(1000, 100), []uint32{5, 6, 7})
			h.sim.Run(0)
			res := drain(r)
			if !slices.Equal(res.tokens, []uint32{5, 6, 7}) {
				t.Fatalf("tokens %v", res.tokens)
			}
			for i, w := range base {
				want := 0.0
				if tc.scale > 0 {
					want = w / tc.scale
				}
				if !approx(res.times[i], want, msTolerance) {
					t.Errorf("token %d at %.9f, want %.9f", i, res.times[i], want)
				}
			}
		})
	}
}

func TestScenarioS3FixedTiming(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.BlockSize = 64; c.Timing.Model = TimingFixed })
	r := h.submitAt(0, seqTokens(1000, 100), []uint32{5, 6, 7})
	h.sim.Run(0)
	if got := drain(r).times; !slices.Equal(got, []float64{30, 40, 50}) {
		t.Errorf("token times %v, want [30 40 50]", got)
	}
}

func TestScenarioS4ChunkedPrefill(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.BlockSize = 64 })
	r := h.submitAt(0, seqTokens(1000, 20000), []uint32{9})
	var perPass []int
	h.sim.AfterPass = chain(h.sim.AfterPass, func(int) {
		perPass = append(perPass, h.obs.passes[len(h.obs.passes)-1].IterationTokens)
	})
	h.sim.Run(0)
	if !slices.Equal(perPass, []int{8192, 8192, 3616}) {
		t.Errorf("tokens per pass %v", perPass)
	}
	for pass, want := range map[int]int{1: 0, 2: 8192, 3: 16384} {
		if got := h.fpm[pass].SumPrefillKVTokens; got != want {
			t.Errorf("pass %d sum_prefill_kv_tokens = %d, want %d", pass, got, want)
		}
	}
	res := drain(r)
	if len(res.times) != 1 || !approx(res.times[0], 421.945742, msTolerance) {
		t.Errorf("token times %v, want [421.945742]", res.times)
	}
}

// chain runs two AfterPass hooks in order.
func chain(a, b func(int)) func(int) {
	return func(p int) {
		if a != nil {
			a(p)
		}
		b(p)
	}
}

func TestScenarioS5RecomputeLastBlock(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.BlockSize = 4 })
	prompt := seqTokens(1, 8)
	r1 := h.submitAt(0, prompt, []uint32{100})
	h.sim.Run(0)
	if len(h.events) != 1 {
		t.Fatalf("request 1 events %v", h.events)
	}
	q0 := h.obs.total(func(p *PassReport) int { return p.PrefixQueries })
	hits0 := h.obs.total(func(p *PassReport) int { return p.PrefixHits })
	r2 := h.submitAt(100, prompt, []uint32{100})
	h.sim.Run(0)
	if f := drain(r2).fin; f == nil || f.CachedTokens != 4 {
		t.Errorf("request 2 terminal %+v, want 4 cached tokens", f)
	}
	if len(h.events) != 1 {
		t.Errorf("request 2 produced KV events: %v", h.events)
	}
	if last := h.obs.passes[len(h.obs.passes)-1]; last.IterationTokens != 4 {
		t.Errorf("request 2 computed %d tokens, want 4", last.IterationTokens)
	}
	q := h.obs.total(func(p *PassReport) int { return p.PrefixQueries }) - q0
	hits := h.obs.total(func(p *PassReport) int { return p.PrefixHits }) - hits0
	if q != 8 || hits != 4 {
		t.Errorf("prefix queries += %d, hits += %d; want 8, 4", q, hits)
	}
	_ = drain(r1)
	short := seqTokens(50, 4)
	h.submitAt(200, short, []uint32{1})
	r4 := h.submitAt(300, short, []uint32{1})
	h.sim.Run(0)
	if f := drain(r4).fin; f == nil || f.CachedTokens != 0 {
		t.Errorf("repeated 4-token prompt: terminal %+v, want 0 cached", f)
	}
}

// s6 runs scenario S6 (and S7 with engine trtllm).
func s6(t *testing.T, engine EngineType) (*harness, *Request, *Request, map[uint64]string, map[*Request]int) {
	return s6Capacity(t, engine, "")
}

// s6Capacity runs scenario S6 with a TensorRT-LLM capacity scheduler policy.
func s6Capacity(t *testing.T, engine EngineType, capacity CapacityPolicy) (*harness, *Request, *Request, map[uint64]string, map[*Request]int) {
	h := newHarness(t, func(c *Config) {
		c.Type = engine
		c.BlockSize = 4
		c.NumBlocks = 6
		c.Capacity = capacity
	})
	a := h.submitAt(0, seqTokens(1, 8), seqTokens(2000, 8))
	b := h.submitAt(0, seqTokens(101, 8), seqTokens(3000, 8))
	names := map[uint64]string{}
	blockNames(t, h.cfg, "A", append(seqTokens(1, 8), seqTokens(2000, 8)...), names)
	blockNames(t, h.cfg, "B", append(seqTokens(101, 8), seqTokens(3000, 8)...), names)
	done := map[*Request]int{}
	h.sim.AfterPass = chain(h.sim.AfterPass, func(pass int) {
		for _, r := range []*Request{a, b} {
			if _, ok := done[r]; ok {
				continue
			}
			if _, ok := h.core.byID[r.ID]; !ok {
				done[r] = pass
			}
		}
	})
	h.sim.Run(0)
	return h, a, b, names, done
}

func TestScenarioS6LIFOPreemption(t *testing.T) {
	h, a, b, names, done := s6(t, EngineVLLM)
	want := map[int]string{
		1: "Stored[A0,A1 parent=-] Stored[B0,B1 parent=-]",
		5: "Stored[A2 parent=A1] Stored[B2 parent=B1]",
		6: "Removed[B2]",
		9: "Removed[A2] Stored[B2 parent=B1]",
	}
	for pass := 1; pass <= h.sim.Passes(); pass++ {
		if got := describe(h.events[pass], names); got != want[pass] {
			t.Errorf("pass %d events %q, want %q", pass, got, want[pass])
		}
	}
	if done[a] != 8 || done[b] != 11 {
		t.Errorf("A finished in pass %d (want 8), B in pass %d (want 11)", done[a], done[b])
	}
	ra, rb := drain(a), drain(b)
	if len(ra.tokens) != 8 || len(rb.tokens) != 8 {
		t.Errorf("tokens A %d B %d", len(ra.tokens), len(rb.tokens))
	}
	if p := h.obs.total(func(p *PassReport) int { return p.Preemptions }); p != 1 {
		t.Errorf("preemptions = %d", p)
	}
	// Pass 6 admitted nothing; passes 7–8 B waited; pass 9 re-admitted B
	// with 8 cached tokens computing 5.
	if f := h.fpm[6]; f.NumPrefillRequests != 0 || f.NumQueuedDecode != 1 {
		t.Errorf("pass 6 FPM %+v", f)
	}
	for _, p := range []int{7, 8} {
		if f := h.fpm[p]; f.NumQueuedDecode != 1 || f.NumPrefillRequests != 0 {
			t.Errorf("pass %d FPM %+v", p, f)
		}
	}
	if f := h.fpm[9]; f.NumPrefillRequests != 1 || f.SumPrefillTokens != 5 || f.SumPrefillKVTokens != 8 {
		t.Errorf("pass 9 FPM %+v", f)
	}
	if n := h.core.Pool().NumActive(); n != 0 {
		t.Errorf("final active blocks %d", n)
	}
}

func TestScenarioS7TRTLLMNoEvict(t *testing.T) {
	h, a, b, names, done := s6(t, EngineTRTLLM)
	want := map[int]string{
		1:  "Stored[A0,A1 parent=-]",
		5:  "Stored[A2 parent=A1]",
		9:  "Stored[B0,B1 parent=-]",
		13: "Stored[B2 parent=B1]",
		14: "Removed[A2]",
	}
	for pass := 1; pass <= h.sim.Passes(); pass++ {
		if got := describe(h.events[pass], names); got != want[pass] {
			t.Errorf("pass %d events %q, want %q", pass, got, want[pass])
		}
	}
	if done[a] != 8 || done[b] != 16 {
		t.Errorf("A finished in pass %d (want 8), B in pass %d (want 16)", done[a], done[b])
	}
	if f := h.fpm[1]; f.NumPrefillRequests != 1 || f.NumQueuedPrefill != 1 {
		t.Errorf("pass 1 FPM %+v (B must wait)", f)
	}
	if len(drain(a).tokens) != 8 || len(drain(b).tokens) != 8 {
		t.Error("both requests must generate 8 tokens")
	}
	if p := h.obs.total(func(p *PassReport) int { return p.Preemptions }); p != 0 {
		t.Errorf("preemptions = %d", p)
	}
}

func TestScenarioS8InactivePrefixNotDiscounted(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.BlockSize = 4; c.NumBlocks = 6 })
	promptA := seqTokens(1, 16)
	promptC := append(seqTokens(1, 16), seqTokens(500, 4)...)
	names := map[uint64]string{}
	blockNames(t, h.cfg, "C", promptC, names)
	blockNames(t, h.cfg, "A", promptA, names) // C0–C3 are A0–A3
	var a, d, c *Request
	a = h.request(promptA, []uint32{1})
	h.sim.BeforePass = func(pass int) {
		switch pass {
		case 1:
			h.core.Submit(a)
		case 2:
			d = h.request(seqTokens(900, 5), []uint32{1, 2, 3})
			h.core.Submit(d)
		case 3:
			c = h.request(promptC, []uint32{1})
			h.core.Submit(c)
		}
	}
	h.sim.Run(0)
	want := map[int]string{
		1: "Stored[A0,A1,A2,A3 parent=-]",
		2: "", // D's one full block: named below
		5: "Stored[C4 parent=A3]",
	}
	for pass := 1; pass <= h.sim.Passes(); pass++ {
		got := describe(h.events[pass], names)
		if pass == 2 {
			if len(h.events[2]) != 1 || h.events[2][0].Kind != kv.Stored {
				t.Errorf("pass 2 events %q, want D's Stored", got)
			}
			continue
		}
		if got != want[pass] {
			t.Errorf("pass %d events %q, want %q", pass, got, want[pass])
		}
	}
	for _, p := range []int{3, 4} {
		if f := h.fpm[p]; f.NumQueuedPrefill != 1 || f.NumPrefillRequests != 0 {
			t.Errorf("pass %d: C must wait, FPM %+v", p, f)
		}
	}
	if f := h.fpm[5]; f.NumPrefillRequests != 1 || f.SumPrefillKVTokens != 16 {
		t.Errorf("pass 5 FPM %+v", f)
	}
	if f := drain(c).fin; f == nil || f.CachedTokens != 16 {
		t.Errorf("C terminal %+v, want 16 cached", f)
	}
	if f := drain(d).fin; f == nil || f.NumGenerated != 3 {
		t.Errorf("D terminal %+v", f)
	}
}

func TestScenarioS9TRTLLMParity(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Type = EngineTRTLLM
		c.BlockSize = 32
		c.NumBlocks = 7319
		c.MaxModelLen = 8096
	})
	planned := seqTokens(5000, 7000)
	reqs := make([]*Request, 64)
	for i := range reqs {
		r := h.submitAt(0, seqTokens(10000+i*1096, 1096), planned)
		r.MaxOutputTokens = 7000
		reqs[i] = r
	}
	maxRunning, waitingAtMax := 0, -1
	h.sim.AfterPass = func(int) {
		if n := h.core.NumRunning(); n > maxRunning {
			maxRunning, waitingAtMax = n, h.core.NumWaiting()
		}
	}
	h.sim.Run(0)
	if maxRunning != 28 || waitingAtMax != 36 {
		t.Errorf("max running = %d with %d waiting, want 28 with 36", maxRunning, waitingAtMax)
	}
	for _, r := range reqs {
		if f := drain(r).fin; f == nil || f.NumGenerated != 7000 || f.Reason != FinishLength {
			t.Fatalf("request terminal %+v", f)
		}
	}
	if p := h.obs.total(func(p *PassReport) int { return p.Preemptions }); p != 0 {
		t.Errorf("preemptions = %d", p)
	}
}
