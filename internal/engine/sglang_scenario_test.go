package engine

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/kv"
)

// Reference scenarios for the sglang engine (G1, G2, …), in virtual time
// with the fixed timing model: a pass that computes prompt tokens costs
// 20 ms, a pass that emits tokens 10 ms, both 30 ms. Each derivation
// follows SGLang's scheduler (schedule_policy.py PrefillAdder,
// schedule_batch.py retract_decode) step by step in the comments.

// newSGLangHarness builds an sglang core (page size 1, fixed timing,
// 1000 pages) adjusted by mutate, and checks the radix page accounting
// after every pass.
func newSGLangHarness(t *testing.T, mutate func(c *Config)) *harness {
	t.Helper()
	h := newHarness(t, func(c *Config) {
		c.Type = EngineSGLang
		c.BlockSize = 1
		c.NumBlocks = 1000
		c.Timing = TimingConfig{Model: TimingFixed, FixedPrefillMs: 20, FixedDecodeMs: 10}
		if mutate != nil {
			mutate(c)
		}
	})
	after := h.sim.AfterPass
	h.sim.AfterPass = func(pass int) {
		after(pass)
		if err := h.core.checkRadixAccounting(); err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
	}
	return h
}

// checkRadixAccounting verifies that every page is free, in the tree or
// held by exactly one running or chunked sequence, and that waiting
// sequences hold nothing.
func (c *Core) checkRadixAccounting() error {
	m := c.kv.radix
	held := 0
	for _, s := range c.running {
		held += s.radix.privatePages
		if s.radix.node == nil {
			return fmt.Errorf("running request %d holds no lock", s.req.ID)
		}
	}
	for i := 0; i < c.waiting.Len(); i++ {
		if s := c.waiting.At(i); s.radix.node != nil || s.radix.privatePages != 0 {
			return fmt.Errorf("waiting request %d holds pages", s.req.ID)
		}
	}
	tree := (m.tree.EvictableTokens() + m.tree.ProtectedTokens()) / m.pageSize
	free := m.tree.AvailableTokens() / m.pageSize
	if free+tree+held != c.cfg.NumBlocks {
		return fmt.Errorf("free %d + tree %d + held %d pages != %d", free, tree, held, c.cfg.NumBlocks)
	}
	return nil
}

func finishedByID(t *testing.T, h *harness) map[uint64]FinishedRecord {
	t.Helper()
	out := map[uint64]FinishedRecord{}
	for _, f := range h.obs.finished {
		out[f.ID] = f
	}
	return out
}

func msOf(h *harness, f FinishedRecord) float64 {
	return float64(f.Finished.Sub(VirtualEpoch)) / 1e6
}

// G1: LPM admits the request whose prefix is cached ahead of two earlier
// arrivals. With max_running_requests 1 one request runs at a time, so the
// admission order is the completion order.
//
//	A (64 shared + 8 own tokens, 2 tokens out) at 0 ms:
//	  pass 1 @0  prefill 72, first token           → 30 ms (20 + 10)
//	  pass 2 @30 decode, second token, A finishes  → 40 ms; the tree now
//	            holds A's prompt and first output token (73 tokens).
//	B, C (40 unrelated tokens each) and D (the 64 shared + 8 other tokens)
//	arrive at 50 ms in that order, 1 token out each.
//	  LPM matches each against the tree: B 0, C 0, D 64 (D's key is its
//	  first 71 tokens; the common part with A is 64, which splits A's node).
//	  B and C have short matches (≤ 32) and share nothing with each other,
//	  so neither is deprioritized. Stable sort by match: D, B, C.
//	  pass 3 @50  D: 8 new tokens (64 cached) → token at 80
//	  pass 4 @80  B: 40 new tokens → 110
//	  pass 5 @110 C → 140
//	Under FCFS the order is B (80), C (110), D (140).
func TestScenarioG1LPMAdmitsTheSharedPrefixFirst(t *testing.T) {
	shared := seqTokens(1000, 64)
	for _, tc := range []struct {
		policy        SGLangPolicy
		wantB, wantC  float64
		wantD         float64
		wantDCachedTk int
	}{
		{SGLangLPM, 110, 140, 80, 64},
		{SGLangFCFS, 80, 110, 140, 64},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			h := newSGLangHarness(t, func(c *Config) {
				c.SGLang.Policy = tc.policy
				c.SGLang.MaxRunningRequests = 1
			})
			a := h.submitAt(0, append(slices.Clone(shared), seqTokens(5000, 8)...), []uint32{1, 2})
			b := h.submitAt(50, seqTokens(2000, 40), []uint32{3})
			cc := h.submitAt(50, seqTokens(3000, 40), []uint32{4})
			d := h.submitAt(50, append(slices.Clone(shared), seqTokens(6000, 8)...), []uint32{5})
			h.sim.Run(0)
			fin := finishedByID(t, h)
			for _, x := range []struct {
				name   string
				r      *Request
				ms     float64
				cached int
			}{
				{"A", a, 40, 0}, {"B", b, tc.wantB, 0}, {"C", cc, tc.wantC, 0}, {"D", d, tc.wantD, tc.wantDCachedTk},
			} {
				f := fin[x.r.ID]
				if got := msOf(h, f); !approx(got, x.ms, msTolerance) || f.CachedTokens != x.cached {
					t.Errorf("%s finished at %.3f ms with %d cached tokens, want %.0f ms and %d",
						x.name, got, f.CachedTokens, x.ms, x.cached)
				}
			}
		})
	}
}

