package engine

import (
	"time"

	"github.com/mocker-server/mocker-server/internal/kv"
)

// Observer receives what metrics need from one DP rank. Its methods are
// called on the engine goroutine and must be quick and non-blocking; the
// values passed are only valid during the call.
type Observer interface {
	// ObserveGauges is called at pass start and after each pass's
	// completions with the rank's current state.
	ObserveGauges(g Gauges)
	// ObservePass is called at the end of every pass (and after
	// cancellations outside a pass) with what happened.
	ObservePass(r *PassReport)
}

// Gauges is the instantaneous state of one DP rank.
type Gauges struct {
	Rank int
	// Running is the length of the running list.
	Running int
	// Waiting is the waiting queue length (never scheduled + preempted)
	// less WaitingDeferred.
	Waiting int
	// WaitingDeferred counts waiting requests held back by a transient
	// constraint rather than capacity: those whose LoRA adapter cannot get a
	// slot while max_loras other adapters run and decode requests whose KV
	// is still on its way from their prefill worker.
	WaitingDeferred int
	// ActiveBlocks is the number of referenced KV blocks.
	ActiveBlocks int
	// HeldBlocks counts the blocks finished prefills hold for their
	// decode side (included in ActiveBlocks).
	HeldBlocks int
	// Sleep is the rank's sleep state (sleep.go); zero when awake.
	Sleep SleepStatus
	// KVUsage is ActiveBlocks / num_gpu_blocks.
	KVUsage float64
	// CachedBlocks counts the unreferenced blocks that still hold a
	// prefix-cache hash (evictable cache content).
	CachedBlocks int
	// MaxLoRAs is the configured adapter slots (0: LoRA disabled, and the
	// adapter lists are empty).
	MaxLoRAs int
	// RunningAdapters and WaitingAdapters name the adapters with at least
	// one running (resp. waiting) request, in the order the adapters
	// first got a live request. Valid only during the call.
	RunningAdapters, WaitingAdapters []string
	// GPUAdapters and CPUAdapters are the adapters loaded in GPU slots and
	// in the CPU cache (a GPU adapter is in both), least recently used
	// first. Valid only during the call.
	GPUAdapters, CPUAdapters []Adapter
	// Tiers holds the cached blocks per medium, the GPU pool first, then
	// each offload tier (nil without offload tiers). Valid only during the
	// call.
	Tiers []TierGauge
}

// TierGauge is the number of cached blocks one medium holds.
type TierGauge struct {
	Medium string
	Blocks int
}

// PassReport is what one pass (or one batch of out-of-pass cancellations)
// did on one DP rank. Pass-level fields are zero for a cancellation report.
type PassReport struct {
	Rank int
	// IsPass is false for a report that only carries cancellations.
	IsPass bool
	// Duration is the modeled pass duration after speedup.
	Duration time.Duration
	// IterationTokens is prompt tokens computed plus decode tokens scheduled.
	IterationTokens int
	// Preemptions counts preemptions in this pass.
	Preemptions int
	// PrefixQueries / PrefixHits are tokens looked up / hit at admissions.
	PrefixQueries, PrefixHits int
	// Rejected counts engine-level rejections.
	Rejected int
	// KVEvents counts KV events by kind (index kv.EventKind).
	KVEvents [kv.NumEventKinds]int
	// First holds one entry per sequence that emitted its first token (or
	// finished its prompt with no output) in this pass.
	First []FirstTokenRecord
	// GenerationTokens counts tokens emitted this pass.
	GenerationTokens int
	// ITL holds the inter-token gaps (seconds) of tokens emitted this pass.
	ITL []float64
	// Finished holds the sequences that finished (completion or abort).
	Finished []FinishedRecord
	// Spec holds the pass's speculative decoding figures (zero when off).
	Spec SpecDecodeStats
	// ExternalPrefixQueries / ExternalPrefixHits are tokens looked up in /
	// loaded back from the offload tiers at admissions (vLLM's connector
	// prefix cache); PrefixHits does not include them.
	ExternalPrefixQueries, ExternalPrefixHits int
	// TierHits counts blocks loaded back per offload tier this pass, in the
	// order of Gauges.Tiers (nil without tiers).
	TierHits []int
	// Transfers are the pass's block movements between media.
	Transfers []KVTransfer
	// Handoffs holds the disaggregated KV transfers into this rank that
	// completed.
	Handoffs []TransferRecord
}

// KVTransfer is one movement of KV blocks between media, in the shape of
// vLLM's offloading connector statistics: a type such as "GPU_to_CPU" or
// "CPU_to_GPU", the bytes moved and the modeled time it took.
type KVTransfer struct {
	Type    string
	Bytes   int64
	Seconds float64
}

// FirstTokenRecord describes a sequence's first output: it feeds the TTFT
// histogram and the prompt and cached-prompt token counters.
type FirstTokenRecord struct {
	PromptTokens int
	CachedTokens int
	// TTFT is first token − arrival in seconds; HasToken is false for a
	// zero-output sequence (which has no TTFT).
	TTFT     float64
	HasToken bool
}

// FinishedRecord is the timeline and sizes of one finished sequence.
type FinishedRecord struct {
	// ID is the Request.ID of the sequence, so that a driver holding many
	// requests (the offline replay) can tell whose timeline this is.
	ID             uint64
	Reason         FinishReason
	Arrival        time.Time
	FirstScheduled time.Time // zero if never scheduled
	FirstToken     time.Time // zero if no token
	LastToken      time.Time // zero if no token
	Finished       time.Time
	PromptTokens   int
	Generated      int
	CachedTokens   int
	Preemptions    int
}

// Welford accumulates a population variance in one pass over the data, for
// the variance fields of forward-pass snapshots.
// The zero value is an empty set.
type Welford struct {
	n    int
	mean float64
	m2   float64
	sum  int
}

// Add adds one observation.
func (w *Welford) Add(x int) {
	w.n++
	w.sum += x
	d := float64(x) - w.mean
	w.mean += d / float64(w.n)
	w.m2 += d * (float64(x) - w.mean)
}

// Count returns the number of observations.
func (w *Welford) Count() int { return w.n }

// Sum returns the sum of the observations.
func (w *Welford) Sum() int { return w.sum }

// Variance returns the population variance m2/n, 0 for an empty set.
func (w *Welford) Variance() float64 {
	if w.n == 0 {
		return 0
	}
	return w.m2 / float64(w.n)
}
