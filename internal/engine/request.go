package engine

import (
	"sync/atomic"
	"time"

	"github.com/mocker-server/mocker-server/internal/kv"
)

// Request is one engine sequence as submitted by a caller (one prompt ×
// choice of an HTTP request, or one request of a Simulator run).
type Request struct {
	// ID is the engine-wide unique id (see NewRequestID); Cancel uses it.
	ID uint64
	// Prompt holds the prompt token ids (at least one).
	Prompt []uint32
	// PlannedOutput holds the token ids the sequence will generate unless
	// the context limit (or a TRT-LLM clamp) truncates it.
	PlannedOutput []uint32
	// FinishReason is the planned finish reason (FinishStop or
	// FinishLength); empty means FinishLength.
	FinishReason FinishReason
	// MaxOutputTokens is the requested limit (≥ len(PlannedOutput)); TRT-LLM
	// reserves blocks for it. 0 means len(PlannedOutput).
	MaxOutputTokens int
	// Priority orders the waiting queue under the priority policy (lower first).
	Priority int
	// ArrivalTime is when the request arrived, on the engine clock.
	ArrivalTime time.Time
	// CacheSalt isolates the request's prefix cache ("" = none).
	CacheSalt string
	// Adapter is the LoRA adapter the request runs under (zero value: the
	// base model). It counts against Config.LoRA.MaxLoRAs and enters the
	// request's block hashes.
	Adapter kv.Adapter
	// MM are the prompt's multimodal items (sorted by offset): their
	// identifiers enter the hashes of the blocks their placeholder tokens
	// cover, and the scheduler runs their encoder before those tokens
	// (encoder.go). Nil for a text prompt.
	MM []kv.MMFeature
	// MMFLOPs are the encoder FLOPs of each item of MM (nil or 0: priced
	// per token), for a timing model that is an EncoderTimer;
	// PrecomputedEmbeds marks an item whose encoder already ran.
	MMFLOPs []float64
	// MMWork are the encoder passes of each item of MM as operators (nil
	// entries, or a nil slice: priced from MMFLOPs), for a timing model
	// that is an EncoderWorkTimer.
	MMWork []*EncoderWork
	// MMPads are the runs of prompt positions the SGLang engine type keys
	// its radix cache on by the items' pad values instead of their
	// placeholder tokens (SGLang's pad_input_tokens: kv.PadRadixKey at
	// Submit); the radix keys, page hashes and KV events' token ids then
	// carry the pad values. Other engine types key blocks by MM and ignore
	// MMPads.
	MMPads []kv.MMPad
	// Label is the caller's name for the request (the API's response id),
	// shown by inspectors; the engine does not use it.
	Label string
	// Choice is copied into every OutputItem of the sequence.
	Choice int
	// Out receives the sequence's tokens and terminal signal. Several
	// sequences may share one Output.
	Out *Output
	// Handoff makes the request the prefill half of a disaggregated
	// handoff, Remote the decode half (disagg.go); both nil normally.
	Handoff *Handoff
	Remote  *RemoteKV
}

// hashKeys returns what besides its tokens enters the request's block hashes.
func (r *Request) hashKeys() kv.Keys {
	k := kv.Keys{Salt: r.CacheSalt, Adapter: r.Adapter}
	if len(r.MM) > 0 {
		k.MM, k.PromptLen = r.MM, len(r.Prompt)
	}
	return k
}

var lastRequestID atomic.Uint64

// NewRequestID returns a process-wide unique engine request id.
func NewRequestID() uint64 { return lastRequestID.Add(1) }

// status is a sequence's scheduling state: waiting (never run), running,
// preempted (back in the waiting queue for recomputation) or finished.
type status uint8

const (
	statusWaiting status = iota
	statusRunning
	statusPreempted
	statusFinished
)

// sequence is the engine's state for one Request.
type sequence struct {
	req     *Request
	tokens  []uint32 // prompt followed by generated tokens
	planned []uint32

	numPromptTokens    int
	numGeneratedTokens int
	// numComputedTokens counts the leading tokens whose KV is computed or
	// was found in the prefix cache.
	numComputedTokens int

	maxOutput    int
	finishReason FinishReason
	status       status

	// kv is the sequence's block table; only the kvManager changes it.
	kv blockTable
	// radix is the sequence's share of the SGLang radix cache (SGLang only).
	radix radixSeq

	numPreemptions int
	firstAdmitted  bool
	// inQueue: in the waiting queue; queueDead: removed from it but still
	// in its slice until the queue compacts (queue.go).
	inQueue       bool
	queueDead     bool
	remoteArrived bool // a decode request's pulled KV is here (disagg.go)
	cachedFirst   int  // prefix-cache hit tokens of the first admission

	arrival        time.Time
	firstScheduled time.Time
	firstToken     time.Time
	lastToken      time.Time

	// encHeld are the identifiers of the multimodal items whose encoder
	// output the sequence holds in the encoder cache (encoder.go).
	encHeld []string

	// Per-pass bookkeeping, valid between BeginPass and EndPass.
	passTokens  int  // tokens scheduled this pass (refunded on preemption)
	passPrefix  int  // KV available before this pass's computation (prefill batch only)
	passPrefill bool // computed prompt tokens this pass
	passCtx     int  // numTokens() at scheduling
	scheduled   bool // scheduled this pass
	// passAdmitted: admitted from the waiting queue this pass; inspStep:
	// 1 + the index of this pass's step in the Inspector's trace (0: none).
	passAdmitted bool
	inspStep     int32

	// Speculative decoding (zero when off): the acceptance model's key, and
	// this pass's proposed and accepted draft tokens.
	specKey      uint64
	passDrafts   int
	passAccepted int
}

// numTokens returns the sequence length: prompt plus generated tokens.
func (s *sequence) numTokens() int { return s.numPromptTokens + s.numGeneratedTokens }

// prefillDone reports whether the prompt's KV is fully computed (a
// preempted sequence may still be recomputing its generated tokens).
func (s *sequence) prefillDone() bool { return s.numComputedTokens >= s.numPromptTokens }

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// Adapter is a LoRA adapter identity as requests carry it (the block
// pool's kv.Adapter, named here so that callers need not import kv).
type Adapter = kv.Adapter
