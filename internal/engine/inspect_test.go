package engine

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/kv"
)

// recordingInspector keeps a deep copy of every trace and the last state.
type recordingInspector struct {
	traces []PassTrace
	state  StateSnapshot
	blocks []recordedBlock
	states int
	want   bool
}

type recordedBlock struct {
	refs   int
	hash   uint64
	cached bool
}

func (r *recordingInspector) InspectPass(t *PassTrace) {
	c := *t
	c.Submitted = slices.Clone(t.Submitted)
	c.Preempted = slices.Clone(t.Preempted)
	c.Rejected = slices.Clone(t.Rejected)
	c.Finished = slices.Clone(t.Finished)
	c.KVEvents = slices.Clone(t.KVEvents)
	c.Steps = nil
	for _, s := range t.Steps {
		s.NewHashes = slices.Clone(s.NewHashes)
		c.Steps = append(c.Steps, s)
	}
	r.traces = append(r.traces, c)
}

func (r *recordingInspector) WantState() bool { return r.want }

func (r *recordingInspector) InspectState(s *StateSnapshot) {
	r.states++
	r.state = StateSnapshot{Rank: s.Rank, Time: s.Time}
	r.blocks = r.blocks[:0]
	for b := range s.Blocks.NumBlocks() {
		h, cached := s.Blocks.BlockHash(kv.BlockID(b))
		r.blocks = append(r.blocks, recordedBlock{refs: s.Blocks.RefCount(kv.BlockID(b)), hash: h, cached: cached})
	}
	for _, q := range s.Running {
		q.Blocks, q.Hashes = slices.Clone(q.Blocks), slices.Clone(q.Hashes)
		r.state.Running = append(r.state.Running, q)
	}
	r.state.Waiting = slices.Clone(s.Waiting)
}

// inspected runs a scenario with an inspector next to the recording
// observer and KV sink, so that the trace can be checked against what the
// engine reports through its other, independent paths.
type inspected struct {
	core   *Core
	sim    *Simulator
	insp   *recordingInspector
	obs    *recordingObserver
	events []kv.Event
}

func newInspected(t *testing.T, mutate func(*Config)) *inspected {
	t.Helper()
	cfg := DefaultConfig()
	cfg.BlockSize = 16
	mutate(&cfg)
	x := &inspected{insp: &recordingInspector{}, obs: &recordingObserver{}}
	core, err := NewCore(cfg, CoreOptions{Observer: x.obs, Inspector: x.insp,
		KVSink: sinkFunc(func(b KVEventBatch) { x.events = append(x.events, b.Events...) })})
	if err != nil {
		t.Fatal(err)
	}
	x.core, x.sim = core, NewSimulator(core)
	return x
}

func (x *inspected) submit(at time.Duration, prompt, output int) *Request {
	r := &Request{ID: NewRequestID(), Prompt: seqTokens(1, prompt), PlannedOutput: seqTokens(5000, output), Out: NewOutput()}
	x.sim.SubmitAt(at, r)
	return r
}

