package engine

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/kv"
)

// TestSGLangRandomWorkloadsKeepTheRadixCacheConsistent runs 300 seeded
// random workloads (page sizes, pool sizes, every schedule policy, chunking,
// budgets, cancellations, shared prefixes) through the SGLang scheduler and
// checks after every pass that:
//   - every page is free, cached or held by exactly one running request;
//   - the protected tokens are exactly the union of the running requests'
//     locked prefixes (an oracle built from their tokens);
//   - a consumer replaying the published KV events holds exactly the
//     tree's resident pages;
//
// and at the end that every request ended with its planned tokens (or was
// cancelled or rejected), nothing is left running, and a rerun gives the
// same transcript.
func TestSGLangRandomWorkloadsKeepTheRadixCacheConsistent(t *testing.T) {
	for seed := range uint64(300) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel() // independent seeds
			a := runSGLangProperty(t, seed)
			if seed%6 != 0 {
				return // determinism is checked on every sixth seed
			}
			if b := runSGLangProperty(t, seed); !bytes.Equal(a, b) {
				t.Fatal("same seed, different transcripts")
			}
		})
	}
}

func runSGLangProperty(t *testing.T, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 0x5917))
	cfg := DefaultConfig()
	cfg.Type = EngineSGLang
	cfg.BlockSize = []int{1, 1, 2, 4, 16}[r.IntN(5)]
	cfg.NumBlocks = (60 + r.IntN(200)) / cfg.BlockSize
	cfg.MaxModelLen = 1 << 20
	cfg.Timing = TimingConfig{Model: TimingFixed, FixedPrefillMs: 20, FixedDecodeMs: 10}
	cfg.EnablePrefixCaching = r.IntN(8) != 0
	cfg.SGLang = SGLangConfig{
		Policy:                   []SGLangPolicy{SGLangFCFS, SGLangLPM, SGLangDFSWeight, SGLangLOF, SGLangRandom}[r.IntN(5)],
		MaxPrefillTokens:         16 + r.IntN(100),
		ChunkedPrefillSize:       []int{-1, cfg.BlockSize * (1 + r.IntN(8)), 0}[r.IntN(3)],
		MaxRunningRequests:       1 + r.IntN(8),
		ClipMaxNewTokens:         1 + r.IntN(40),
		ScheduleConservativeness: 0.1 + r.Float64()*2,
		RandomSeed:               seed,
	}
	var transcript bytes.Buffer
	resident := map[uint64]bool{}
	core, err := NewCore(cfg, CoreOptions{KVSink: sinkFunc(func(b KVEventBatch) {
		for _, e := range b.Events {
			fmt.Fprintf(&transcript, "%v %v %v\n", e.Kind, e.BlockHashes, e.ParentBlockHash)
			switch e.Kind {
			case kv.Stored:
				for _, h := range e.BlockHashes {
					if resident[h] {
						t.Fatalf("page %#x stored twice", h)
					}
					resident[h] = true
				}
			case kv.Removed:
				for _, h := range e.BlockHashes {
					if !resident[h] {
						t.Fatalf("unknown page %#x removed", h)
					}
					delete(resident, h)
				}
			case kv.AllCleared:
				clear(resident)
			}
		}
	})})
	if err != nil {
		t.Fatal(err)
	}
	sim := NewSimulator(core)
	var shared [][]uint32
	for i := range 1 + r.IntN(3) {
		shared = append(shared, seqTokens(10_000*(i+1), r.IntN(40)))
	}
	var reqs []*Request
	cancelled := map[uint64]bool{}
	for i := range 10 + r.IntN(30) {
		prompt := slices.Clone(shared[r.IntN(len(shared))])
		prompt = append(prompt, seqTokens(100_000+i*1000, 1+r.IntN(30))...)
		req := &Request{ID: uint64(i + 1), Prompt: prompt, PlannedOutput: seqTokens(500+i, r.IntN(40)), Out: NewOutput()}
		req.MaxOutputTokens = len(req.PlannedOutput) + r.IntN(20)
		reqs = append(reqs, req)
		sim.SubmitAt(time.Duration(r.IntN(400))*time.Millisecond, req)
		if r.IntN(8) == 0 {
			sim.CancelAt(time.Duration(r.IntN(600))*time.Millisecond, req.ID)
			cancelled[req.ID] = true
		}
	}
	m := core.kv.radix
	sim.AfterPass = func(pass int) {
		if err := core.checkRadixAccounting(); err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
		// The protected tokens are the union of the locked prefixes.
		// A prefix is identified by a running 64-bit mix of its tokens,
		// built page by page.
		locked := map[uint64]bool{}
		for _, s := range core.running {
			var id uint64 = 14695981039346656037
			for i, tok := range s.tokens[:s.radix.prefixLen] {
				id = (id ^ uint64(tok)) * 1099511628211
				if (i+1)%m.pageSize == 0 {
					locked[id] = true
				}
			}
		}
		if got, want := m.tree.ProtectedTokens(), len(locked)*m.pageSize; got != want {
			t.Fatalf("pass %d: %d protected tokens, the running requests lock %d", pass, got, want)
		}
		tree := m.tree.ResidentHashes()
		if len(tree) != len(resident) {
			t.Fatalf("pass %d: the event consumer holds %d pages, the tree %d", pass, len(resident), len(tree))
		}
		for _, h := range tree {
			if !resident[h] {
				t.Fatalf("pass %d: resident page %#x never announced", pass, h)
			}
		}
		fmt.Fprintf(&transcript, "pass %d t=%v running=%d waiting=%d ratio=%.9f\n",
			pass, sim.Now(), core.NumRunning(), core.NumWaiting(), core.NewTokenRatio())
	}
	sim.Run(100_000)
	if !core.Idle() {
		t.Fatalf("stuck with %d running and %d waiting after %d passes", core.NumRunning(), core.NumWaiting(), sim.Passes())
	}
	for _, req := range reqs {
		res := drain(req)
		if res.fin == nil {
			t.Fatalf("request %d never finished", req.ID)
		}
		if res.fin.Reason == FinishAbort && !cancelled[req.ID] && res.fin.Rejection == nil {
			t.Fatalf("request %d aborted: %+v", req.ID, res.fin)
		}
		if res.fin.Reason != FinishAbort && !slices.Equal(res.tokens, req.PlannedOutput[:len(res.tokens)]) {
			t.Fatalf("request %d tokens %v, planned %v", req.ID, res.tokens, req.PlannedOutput)
		}
		fmt.Fprintf(&transcript, "req %d %v %v\n", req.ID, res.times, res.fin.Reason)
	}
	return transcript.Bytes()
}
