package engine

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/kv"
)

// loraHarness is a vllm core with max_loras 2, a 5 ms adapter load time, the
// fixed timing model (20 ms prefill, 10 ms decode) and 4-token blocks.
func loraHarness(t *testing.T, mutate func(c *Config)) *harness {
	return newHarness(t, func(c *Config) {
		c.BlockSize = 4
		c.Timing.Model = TimingFixed
		c.LoRA = LoRAConfig{MaxLoRAs: 2, LoadTime: 5 * time.Millisecond}
		if mutate != nil {
			mutate(c)
		}
	})
}

func (h *harness) submitAdapterAt(ms float64, adapter kv.Adapter, prompt []uint32, outputs int) *Request {
	r := h.request(prompt, seqTokens(9000, outputs))
	r.Adapter = adapter
	h.sim.SubmitAt(time.Duration(ms*float64(time.Millisecond)), r)
	return r
}

var (
	adapterA = kv.Adapter{ID: 1, Name: "a"}
	adapterB = kv.Adapter{ID: 2, Name: "b"}
	adapterC = kv.Adapter{ID: 3, Name: "c"}
)

// TestScenarioL1ThirdAdapterWaitsForASlot: with max_loras 2, requests for
// adapters a, b, c and the base model arrive together. Pass by pass:
//
//   - pass 1 (0 → 50 ms): a and b are admitted and take the two slots; c
//     would be a third adapter, so it waits in place while the base-model
//     request and a second request for a, behind it, are admitted (vLLM
//     steps over it). Duration: 20 prefill + 10 decode + a and b each read
//     from disk and loaded (2 × 5 ms each) = 50 ms. b, base and a2 finish.
//   - pass 2 (50 → 90 ms): only a runs, so c fits: admitted, its load
//     evicts b's slot (the least recently used): 20 + 10 + 2 × 5 = 40 ms.
//   - pass 3 (90 → 100 ms): a and c decode, 10 ms, and finish.
func TestScenarioL1ThirdAdapterWaitsForASlot(t *testing.T) {
	h := loraHarness(t, nil)
	a := h.submitAdapterAt(0, adapterA, seqTokens(100, 8), 3)
	b := h.submitAdapterAt(0, adapterB, seqTokens(200, 8), 1)
	c := h.submitAdapterAt(0, adapterC, seqTokens(300, 8), 2)
	base := h.submitAdapterAt(0, kv.Adapter{}, seqTokens(400, 8), 1)
	a2 := h.submitAdapterAt(0, adapterA, seqTokens(500, 8), 1)
	h.sim.Run(0)

	want := map[string]struct {
		r     *Request
		times []float64
	}{
		"a":    {a, []float64{50, 90, 100}},
		"b":    {b, []float64{50}},
		"c":    {c, []float64{90, 100}},
		"base": {base, []float64{50}},
		"a2":   {a2, []float64{50}},
	}
	for name, w := range want {
		res := drain(w.r)
		if !slices.Equal(res.times, w.times) {
			t.Errorf("%s: tokens at %v ms, want %v", name, res.times, w.times)
		}
		if res.fin == nil || res.fin.Reason != FinishLength {
			t.Errorf("%s: terminal %+v", name, res.fin)
		}
	}
	// Gauges at each pass start and end: c waits through pass 1.
	wantAdapters := []string{
		"running=a,b waiting=c deferred=1", // pass 1 start: c has no slot
		"running=a waiting=c deferred=0",   // pass 1 end: b finished, a slot is free
		"running=a,c waiting= deferred=0",  // pass 2 start
		"running=a,c waiting= deferred=0",  // pass 2 end
		"running=a,c waiting= deferred=0",  // pass 3 start
		"running= waiting= deferred=0",     // pass 3 end
	}
	if !slices.Equal(h.obs.adapters, wantAdapters) {
		t.Errorf("adapter gauges\n%q\nwant\n%q", h.obs.adapters, wantAdapters)
	}
	if got := h.core.lora.gpu; !slices.Equal(got, []Adapter{adapterA, adapterC}) {
		t.Errorf("GPU slots %v, want a and c (b evicted)", got)
	}
}