func TestInspector_TraceAgreesWithTheObserverAndTheKVSink(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mutate   func(*Config)
		preempts bool
	}{
		{"chunked prefill with a shared prefix", func(c *Config) {
			c.MaxNumBatchedTokens = 32
			c.EnableChunkedPrefill = true
		}, false},
		{"a pool too small for both: preemption", func(c *Config) {
			c.NumBlocks = 8
		}, true},
		{"speculative decoding: several tokens per pass", func(c *Config) {
			c.Speculative = SpeculativeConfig{NumSpeculativeTokens: 3, AcceptanceRates: []float64{0.9, 0.7, 0.5}, Seed: 7}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newInspected(t, tc.mutate)
			reqs := []*Request{x.submit(0, 40, 30), x.submit(0, 40, 40), x.submit(5*time.Millisecond, 50, 20)}
			x.sim.Run(0)

			tokens, prefill, admits := map[uint64]int{}, map[uint64]int{}, map[uint64]int{}
			firstCached := map[uint64]int{}
			finished := map[uint64]FinishedRecord{}
			var events []kv.Event
			submitted, preempted, passes, maxPerStep := 0, 0, 0, 0
			for _, tr := range x.insp.traces {
				submitted += len(tr.Submitted)
				preempted += len(tr.Preempted)
				events = append(events, tr.KVEvents...)
				for _, f := range tr.Finished {
					finished[f.ID] = f
				}
				if !tr.IsPass {
					continue
				}
				stored := map[uint64]bool{}
				for _, s := range tr.Steps {
					for _, h := range s.NewHashes {
						stored[h] = true
					}
				}
				for _, e := range tr.KVEvents {
					for _, h := range e.BlockHashes {
						if e.Kind == kv.Stored && !stored[h] {
							t.Errorf("pass at %v: stored hash %#x belongs to no step's NewHashes", tr.Start, h)
						}
					}
				}
				genThisPass := 0
				for _, s := range tr.Steps {
					tokens[s.ID] += s.Tokens
					genThisPass += s.Tokens
					maxPerStep = max(maxPerStep, s.Tokens)
					prefill[s.ID] += s.PrefillTokens
					if s.Admitted {
						if admits[s.ID] == 0 {
							firstCached[s.ID] = s.CachedTokens
						}
						admits[s.ID]++
					}
				}
				if rep := x.obs.passes[passes]; !rep.IsPass || rep.GenerationTokens != genThisPass {
					t.Errorf("pass %d: trace delivered %d tokens, observer %d", passes, genThisPass, rep.GenerationTokens)
				}
				passes++
			}
			if wantMulti := strings.HasPrefix(tc.name, "speculative"); (maxPerStep > 1) != wantMulti {
				t.Errorf("at most %d tokens per step in a pass; several expected: %v", maxPerStep, wantMulti)
			}
			if passes != len(x.obs.passes) || submitted != len(reqs) {
				t.Errorf("%d pass traces for %d observer passes, %d submitted of %d", passes, len(x.obs.passes), submitted, len(reqs))
			}
			if want := x.obs.total(func(p *PassReport) int { return p.Preemptions }); preempted != want || (want > 0) != tc.preempts {
				t.Errorf("traces preempted %d, observer %d (scenario expects preemption: %v)", preempted, want, tc.preempts)
			}
			if !slices.EqualFunc(events, x.events, func(a, b kv.Event) bool {
				return a.Kind == b.Kind && slices.Equal(a.BlockHashes, b.BlockHashes)
			}) {
				t.Errorf("traces carry %d KV events, the sink got %d", len(events), len(x.events))
			}
			for _, r := range reqs {
				f, ok := finished[r.ID]
				if !ok {
					t.Fatalf("request %d: no finish in the traces", r.ID)
				}
				if tokens[r.ID] != len(r.PlannedOutput) || f.Generated != tokens[r.ID] {
					t.Errorf("request %d: %d token steps, finish says %d, planned %d", r.ID, tokens[r.ID], f.Generated, len(r.PlannedOutput))
				}
				if admits[r.ID] != 1+f.Preemptions || firstCached[r.ID] != f.CachedTokens {
					t.Errorf("request %d: %d admissions (first cached %d), finish: %d preemptions, %d cached",
						r.ID, admits[r.ID], firstCached[r.ID], f.Preemptions, f.CachedTokens)
				}
				if f.Preemptions == 0 && prefill[r.ID]+f.CachedTokens != len(r.Prompt) {
					t.Errorf("request %d: prefill steps %d + cached %d != prompt %d", r.ID, prefill[r.ID], f.CachedTokens, len(r.Prompt))
				}
			}
		})
	}
}

func TestInspector_StateSnapshotMatchesThePool(t *testing.T) {
	x := newInspected(t, func(c *Config) {})
	x.insp.want = true
	x.submit(0, 40, 100)
	x.submit(0, 40, 100)
	x.sim.Run(10)
	if x.insp.states == 0 {
		t.Fatal("no state snapshot although the inspector wanted them")
	}
	st, blocks, pool := x.insp.state, x.insp.blocks, x.core.Pool()
	if len(blocks) != pool.NumBlocks() || len(st.Running) != 2 || len(st.Waiting) != 0 {
		t.Fatalf("snapshot: %d blocks, %d running, %d waiting", len(blocks), len(st.Running), len(st.Waiting))
	}
	// The pool has not changed since the snapshot (no pass ran after it):
	// each block's references and hash are the pool's, and the cached
	// free ones are the pool's own count.
	cachedFree := 0
	for b, s := range blocks {
		h, cached := pool.BlockHash(kv.BlockID(b))
		if s.refs != pool.RefCount(kv.BlockID(b)) || s.cached != cached || s.hash != h {
			t.Errorf("block %d: snapshot %+v, pool refs %d cached %v", b, s, pool.RefCount(kv.BlockID(b)), cached)
		}
		if s.refs == 0 && s.cached {
			cachedFree++
		}
	}
	if cachedFree != pool.NumCachedFree() {
		t.Errorf("snapshot has %d cached free blocks, pool says %d", cachedFree, pool.NumCachedFree())
	}
	// The two share their prompt's two full blocks: each holds them, and
	// their hashes are the chain's.
	a, b := st.Running[0], st.Running[1]
	if a.Blocks[0] != b.Blocks[0] || a.Blocks[1] != b.Blocks[1] || blocks[a.Blocks[0]].refs != 2 || len(a.Hashes) < 2 ||
		blocks[a.Blocks[0]].hash != a.Hashes[0] || blocks[a.Blocks[1]].hash != a.Hashes[1] {
		t.Errorf("running: %+v / %+v", a, b)
	}
	// Without the inspector asking, no snapshot is built until the
	// driver asks for the final one.
	x.insp.want = false
	n := x.insp.states
	x.sim.Run(15) // five more passes
	if x.insp.states != n {
		t.Errorf("%d snapshots built unasked", x.insp.states-n)
	}
	x.core.InspectState(x.sim.Clock.Now())
	x.core.InspectState(x.sim.Clock.Now()) // nothing new: no second one
	if x.insp.states != n+1 {
		t.Errorf("InspectState built %d snapshots, want 1", x.insp.states-n)
	}
}
