package engine

import (
	"testing"
)

// TestTRTLLMCapacityPolicies runs scenario S6's pool that runs short (two
// 8-token prompts, 8 output tokens each, six 4-token blocks) under each of
// TensorRT-LLM's capacity scheduler policies. GUARANTEED_NO_EVICT (and the
// default) reserves A's whole output at admission, so B waits and nothing
// is preempted (S7); MAX_UTILIZATION admits both and pauses the most
// recently admitted when decoding runs out of blocks, exactly as vLLM's
// LIFO preemption does in S6.
func TestTRTLLMCapacityPolicies(t *testing.T) {
	type outcome struct {
		preemptions, doneA, doneB int
		pass1Prefills             int
	}
	run := func(t *testing.T, engine EngineType, capacity CapacityPolicy) outcome {
		t.Helper()
		h, a, b, _, done := s6Capacity(t, engine, capacity)
		if len(drain(a).tokens) != 8 || len(drain(b).tokens) != 8 {
			t.Fatalf("%s/%s: both requests must generate 8 tokens", engine, capacity)
		}
		if n := h.core.Pool().NumActive(); n != 0 {
			t.Errorf("%s/%s: final active blocks %d", engine, capacity, n)
		}
		return outcome{
			preemptions:   h.obs.total(func(p *PassReport) int { return p.Preemptions }),
			doneA:         done[a],
			doneB:         done[b],
			pass1Prefills: h.fpm[1].NumPrefillRequests,
		}
	}
	noEvict := outcome{preemptions: 0, doneA: 8, doneB: 16, pass1Prefills: 1}
	if got := run(t, EngineTRTLLM, CapacityGuaranteedNoEvict); got != noEvict {
		t.Errorf("guaranteed_no_evict: %+v, want %+v", got, noEvict)
	}
	if got := run(t, EngineTRTLLM, ""); got != noEvict {
		t.Errorf("default policy: %+v, want guaranteed_no_evict's %+v", got, noEvict)
	}
	maxUtil := run(t, EngineTRTLLM, CapacityMaxUtilization)
	want := outcome{preemptions: 1, doneA: 8, doneB: 11, pass1Prefills: 2}
	if maxUtil != want {
		t.Errorf("max_utilization: %+v, want %+v", maxUtil, want)
	}
	if vllm := run(t, EngineVLLM, ""); vllm != maxUtil {
		t.Errorf("max_utilization %+v differs from vLLM's claim-with-preemption %+v", maxUtil, vllm)
	}
	// The capacity policy is TensorRT-LLM's: the vLLM engine ignores it.
	if got := run(t, EngineVLLM, CapacityGuaranteedNoEvict); got != want {
		t.Errorf("vllm with a capacity policy: %+v, want vLLM's %+v", got, want)
	}
}

// TestTRTLLMStaticBatch shows STATIC_BATCH's rule: a request arriving while
// a batch runs waits for the whole batch to finish, even when the pool
// could hold it, where GUARANTEED_NO_EVICT admits it at once.
func TestTRTLLMStaticBatch(t *testing.T) {
	run := func(capacity CapacityPolicy) (admittedC int, finished map[*Request]int, h *harness) {
		h = newHarness(t, func(c *Config) {
			c.Type = EngineTRTLLM
			c.BlockSize = 4
			c.NumBlocks = 64
			c.Capacity = capacity
		})
		a := h.submitAt(0, seqTokens(1, 8), seqTokens(2000, 4))
		b := h.submitAt(0, seqTokens(101, 8), seqTokens(3000, 12))
		var c *Request
		finished = map[*Request]int{}
		h.sim.BeforePass = func(pass int) {
			if pass == 2 {
				c = h.request(seqTokens(201, 8), seqTokens(4000, 4))
				h.core.Submit(c)
			}
		}
		h.sim.AfterPass = chain(h.sim.AfterPass, func(pass int) {
			for _, r := range []*Request{a, b, c} {
				if r == nil {
					continue
				}
				if _, ok := finished[r]; ok {
					continue
				}
				if _, ok := h.core.byID[r.ID]; !ok {
					finished[r] = pass
				}
			}
			if f := h.fpm[pass]; admittedC == 0 && c != nil && pass >= 2 && f.NumPrefillRequests > 0 {
				admittedC = pass
			}
		})
		h.sim.Run(0)
		for _, r := range []*Request{a, b, c} {
			if n := len(drain(r).tokens); n != len(r.PlannedOutput) {
				t.Fatalf("%s: a request generated %d of %d tokens", capacity, n, len(r.PlannedOutput))
			}
		}
		if p := h.obs.total(func(p *PassReport) int { return p.Preemptions }); p != 0 {
			t.Errorf("%s: preemptions = %d", capacity, p)
		}
		return admittedC, finished, h
	}
	inflight, _, _ := run(CapacityGuaranteedNoEvict)
	if inflight != 2 {
		t.Errorf("guaranteed_no_evict admitted C in pass %d, want 2 (in-flight batching)", inflight)
	}
	static, done, h := run(CapacityStaticBatch)
	last := 0
	for r, pass := range done {
		if r != h.reqs[2] {
			last = max(last, pass)
		}
	}
	t.Logf("static_batch: A, B done by pass %d, C admitted in pass %d", last, static)
	if static != last+1 {
		t.Errorf("static_batch admitted C in pass %d, want %d (the pass after A and B finished)", static, last+1)
	}
}
