package engine

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/kv"
)

// harness runs one Core in virtual time and records everything it emits,
// indexed by pass number.
type harness struct {
	t      *testing.T
	cfg    *Config
	core   *Core
	sim    *Simulator
	events map[int][]kv.Event // pass → events published in that pass
	fpm    map[int]ForwardPassSnapshot
	pend   []kv.Event
	pendF  []ForwardPassSnapshot
	obs    *recordingObserver
	reqs   []*Request
}

type recordingObserver struct {
	passes   []PassReport
	finished []FinishedRecord
	gauges   Gauges
	// adapters records each gauge report's adapter lists, as
	// "running=a,b waiting=c" (LoRA scenarios).
	adapters []string
}

func (o *recordingObserver) ObserveGauges(g Gauges) {
	o.gauges = g
	if g.MaxLoRAs > 0 {
		o.adapters = append(o.adapters, fmt.Sprintf("running=%s waiting=%s deferred=%d",
			strings.Join(g.RunningAdapters, ","), strings.Join(g.WaitingAdapters, ","), g.WaitingDeferred))
	}
}
func (o *recordingObserver) ObservePass(r *PassReport) {
	c := *r
	c.First = append([]FirstTokenRecord(nil), r.First...)
	c.ITL = append([]float64(nil), r.ITL...)
	c.Finished = append([]FinishedRecord(nil), r.Finished...)
	c.Spec.AcceptedPerPos = append([]int(nil), r.Spec.AcceptedPerPos...)
	c.TierHits = append([]int(nil), r.TierHits...)
	c.Transfers = append([]KVTransfer(nil), r.Transfers...)
	c.Handoffs = append([]TransferRecord(nil), r.Handoffs...)
	o.passes = append(o.passes, c)
	o.finished = append(o.finished, r.Finished...)
}

func (o *recordingObserver) total(f func(*PassReport) int) int {
	n := 0
	for i := range o.passes {
		n += f(&o.passes[i])
	}
	return n
}

type sinkFunc func(KVEventBatch)

func (f sinkFunc) PublishKVEvents(b KVEventBatch) { f(b) }

type fpmFunc func(ForwardPassSnapshot)

func (f fpmFunc) PublishFPM(s ForwardPassSnapshot) { f(s) }

// newHarness builds a vllm core with DefaultConfig, adjusted by mutate.
func newHarness(t *testing.T, mutate func(c *Config)) *harness {
	t.Helper()
	cfg := DefaultConfig()
	if mutate != nil {
		mutate(&cfg)
	}
	h := &harness{t: t, cfg: &cfg, events: map[int][]kv.Event{},
		fpm: map[int]ForwardPassSnapshot{}, obs: &recordingObserver{}}
	core, err := NewCore(cfg, CoreOptions{
		KVSink:   sinkFunc(func(b KVEventBatch) { h.pend = append(h.pend, b.Events...) }),
		FPMSink:  fpmFunc(func(s ForwardPassSnapshot) { h.pendF = append(h.pendF, s) }),
		Observer: h.obs,
	})
	if err != nil {
		t.Fatalf("NewCore: %v", err)
	}
	h.core = core
	h.sim = NewSimulator(core)
	h.sim.AfterPass = func(pass int) {
		if len(h.pend) > 0 {
			h.events[pass] = h.pend
			h.pend = nil
		}
		for _, s := range h.pendF {
			h.fpm[pass] = s
		}
		h.pendF = nil
		if err := core.Pool().CheckInvariants(); err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
	}
	return h
}

// request builds a request with its own output queue.
func (h *harness) request(prompt, planned []uint32) *Request {
	r := &Request{ID: NewRequestID(), Prompt: prompt, PlannedOutput: planned, Out: NewOutput()}
	h.reqs = append(h.reqs, r)
	return r
}

// submitAt schedules a new request at virtual ms.
func (h *harness) submitAt(ms float64, prompt, planned []uint32) *Request {
	r := h.request(prompt, planned)
	h.sim.SubmitAt(time.Duration(ms*float64(time.Millisecond)), r)
	return r
}

// outputs drains a request's queue into tokens and its terminal signal.
type result struct {
	tokens []uint32
	times  []float64 // ms since the virtual epoch
	fin    *Finished
}

func drain(r *Request) result {
	var res result
	for _, it := range r.Out.Drain(nil) {
		if it.Final {
			f := it.Finished
			res.fin = &f
			continue
		}
		res.tokens = append(res.tokens, it.Token)
		res.times = append(res.times, float64(it.Time.Sub(VirtualEpoch))/float64(time.Millisecond))
	}
	return res
}

// seqTokens returns n consecutive token ids starting at first.
func seqTokens(first, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(first + i)
	}
	return out
}

// describe renders events compactly, e.g. "Stored[h1,h2 parent=-] Removed[h3]",
// with hashes replaced by names from the given map when known.
func describe(events []kv.Event, names map[uint64]string) string {
	var b strings.Builder
	name := func(h uint64) string {
		if n, ok := names[h]; ok {
			return n
		}
		return fmt.Sprintf("%#x", h)
	}
	for i, e := range events {
		if i > 0 {
			b.WriteByte(' ')
		}
		switch e.Kind {
		case kv.Stored:
			parts := make([]string, len(e.BlockHashes))
			for j, x := range e.BlockHashes {
				parts[j] = name(x)
			}
			parent := "-"
			if e.HasParent {
				parent = name(e.ParentBlockHash)
			}
			fmt.Fprintf(&b, "Stored[%s parent=%s]", strings.Join(parts, ","), parent)
		case kv.Removed:
			parts := make([]string, len(e.BlockHashes))
			for j, x := range e.BlockHashes {
				parts[j] = name(x)
			}
			fmt.Fprintf(&b, "Removed[%s]", strings.Join(parts, ","))
		case kv.AllCleared:
			b.WriteString("AllCleared")
		}
	}
	return b.String()
}

// blockNames names the sequence hashes of a prompt's full blocks prefix+i.
func blockNames(t *testing.T, cfg *Config, prefix string, tokens []uint32, names map[uint64]string) {
	t.Helper()
	h, err := kv.NewHasher(cfg.HashAlgo, cfg.HashSeed, cfg.resolvedBlockSize())
	if err != nil {
		t.Fatal(err)
	}
	chain := h.NewChain("")
	n := len(tokens) / cfg.resolvedBlockSize()
	h.Extend(&chain, tokens, n)
	for i, x := range chain.Hashes() {
		names[x] = fmt.Sprintf("%s%d", prefix, i)
	}
}

const msTolerance = 2e-6 // ms: expected values written with 6 decimals, plus ns clock resolution

func approx(a, b, tol float64) bool { return math.Abs(a-b) <= tol }