// G2: retraction under memory pressure. 40 pages, clip_max_new_tokens 4;
// A and B have 10-token prompts and 16 tokens out each, at 0 ms.
//
//	pass 1 @0: the budget is 40 free tokens. A needs 10 + min(16, 4) = 14
//	  < 40 → admitted, offset 14 (remaining 26); B 14 < 26 → admitted,
//	  offset 28. Both prefill (20 pages, 20 free) → first tokens at 30 ms.
//	passes 2–11: decode, 2 pages per pass, tokens 2–11 at 40…130 ms; the
//	  pool is then full (each holds 10 prompt pages locked in the tree and
//	  10 private pages).
//	pass 12 @130: the step needs 2 pages, none is free or evictable →
//	  retract. Sorted by (output tokens, −prompt) descending both tie, so
//	  the later one, B, goes: its 10 private pages are freed and its
//	  prompt unlocked; SGLang then evicts up to 20 tokens per remaining
//	  request, which evicts B's prompt too (20 free). One request is left,
//	  so retraction stops. new_token_ratio = (11 decoded + 20·1) / 16 → 1.
//	  A decodes token 12 at 140 ms.
//	pass 13 @140: B waits with 21 tokens (10 prompt + 11 generated), none
//	  cached: 21 + 4 = 25 ≥ 19 free − 4·1.0 reserved for A → no room, the
//	  batch is full until a request leaves. A decodes: 150, 160, 170, 180;
//	  A finishes at 180 ms (its 25 computed tokens go to the tree).
//	pass 17 @180: B fits (25 < 40); its 21 pages evict A's 15-token leaf;
//	  21 tokens are recomputed (20 ms) and token 12 comes at 210 ms; tokens
//	  13–16 at 220…250 ms: B finishes at 250 ms after 1 retraction.
func TestScenarioG2RetractionUnderMemoryPressure(t *testing.T) {
	h := newSGLangHarness(t, func(c *Config) {
		c.NumBlocks = 40
		c.SGLang.ClipMaxNewTokens = 4
	})
	out := seqTokens(100, 16)
	a := h.submitAt(0, seqTokens(1000, 10), out)
	b := h.submitAt(0, seqTokens(2000, 10), out)
	var ratios []float64
	h.sim.AfterPass = chainAfter(h.sim.AfterPass, func(int) { ratios = append(ratios, h.core.NewTokenRatio()) })
	h.sim.Run(0)

	fin := finishedByID(t, h)
	fa, fb := fin[a.ID], fin[b.ID]
	if got := msOf(h, fa); !approx(got, 180, msTolerance) || fa.Preemptions != 0 || fa.Generated != 16 {
		t.Errorf("A finished at %.3f ms after %d retractions (%d tokens), want 180 ms, 0, 16", got, fa.Preemptions, fa.Generated)
	}
	if got := msOf(h, fb); !approx(got, 250, msTolerance) || fb.Preemptions != 1 || fb.Generated != 16 {
		t.Errorf("B finished at %.3f ms after %d retractions (%d tokens), want 250 ms, 1, 16", got, fb.Preemptions, fb.Generated)
	}
	if n := h.obs.passes[11].Preemptions; n != 1 {
		t.Errorf("pass 12 retracted %d requests, want 1", n)
	}
	if got := ratios[11]; got != 1 {
		t.Errorf("new_token_ratio after the retraction = %v, want 1", got)
	}
	// Pass 17 recomputes B's 10 prompt and 11 generated tokens.
	if f := h.fpm[17]; f.NumPrefillRequests != 1 || f.SumPrefillTokens != 21 || f.SumPrefillKVTokens != 0 {
		t.Errorf("pass 17 FPM %+v, want one prefill of 21 new tokens", f)
	}
	res := drain(b)
	if len(res.times) != 16 || !approx(res.times[10], 130, msTolerance) || !approx(res.times[11], 210, msTolerance) {
		t.Errorf("B token times %v", res.times)
	}
}