// TestAdapterLoadTimeIsChargedOncePerSlotEntry: an adapter that stays in
// its slot costs nothing on later passes; one evicted from the GPU but still
// in the CPU cache costs one load time; one evicted from both costs two.
func TestAdapterLoadTimeIsChargedOncePerSlotEntry(t *testing.T) {
	slots := loraSlots{cfg: LoRAConfig{MaxLoRAs: 1, MaxCPULoRAs: 2, LoadTime: time.Millisecond}}
	a, b, c := []Adapter{adapterA}, []Adapter{adapterB}, []Adapter{adapterC}
	steps := []struct {
		batch []Adapter
		want  time.Duration
	}{
		{a, 2 * time.Millisecond}, // disk + GPU
		{a, 0},                    // resident
		{b, 2 * time.Millisecond}, // disk + GPU, evicts a from the GPU
		{a, time.Millisecond},     // still in the CPU cache
		{c, 2 * time.Millisecond}, // CPU cache full: evicts b
		{b, 2 * time.Millisecond}, // read from disk again
	}
	for i, st := range steps {
		if got := slots.activate(st.batch); got != st.want {
			t.Errorf("step %d %v: load time %v, want %v", i, st.batch, got, st.want)
		}
	}
}

// TestSamePromptUnderTwoAdaptersSharesNoBlocks: the same prompt under a, b
// and a again: a's second request hits a's blocks, b's never does, and the
// Stored events of a and b carry different hashes and their adapters.
func TestSamePromptUnderTwoAdaptersSharesNoBlocks(t *testing.T) {
	h := loraHarness(t, nil)
	prompt := seqTokens(100, 9)
	h.submitAdapterAt(0, adapterA, prompt, 1)
	h.submitAdapterAt(100, adapterB, prompt, 1)
	h.submitAdapterAt(200, adapterA, prompt, 1)
	h.sim.Run(0)

	var hits []int
	for _, p := range h.obs.passes {
		if p.PrefixQueries > 0 {
			hits = append(hits, p.PrefixHits)
		}
	}
	if !slices.Equal(hits, []int{0, 0, 8}) {
		t.Errorf("prefix hits per admission %v, want [0 0 8]", hits)
	}
	var stored []kv.Event
	for pass := 1; pass <= len(h.obs.passes); pass++ {
		for _, e := range h.events[pass] {
			if e.Kind == kv.Stored {
				stored = append(stored, e)
			}
		}
	}
	if len(stored) != 2 {
		t.Fatalf("stored events %+v, want one per adapter", stored)
	}
	ea, eb := stored[0], stored[1]
	if ea.Adapter != adapterA || eb.Adapter != adapterB {
		t.Errorf("event adapters %+v, %+v", ea.Adapter, eb.Adapter)
	}
	for i := range ea.BlockHashes {
		if ea.BlockHashes[i] == eb.BlockHashes[i] {
			t.Errorf("block %d has hash %#x under both adapters", i, ea.BlockHashes[i])
		}
	}
	if !slices.Equal(ea.ExtraKeys[1], []string{"a"}) || !slices.Equal(eb.ExtraKeys[0], []string{"b"}) {
		t.Errorf("extra keys %q / %q", ea.ExtraKeys, eb.ExtraKeys)
	}
}

