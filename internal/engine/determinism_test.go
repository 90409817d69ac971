package engine

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/kv"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

// transcript runs a seeded mixed workload in virtual time and renders every
// event batch, FPM snapshot and output item, in order, as text.
func transcript(t *testing.T, seed uint64) []byte { return transcriptOf(t, seed, func(*Config) {}) }

// transcriptOf is transcript with the configuration adjusted by mutate.
func transcriptOf(t *testing.T, seed uint64, mutate func(*Config)) []byte {
	return transcriptWith(t, seed, mutate, NewOutput)
}

// transcriptWith is transcriptOf with each request's output queue made by
// newOutput.
func transcriptWith(t *testing.T, seed uint64, mutate func(*Config), newOutput func() *Output) []byte {
	var buf bytes.Buffer
	cfg := DefaultConfig()
	cfg.BlockSize = 4
	cfg.NumBlocks = 40
	cfg.MaxNumBatchedTokens = 32
	mutate(&cfg)
	core, err := NewCore(cfg, CoreOptions{
		KVSink: sinkFunc(func(b KVEventBatch) {
			fmt.Fprintf(&buf, "batch t=%d\n", b.Time.Sub(VirtualEpoch))
			for _, e := range b.Events {
				fmt.Fprintf(&buf, "  %v %v %v/%v %v\n", e.Kind, e.BlockHashes, e.ParentBlockHash, e.HasParent, e.TokenIDs)
			}
		}),
		FPMSink: fpmFunc(func(s ForwardPassSnapshot) {
			// NumHeldBlocks came after the golden digests and is always 0
			// here (no disaggregated requests): render without it.
			fmt.Fprintf(&buf, "fpm %s\n", strings.Replace(fmt.Sprintf("%+v", s), " NumHeldBlocks:0", "", 1))
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	sim := NewSimulator(core)
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	var reqs []*Request
	shared := seqTokens(7, 24)
	for i := 0; i < 60; i++ {
		prompt := append(append([]uint32(nil), shared[:4*rng.IntN(7)]...), seqTokens(100+i*40, 1+rng.IntN(30))...)
		r := &Request{ID: uint64(i + 1), Prompt: prompt, PlannedOutput: seqTokens(9000+i, rng.IntN(30)), Out: newOutput()}
		reqs = append(reqs, r)
		sim.SubmitAt(time.Duration(rng.IntN(500))*time.Millisecond, r)
		if rng.IntN(6) == 0 {
			sim.CancelAt(time.Duration(rng.IntN(600))*time.Millisecond, r.ID)
		}
	}
	sim.AfterPass = func(pass int) {
		for _, r := range reqs {
			for _, it := range r.Out.Drain(nil) {
				fmt.Fprintf(&buf, "out req=%d %+v t=%d\n", r.ID, it.Token, it.Time.Sub(VirtualEpoch))
				if it.Final {
					fmt.Fprintf(&buf, "  final reason=%s generated=%d cached=%d\n",
						it.Finished.Reason, it.Finished.NumGenerated, it.Finished.CachedTokens)
				}
			}
		}
	}
	sim.Run(0)
	_ = kv.Stored
	return buf.Bytes()
}

func TestSameSeedGivesIdenticalTranscript(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		a, b := transcript(t, seed), transcript(t, seed)
		if !bytes.Equal(a, b) {
			t.Fatalf("seed %d: transcripts differ (%d vs %d bytes)", seed, len(a), len(b))
		}
		if len(a) < 1000 {
			t.Fatalf("seed %d: transcript suspiciously short (%d bytes)", seed, len(a))
		}
	}
	if bytes.Equal(transcript(t, 1), transcript(t, 2)) {
		t.Fatal("different seeds gave identical transcripts")
	}
}

// updateGolden rewrites the golden files in testdata instead of comparing.
var updateGolden = flag.Bool("update", false, "rewrite the golden transcripts in testdata")

// The transcripts of the engine before its scheduler was split into a KV
// manager, claim policies and a scheduler value (commit 1975c70), kept as
// text in testdata/transcripts: the refactoring must not change one byte of
// what the engine schedules, publishes or delivers, for vLLM, TensorRT-LLM,
// and priority scheduling with FIFO preemption. (They were pinned as
// SHA-256 digests first; the files' digests are those digests.)
func TestTranscriptsMatchThePreRefactorEngine(t *testing.T) {
	variants := []struct {
		name   string
		mutate func(*Config)
	}{
		{"vllm", func(*Config) {}},
		{"trtllm", func(c *Config) { c.Type = EngineTRTLLM; c.NumBlocks = 60 }},
		{"priority-fifo", func(c *Config) { c.Scheduling = SchedulePriority; c.Preemption = PreemptFIFO; c.NumBlocks = 24 }},
	}
	for _, v := range variants {
		for seed := uint64(1); seed <= 3; seed++ {
			path := filepath.Join("testdata", "transcripts", fmt.Sprintf("%s-seed%d.txt", v.name, seed))
			testutil.Golden(t, path, transcriptOf(t, seed, v.mutate), *updateGolden)
		}
	}
}

// TestUnsyncedOutputDeliversTheSameItems checks that the lock-free output a
// single-goroutine driver uses delivers exactly what the shared one does.
func TestUnsyncedOutputDeliversTheSameItems(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		synced, unsynced := transcriptWith(t, seed, func(*Config) {}, NewOutput), transcriptWith(t, seed, func(*Config) {}, NewUnsyncedOutput)
		if !bytes.Equal(synced, unsynced) {
			t.Fatalf("seed %d: unsynced output transcript differs (%d vs %d bytes)", seed, len(synced), len(unsynced))
		}
	}
	if NewUnsyncedOutput().Ready() != nil {
		t.Fatal("an unsynced output has a Ready channel nobody would signal")
	}
}