// G3: new_token_ratio pass by pass. With schedule_conservativeness 0.5 the
// ratio starts at 0.7·0.5 = 0.35, its minimum is 0.14·0.35 = 0.049 and it
// decays by (0.35 − 0.049)/600 = 0.000501667 per decode pass. One request
// of 4 tokens out: pass 1 prefills (no decay), passes 2–4 decode. A second
// request after the engine went idle finds the ratio reset to 0.35.
func TestScenarioG3NewTokenRatioDecayAndReset(t *testing.T) {
	h := newSGLangHarness(t, func(c *Config) { c.SGLang.ScheduleConservativeness = 0.5 })
	h.submitAt(0, seqTokens(1000, 10), seqTokens(1, 4))
	h.submitAt(1000, seqTokens(2000, 10), seqTokens(1, 2))
	var ratios []float64
	h.sim.AfterPass = chainAfter(h.sim.AfterPass, func(int) { ratios = append(ratios, h.core.NewTokenRatio()) })
	h.sim.Run(0)
	step := (0.35 - 0.049) / 600
	want := []float64{0.35, 0.35 - step, 0.35 - 2*step, 0.35 - 3*step, 0.35, 0.35 - step}
	if len(ratios) != len(want) {
		t.Fatalf("ratios %v, want %v", ratios, want)
	}
	for i := range want {
		if math.Abs(ratios[i]-want[i]) > 1e-12 {
			t.Errorf("pass %d: new_token_ratio %.9f, want %.9f", i+1, ratios[i], want[i])
		}
	}
	if init, minimum, decay := newTokenRatios(1); init != 0.7 || math.Abs(minimum-0.098) > 1e-15 || math.Abs(decay-0.602/600) > 1e-15 {
		t.Errorf("default ratios %v %v %v", init, minimum, decay)
	}
}

// G4: a partial match splits a radix node. The tree holds one node of 8
// tokens; matching 1,2,3,9 ends inside it, so it is split after 3 tokens
// (the upper node is returned) without any event (no page changes
// identity). Inserting 1,2,3,9,10 then adds a 2-token leaf under the split
// point: two BlockStored events, the first chained to the page 1,2,3 ends
// with.
func TestScenarioG4RadixSplitOnPartialMatch(t *testing.T) {
	c := kv.NewRadixCache(100, 1, true)
	if !c.Allocate(8) {
		t.Fatal("allocate")
	}
	if got := c.Insert("", []uint32{1, 2, 3, 4, 5, 6, 7, 8}); got != 0 {
		t.Fatalf("insert found %d cached", got)
	}
	c.TakeEvents()
	n, node := c.Match("", []uint32{1, 2, 3, 9})
	if n != 3 || node.Len() != 3 || c.NumNodes() != 2 {
		t.Fatalf("match = %d tokens at a %d-token node, %d nodes; want 3, 3, 2", n, node.Len(), c.NumNodes())
	}
	if ev := c.TakeEvents(); len(ev) != 0 {
		t.Errorf("split recorded %v", ev)
	}
	if got := c.Insert("", []uint32{1, 2, 3, 9, 10}); got != 3 {
		t.Errorf("second insert found %d cached, want 3", got)
	}
	ref := kv.RadixPageHashes([]uint32{1, 2, 3, 9, 10}, 1)
	ev := c.TakeEvents()
	if len(ev) != 2 || ev[0].BlockHashes[0] != ref[3] || !ev[0].HasParent || ev[0].ParentBlockHash != ref[2] ||
		ev[1].BlockHashes[0] != ref[4] || ev[1].ParentBlockHash != ref[3] || !slices.Equal(ev[1].TokenIDs, []uint32{10}) {
		t.Errorf("events %+v, want Stored(9 after 3), Stored(10 after 9)", ev)
	}
	if c.NumNodes() != 3 || c.EvictableTokens() != 10 {
		t.Errorf("%d nodes, %d evictable tokens; want 3 and 10", c.NumNodes(), c.EvictableTokens())
	}
}

