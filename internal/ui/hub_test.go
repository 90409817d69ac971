package ui

import (
	"slices"
	"testing"

	"github.com/mocker-server/mocker-server/internal/engine"
)

func TestHub_RecordsEachRequestsTimelineAndKVEvents(t *testing.T) {
	hub := NewHub(Options{})
	s := newSimulated(t, hub, 64)
	s.submit(0, "cmpl-a", 40, 5)
	s.submit(0, "cmpl-b", 40, 3) // same prompt: its first blocks are prefix hits
	s.run()

	for _, tc := range []struct {
		label  string
		tokens int
	}{{"cmpl-a", 5}, {"cmpl-b", 3}} {
		found := hub.reqs.find(tc.label)
		if len(found) != 1 {
			t.Fatalf("%s: %d records, want 1", tc.label, len(found))
		}
		d := found[0]
		if d.State != stateFinished || d.Reason != "length" || d.Generated != tc.tokens || len(d.Tokens) != tc.tokens {
			t.Errorf("%s: state %s reason %q generated %d, %d token times; want finished, length, %d", tc.label,
				d.State, d.Reason, d.Generated, len(d.Tokens), tc.tokens)
		}
		var kinds []eventKind
		for _, e := range d.Events {
			kinds = append(kinds, e.Kind)
		}
		for _, k := range []eventKind{evArrive, evAdmit, evPrefill, evFinish} {
			if !slices.Contains(kinds, k) {
				t.Errorf("%s: timeline %v lacks %s", tc.label, kinds, k)
			}
		}
		if !slices.IsSorted(d.Tokens) {
			t.Errorf("%s: token times not in order: %v", tc.label, d.Tokens)
		}
	}
	a, b := hub.reqs.find("cmpl-a")[0], hub.reqs.find("cmpl-b")[0]
	// Both are admitted in the same pass, the first one first: it caches
	// the shared prompt's two full blocks at admission, where the second
	// one finds them (vLLM's order).
	if len(a.KV) == 0 {
		t.Errorf("cmpl-a: no KV events attributed; want its BlockStored")
	}
	if a.Cached != 0 || b.Cached != 32 {
		t.Errorf("cached tokens %d, %d; want 0, 32", a.Cached, b.Cached)
	}

	// The grid agrees with the pool itself.
	rv := hub.rankView(0)
	pool := s.core.Pool()
	if rv.inUse != pool.NumActive() || rv.inUse+rv.cached > pool.NumBlocks() || rv.cached == 0 {
		t.Errorf("grid: %d in use, %d cached of %d; pool: %d active", rv.inUse, rv.cached, len(rv.grid), pool.NumActive())
	}
	if sum := hub.Summary(); sum.FinishedRequests != 2 || sum.Blocks != 64 {
		t.Errorf("summary %+v; want 2 finished, 64 blocks", sum)
	}
}

func TestHub_LaterRequestSeesPrefixHitsAndHoverNamesHolders(t *testing.T) {
	hub := NewHub(Options{})
	s := newSimulated(t, hub, 64)
	s.submit(0, "cmpl-first", 40, 2)
	s.submit(1_000_000_000, "cmpl-second", 40, 200) // 1 s later, still running at the end
	s.sim.Run(60)
	s.core.InspectState(s.sim.Clock.Now())

	second := hub.reqs.find("cmpl-second")[0]
	if second.Cached != 32 { // two full 16-token blocks of the shared prompt
		t.Errorf("cmpl-second cached %d tokens, want 32", second.Cached)
	}
	rv := hub.rankView(0)
	if len(rv.running) != 1 {
		t.Fatalf("running %d, want 1", len(rv.running))
	}
	blk := int(rv.running[0].Blocks[1])
	d, ok := rv.block(blk, hub)
	if !ok || d.State != "in_use" || d.Refs != 1 || d.Hash == "" || d.Parent == "" ||
		!slices.Equal(d.Holders, []string{"cmpl-second"}) {
		t.Errorf("block %d: %+v", blk, d)
	}
	if _, ok := rv.block(64, hub); ok {
		t.Error("block 64 of a 64-block pool was found")
	}
}

// The SGLang engine keeps its KV in a radix tree, not the block pool: the
// view has no grid but still follows its requests.
func TestHub_SGLangEngineHasNoGridButItsRequests(t *testing.T) {
	hub := NewHub(Options{})
	cfg := engine.DefaultConfig()
	cfg.Type = engine.EngineSGLang
	cfg.BlockSize = 0
	core, err := engine.NewCore(cfg, engine.CoreOptions{Inspector: hub.Inspector(0)})
	if err != nil {
		t.Fatal(err)
	}
	s := &simulated{core: core, sim: engine.NewSimulator(core)}
	s.submit(0, "cmpl-sgl", 40, 4)
	s.run()
	d := hub.reqs.find("cmpl-sgl")
	if len(d) != 1 || d[0].State != stateFinished || len(d[0].Tokens) != 4 {
		t.Fatalf("sglang request: %+v", d)
	}
	if rv := hub.rankView(0); len(rv.grid) != 0 {
		t.Errorf("sglang: a grid of %d blocks", len(rv.grid))
	}
	if _, b := hub.encodeEngine(); len(b) == 0 {
		t.Error("no engine view")
	}
}
