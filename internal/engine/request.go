package engine

import (
	"sync/atomic"
	"time"

	"github.com/mocker-server/mocker-server/internal/kv"
)

// Request is one engine sequence as submitted by a caller (one choice of an
// HTTP request, or one trace line of `replay`).
type Request struct {
	// ID is the engine-wide unique id (see NewRequestID); Cancel uses it.
	ID uint64
	// Prompt holds the prompt token ids (at least one).
	Prompt []uint32
	// PlannedOutput holds the token ids the sequence will generate unless
	// the context limit (or a TRT-LLM clamp) truncates it.
	PlannedOutput []uint32
	// FinishReason is the planned finish reason ("stop" or "length"); empty
	// means "length".
	FinishReason string
	// MaxOutputTokens is the requested limit (≥ len(PlannedOutput)); TRT-LLM
	// reserves blocks for it. 0 means len(PlannedOutput).
	MaxOutputTokens int
	// Priority orders the waiting queue under the priority policy (lower first).
	Priority int
	// ArrivalTime is when the request arrived, on the engine clock.
	ArrivalTime time.Time
	// CacheSalt isolates the request's prefix cache ("" = none).
	CacheSalt string
	// Choice is copied into every OutputItem of the sequence.
	Choice int
	// Out receives the sequence's tokens and terminal signal. Several
	// sequences may share one Output.
	Out *Output
}

var lastRequestID atomic.Uint64

// NewRequestID returns a process-wide unique engine request id.
func NewRequestID() uint64 { return lastRequestID.Add(1) }

// status is a sequence's scheduling state (engine.md §2).
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
	p       int // prompt tokens
	g       int // generated tokens
	c       int // computed tokens (KV computed or cached)

	maxOutput    int
	finishReason string
	status       status

	blocks       []kv.BlockID
	chain        kv.HashChain
	cachedBlocks int // leading blocks already hashed into the cache (hits or Cache calls)

	numPreemptions int
	firstAdmitted  bool
	cachedFirst    int // prefix-cache hit tokens of the first admission

	arrival        time.Time
	firstScheduled time.Time
	firstToken     time.Time
	lastToken      time.Time

	// Per-pass bookkeeping, valid between BeginPass and EndPass.
	passTokens  int  // tokens scheduled this pass (refunded on preemption)
	passPrefix  int  // KV available before this pass's computation (prefill batch only)
	passPrefill bool // computed prompt tokens this pass
	passCtx     int  // L at scheduling
	scheduled   bool // scheduled this pass
}

// L returns the sequence length: prompt plus generated tokens.
func (s *sequence) L() int { return s.p + s.g }

func ceilDiv(a, b int) int { return (a + b - 1) / b }