// G5: page size 1 versus 16 on the same two requests, which share their
// first 40 tokens; B arrives after A has finished. A radix tree caches
// whole pages only: with page size 1 B hits all 40 shared tokens, with
// page size 16 the two whole pages, 32 tokens. vLLM with 16-token blocks
// hits the same 32.
func TestScenarioG5PageSize1Versus16Hits(t *testing.T) {
	shared := seqTokens(1000, 40)
	for _, tc := range []struct {
		name     string
		engine   EngineType
		pageSize int
		want     int
	}{
		{"sglang page 1", EngineSGLang, 1, 40},
		{"sglang page 16", EngineSGLang, 16, 32},
		{"vllm block 16", EngineVLLM, 16, 32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) {
				c.Type, c.BlockSize, c.NumBlocks = tc.engine, tc.pageSize, 400
			})
			h.submitAt(0, append(slices.Clone(shared), seqTokens(5000, 30)...), []uint32{1})
			b := h.submitAt(1000, append(slices.Clone(shared), seqTokens(6000, 30)...), []uint32{2})
			h.sim.Run(0)
			if got := finishedByID(t, h)[b.ID].CachedTokens; got != tc.want {
				t.Errorf("B hit %d tokens, want %d", got, tc.want)
			}
			if q, hits := h.obs.total(func(p *PassReport) int { return p.PrefixQueries }),
				h.obs.total(func(p *PassReport) int { return p.PrefixHits }); q != 140 || hits != tc.want {
				t.Errorf("prefix queries/hits = %d/%d, want 140/%d", q, hits, tc.want)
			}
		})
	}
}

func chainAfter(first, then func(int)) func(int) {
	return func(pass int) {
		first(pass)
		then(pass)
	}
}

// TestRetractOrderFewestOutputsThenLongestPrompt pins retract_decode's
// victim order: popped from the end of the sorted list, so the fewest
// generated tokens go first, the longest prompt among equal outputs, and
// the later-admitted among full ties.
func TestRetractOrderFewestOutputsThenLongestPrompt(t *testing.T) {
	mk := func(name string, gen, prompt int) *sequence {
		return &sequence{req: &Request{CacheSalt: name}, numGeneratedTokens: gen, numPromptTokens: prompt}
	}
	running := []*sequence{mk("a", 5, 10), mk("b", 5, 20), mk("c", 6, 5), mk("d", 2, 8), mk("e", 5, 20)}
	order := retractOrder(running)
	var popped []string
	for i := len(order) - 1; i >= 0; i-- {
		popped = append(popped, order[i].req.CacheSalt)
	}
	if want := []string{"d", "e", "b", "a", "c"}; !slices.Equal(popped, want) {
		t.Errorf("retraction order %v, want %v", popped, want)
	}
}

// TestSGLangCacheSaltIsolatesPrefixes: a request only hits pages cached
// under its own namespace (cache salt, LoRA adapter), as SGLang keys its
// radix tree by extra_key.
func TestSGLangCacheSaltIsolatesPrefixes(t *testing.T) {
	h := newSGLangHarness(t, nil)
	prompt := seqTokens(1000, 40)
	submit := func(ms float64, salt string) *Request {
		r := h.request(prompt, []uint32{1})
		r.CacheSalt = salt
		h.sim.SubmitAt(msDuration(ms), r)
		return r
	}
	submit(0, "a")
	other := submit(1000, "b")
	same := submit(2000, "a")
	plain := submit(3000, "")
	h.sim.Run(0)
	fin := finishedByID(t, h)
	if got := fin[other.ID].CachedTokens; got != 0 {
		t.Errorf("another salt hit %d tokens", got)
	}
	if got := fin[same.ID].CachedTokens; got != 39 {
		t.Errorf("the same salt hit %d tokens, want 39", got)
	}
	if got := fin[plain.ID].CachedTokens; got != 0 {
		t.Errorf("no salt hit %d tokens", got)
	}
}

func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
