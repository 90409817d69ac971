package engine

import (
	"slices"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/kv"
)

// encoderHarness: fixed 10 ms prefill passes, a 64-token budget, 1 ms of
// encoder time per item token.
func encoderHarness(t *testing.T, mutate func(c *Config)) *harness {
	return newHarness(t, func(c *Config) {
		c.Timing = TimingConfig{Model: TimingFixed, FixedPrefillMs: 10, FixedDecodeMs: 10}
		c.MaxNumBatchedTokens = 64
		c.BlockSize = 16
		c.MM = MMConfig{EncoderMsPerToken: 1}
		if mutate != nil {
			mutate(c)
		}
	})
}

func passDurations(h *harness) []time.Duration {
	var d []time.Duration
	for _, p := range h.obs.passes {
		if p.IsPass {
			d = append(d, p.Duration)
		}
	}
	return d
}

func passTokens(h *harness) []int {
	var n []int
	for _, p := range h.obs.passes {
		if p.IsPass {
			n = append(n, p.IterationTokens)
		}
	}
	return n
}

// A 100-token image at offset 10 of a 150-token prompt, budget 64: the
// first chunk reaches the image, so its encoder runs in pass 1 (100 ms on
// top of the 10 ms prefill) even though the chunk covers only part of it;
// the later chunks find it in the encoder cache. A second request with the
// same image after the first finished encodes nothing: the released entry
// is still cached.
func TestEncoderRunsOnceWhenTheChunkReachesTheItemAndIsCached(t *testing.T) {
	h := encoderHarness(t, nil)
	mm := []kv.MMFeature{{Identifier: "img", Offset: 10, Length: 100}}
	a := h.request(seqTokens(1, 150), seqTokens(1000, 1))
	a.MM = mm
	h.sim.SubmitAt(0, a)
	h.sim.Run(0)
	// The last chunk also samples the first token (10 ms of decode).
	want := []time.Duration{110 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond}
	if got := passDurations(h); !equalDurations(got, want) {
		t.Fatalf("passes %v, want %v", got, want)
	}
	if got := passTokens(h); got[0] != 64 || got[1] != 64 || got[2] != 22 {
		t.Errorf("chunks %v, want 64 64 22", got)
	}
	// The same image in another prompt (different text): no encoder time.
	b := h.request(seqTokens(5000, 150), seqTokens(1000, 1))
	b.MM = mm
	h.sim.SubmitAt(time.Second, b)
	h.sim.Run(0)
	if got, want := passDurations(h)[3:], []time.Duration{10 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond}; !equalDurations(got, want) {
		t.Errorf("repeat passes %v, want %v (no encoder)", got, want)
	}
}

// --disable-chunked-mm-input: a chunk that would end inside the image
// stops before it; the image's own chunk may still be cut by the budget
// when the image alone is larger (vLLM splits only what it must).
func TestDisableChunkedMMInputStopsTheChunkBeforeTheItem(t *testing.T) {
	h := encoderHarness(t, func(c *Config) { c.MM.DisableChunkedMMInput = true })
	r := h.request(seqTokens(1, 150), seqTokens(1000, 1))
	r.MM = []kv.MMFeature{{Identifier: "img", Offset: 10, Length: 80}}
	h.sim.SubmitAt(0, r)
	h.sim.Run(0)
	// Pass 1: 10 text tokens (the image would be cut at 64). Pass 2: from
	// the image on, 64 tokens with the image's 80 ms encoder: an 80-token
	// image cannot fit a 64-token chunk, so it is split there.
	got, want := passTokens(h), []int{10, 64, 64, 12}
	if len(got) != len(want) {
		t.Fatalf("chunks %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("chunks %v, want %v", got, want)
		}
	}
	if d := passDurations(h); d[0] != 10*time.Millisecond || d[1] != 90*time.Millisecond {
		t.Errorf("passes %v: want 10ms then 90ms (80 ms encoder)", d)
	}
	// Without the flag the first chunk takes 64 tokens, cutting the image.
	h = encoderHarness(t, nil)
	r = h.request(seqTokens(1, 150), seqTokens(1000, 1))
	r.MM = []kv.MMFeature{{Identifier: "img", Offset: 10, Length: 80}}
	h.sim.SubmitAt(0, r)
	h.sim.Run(0)
	if got := passTokens(h); got[0] != 64 {
		t.Errorf("chunked: chunks %v, want 64 first", got)
	}
}