// TestLoadingAnAdapterFillsTheSlotsAsAddLoRADoes: registering adapters
// loads each into the CPU cache and a GPU slot; with max_loras 2 and
// max_cpu_loras 3 the third pushes the first out of the GPU but not out of
// the CPU cache, so running it later costs one load time, not two. On an
// idle engine registering costs no pass time.
func TestLoadingAnAdapterFillsTheSlotsAsAddLoRADoes(t *testing.T) {
	h := loraHarness(t, func(c *Config) { c.LoRA.MaxCPULoRAs = 3 })
	for _, a := range []Adapter{adapterA, adapterB, adapterC} {
		h.core.LoadAdapter(a)
	}
	g := h.obs.gauges
	if !slices.Equal(g.GPUAdapters, []Adapter{adapterB, adapterC}) || !slices.Equal(g.CPUAdapters, []Adapter{adapterA, adapterB, adapterC}) {
		t.Fatalf("slots gpu=%v cpu=%v", g.GPUAdapters, g.CPUAdapters)
	}
	r := h.submitAdapterAt(0, adapterA, seqTokens(100, 8), 1)
	h.sim.Run(0)
	// 20 prefill + 10 decode + one load (a is still in the CPU cache).
	if res := drain(r); !slices.Equal(res.times, []float64{35}) {
		t.Errorf("token at %v ms, want [35]", res.times)
	}
}

func TestAdapterRequestWithoutLoRAIsRejected(t *testing.T) {
	h := newHarness(t, nil)
	r := h.submitAdapterAt(0, adapterA, seqTokens(1, 8), 1)
	h.sim.Run(0)
	res := drain(r)
	if res.fin == nil || res.fin.Rejection == nil || res.fin.Rejection.Reason != RejectLoRADisabled {
		t.Errorf("terminal %+v, want a LoRA-disabled rejection", res.fin)
	}
}

// TestLoRAInvariantsUnderRandomLoad runs random arrivals, lengths and
// cancellations over 5 adapters and the base model on a small pool (so
// requests are preempted) and checks after every pass: no pass runs more
// than max_loras adapters, the waiting queue's per-adapter counts match its
// contents, and every request ends.
func TestLoRAInvariantsUnderRandomLoad(t *testing.T) {
	preemptions, deferredPasses := 0, 0
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 99))
		h := loraHarness(t, func(c *Config) {
			c.NumBlocks = 40
			c.MaxNumBatchedTokens = 64
			c.LoRA.MaxCPULoRAs = 3
		})
		adapters := []Adapter{{}, adapterA, adapterB, adapterC, {ID: 4, Name: "d"}, {ID: 5, Name: "e"}}
		var reqs []*Request
		for i := range 60 {
			a := adapters[r.IntN(len(adapters))]
			req := h.submitAdapterAt(float64(r.IntN(400)), a, seqTokens(1000*i, 4+r.IntN(40)), 1+r.IntN(12))
			reqs = append(reqs, req)
			if r.IntN(8) == 0 {
				h.sim.CancelAt(time.Duration(r.IntN(500))*time.Millisecond, req.ID)
			}
		}
		next := h.sim.AfterPass
		h.sim.AfterPass = func(pass int) {
			next(pass)
			c := h.core
			var inPass []int
			for _, s := range c.running {
				if s.scheduled && s.req.Adapter.ID != 0 && !slices.Contains(inPass, s.req.Adapter.ID) {
					inPass = append(inPass, s.req.Adapter.ID)
				}
			}
			if len(inPass) > c.cfg.LoRA.MaxLoRAs {
				t.Fatalf("seed %d pass %d runs adapters %v", seed, pass, inPass)
			}
			if q := &c.waiting; q.perAdapter != nil {
				count := map[int]int{}
				for i := 0; i < q.Len(); i++ {
					count[q.At(i).req.Adapter.ID]++
				}
				for id, n := range q.perAdapter {
					if count[id] != n {
						t.Fatalf("seed %d pass %d: queue counts %v, contents %v", seed, pass, q.perAdapter, count)
					}
				}
			}
		}
		h.sim.Run(0)
		for i, req := range reqs {
			if res := drain(req); res.fin == nil {
				t.Fatalf("seed %d: request %d never ended", seed, i)
			}
		}
		preemptions += h.obs.total(func(p *PassReport) int { return p.Preemptions })
		for _, a := range h.obs.adapters {
			if !strings.HasSuffix(a, "deferred=0") {
				deferredPasses++
			}
		}
	}
	if preemptions == 0 || deferredPasses == 0 {
		t.Errorf("the load exercised %d preemptions and %d reports with deferred requests; want both", preemptions, deferredPasses)
	}
}
