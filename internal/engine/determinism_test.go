package engine

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/kv"
)

// transcript runs a seeded mixed workload in virtual time and renders every
// event batch, FPM snapshot and output item, in order, as text.
func transcript(t *testing.T, seed uint64) []byte {
	var buf bytes.Buffer
	cfg := DefaultConfig()
	cfg.BlockSize = 4
	cfg.NumBlocks = 40
	cfg.MaxNumBatchedTokens = 32
	core, err := NewCore(cfg, CoreOptions{
		KVSink: sinkFunc(func(b KVEventBatch) {
			fmt.Fprintf(&buf, "batch t=%d\n", b.Time.Sub(VirtualEpoch))
			for _, e := range b.Events {
				fmt.Fprintf(&buf, "  %v %v %v/%v %v\n", e.Kind, e.BlockHashes, e.ParentBlockHash, e.HasParent, e.TokenIDs)
			}
		}),
		FPMSink: fpmFunc(func(s ForwardPassSnapshot) { fmt.Fprintf(&buf, "fpm %+v\n", s) }),
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
		r := &Request{ID: uint64(i + 1), Prompt: prompt, PlannedOutput: seqTokens(9000+i, rng.IntN(30)), Out: NewOutput()}
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
					fmt.Fprintf(&buf, "  final %+v\n", it.Finished)
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