// Data-parallel encoding (--mm-encoder-tp-mode data over 2 GPUs): two
// 40-token images in one pass cost the busiest GPU's 40 ms, not 80 (on
// top of 10 ms prefill and 10 ms for the first token).
func TestEncoderDataParallelSplitsThePassesItems(t *testing.T) {
	for _, tc := range []struct {
		dp   int
		want time.Duration
	}{{0, 100 * time.Millisecond}, {2, 60 * time.Millisecond}} {
		h := encoderHarness(t, func(c *Config) { c.MaxNumBatchedTokens = 256; c.MM.EncoderDataParallel = tc.dp })
		r := h.request(seqTokens(1, 100), seqTokens(1000, 1))
		r.MM = []kv.MMFeature{{Identifier: "a", Offset: 5, Length: 40}, {Identifier: "b", Offset: 50, Length: 40}}
		h.sim.SubmitAt(0, r)
		h.sim.Run(0)
		if d := passDurations(h)[0]; d != tc.want {
			t.Errorf("dp=%d: first pass %v, want %v", tc.dp, d, tc.want)
		}
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// fixedWithEncoder is 10 ms fixed passes whose encoder costs 1 ms per
// TFLOP per shard.
type fixedWithEncoder struct{ FixedTiming }

func (fixedWithEncoder) EncoderMs(flops float64, _, shards int) float64 {
	return flops / 1e12 / float64(shards)
}

// With an EncoderTimer (the hardware model) an item with known FLOPs is
// priced from them, sharded in weights mode; an item without FLOPs keeps
// the per-token cost.
func TestEncoderTimerPricesItemsByTheirFLOPs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		shards int
		flops  []float64
		want   time.Duration
	}{
		{"known FLOPs", 1, []float64{30e12}, 10*time.Millisecond + 10*time.Millisecond + 30*time.Millisecond},
		{"sharded over 2", 2, []float64{30e12}, 10*time.Millisecond + 10*time.Millisecond + 15*time.Millisecond},
		{"unknown: per token", 1, nil, 10*time.Millisecond + 10*time.Millisecond + 40*time.Millisecond},
	} {
		h := encoderHarness(t, func(c *Config) {
			c.MaxNumBatchedTokens = 256
			c.TimingModel = fixedWithEncoder{FixedTiming{Prefill: 10, Decode: 10}}
			c.MM.EncoderWeightShards = tc.shards
		})
		r := h.request(seqTokens(1, 100), seqTokens(1000, 1))
		r.MM = []kv.MMFeature{{Identifier: "a", Offset: 5, Length: 40}}
		r.MMFLOPs = tc.flops
		h.sim.SubmitAt(0, r)
		h.sim.Run(0)
		if d := passDurations(h)[0]; d != tc.want {
			t.Errorf("%s: first pass %v, want %v", tc.name, d, tc.want)
		}
	}
}

// An item sent as embeddings costs no encoder time; the image beside it
// in the same pass keeps its per-token cost (1 ms a token).
func TestPrecomputedEmbedsCostNoEncoderTime(t *testing.T) {
	first := func(flops []float64) time.Duration {
		h := encoderHarness(t, func(c *Config) { c.MaxNumBatchedTokens = 256 })
		r := h.request(seqTokens(1, 100), seqTokens(1000, 1))
		r.MM = []kv.MMFeature{{Identifier: "embeds", Offset: 5, Length: 40}, {Identifier: "image", Offset: 50, Length: 30}}
		r.MMFLOPs = flops
		h.sim.SubmitAt(0, r)
		h.sim.Run(0)
		return passDurations(h)[0]
	}
	both, embeds := first(nil), first([]float64{PrecomputedEmbeds, 0})
	if both-embeds != 40*time.Millisecond {
		t.Errorf("first pass %v with both items encoded, %v with the embeddings precomputed: want 40ms less", both, embeds)
	}
}

// forwardTimer prices a tower forward at 5 ms plus 1 ms per 100 rows, so
// running items together is cheaper than one by one (the fixed 5 ms).
type forwardTimer struct {
	FixedTiming
	calls *[]int // the items of each forward
}

func (f forwardTimer) EncoderWorkMs(ws []*EncoderWork, shards int) float64 {
	*f.calls = append(*f.calls, len(ws))
	rows := 0
	for _, w := range ws {
		rows += w.Rows
	}
	return (5 + float64(rows)/100) / float64(shards)
}

// With an EncoderWorkTimer, a pass's items with a known tower shape run
// in one forward (vLLM batches a modality's items through the tower); in
// data-parallel mode each GPU runs its share in one forward; an item sent
// as embeddings has no work and costs nothing.
func TestEncoderWorkTimerPricesThePassesItemsInOneForward(t *testing.T) {
	work := &EncoderWork{Rows: 400, SeqLen: 400, Layers: 1, Hidden: 8, MLP: 8, HeadDim: 8}
	for _, tc := range []struct {
		name     string
		dp       int
		flops    []float64
		want     time.Duration
		forwards []int // the items of each forward
	}{
		// 10 ms prefill + 10 ms first token + one forward of 800 rows (13 ms).
		{"weights", 0, []float64{1, 1}, 33 * time.Millisecond, []int{2}},
		// Two GPUs, a 400-row forward each (9 ms); the pass waits for one.
		{"data", 2, []float64{1, 1}, 29 * time.Millisecond, []int{1, 1}},
		// The embeddings cost nothing: a forward of the image alone.
		{"embeds", 0, []float64{PrecomputedEmbeds, 1}, 29 * time.Millisecond, []int{1}},
	} {
		var calls []int
		h := encoderHarness(t, func(c *Config) {
			c.MaxNumBatchedTokens = 256
			c.MM.EncoderDataParallel = tc.dp
			c.TimingModel = forwardTimer{FixedTiming{Prefill: 10, Decode: 10}, &calls}
		})
		r := h.request(seqTokens(1, 100), seqTokens(1000, 1))
		r.MM = []kv.MMFeature{{Identifier: "a", Offset: 5, Length: 40}, {Identifier: "b", Offset: 50, Length: 40}}
		r.MMFLOPs = tc.flops
		r.MMWork = []*EncoderWork{work, work}
		h.sim.SubmitAt(0, r)
		h.sim.Run(0)
		if d := passDurations(h)[0]; d != tc.want {
			t.Errorf("%s: first pass %v, want %v", tc.name, d, tc.want)
		}
		// In data mode each item is first priced alone, to deal the items
		// to the GPUs; then the forwards run.
		priced := 0
		if tc.dp > 1 {
			priced = len(tc.forwards)
		}
		if len(calls) < priced || !slices.Equal(calls[priced:], tc.forwards) {
			t.Errorf("%s: calls %v, want %d single-item prices then forwards %v", tc.name, calls, priced, tc.forwards)
		}
	}
}

// An EncoderWork counts its layers' projections and MLP over its rows,
// its attention over its sequences (windowed layers over their window)
// and its other GEMMs.
func TestEncoderWorkFLOPs(t *testing.T) {
	w := EncoderWork{Rows: 10, SeqLen: 5, Layers: 2, Hidden: 4, MLP: 8, HeadDim: 2, GEMMs: [][3]int{{3, 4, 5}}}
	want := 2.0*2*10*(4*16+2*4*8) + 2*4*10*5*4 + 2*3*4*5
	if got := w.FLOPs(); got != want {
		t.Errorf("FLOPs %v, want %v", got, want)
	}
	w.Window, w.FullLayers, w.GatedMLP = 2, 1, true
	want = 2.0*2*10*(4*16+3*4*8) + 1*4*10*5*4 + 1*4*10*2*4 + 2*3*4*5
	if got := w.FLOPs(); got != want {
		t.Errorf("windowed, gated: FLOPs %v, want %v", got, want)
	}
}
