package engine

import (
	"sync"
	"time"
)

// FinishReason values of a terminal output item (http-api.md §3.5).
const (
	FinishStop   = "stop"
	FinishLength = "length"
	FinishAbort  = "abort"
)

// OutputItem is one thing a sequence delivered: a token, or (Final) its
// terminal signal. Items are small values so queues hold them without
// per-token allocation.
type OutputItem struct {
	// Choice is the choice index the submitting caller gave the sequence.
	Choice int
	// Token is the generated token id (when !Final).
	Token uint32
	// Time is the modeled delivery time: the deadline of the pass that
	// produced the token (or finished the sequence).
	Time time.Time
	// Final marks the terminal item; Finished is valid only then.
	Final    bool
	Finished Finished
}

// Finished is a sequence's terminal signal.
type Finished struct {
	// Reason is "stop", "length" or "abort".
	Reason string
	// NumGenerated counts the tokens the sequence emitted.
	NumGenerated int
	// CachedTokens is the prefix-cache hit of the sequence's first admission.
	CachedTokens int
	// Rejected marks a request that could never run (engine.md §8).
	Rejected bool
}

// Output is an unbounded FIFO of output items shared by the sequences of one
// caller request. Pushing never blocks the engine: a slow reader only grows
// the queue. Readers wait on Ready and take everything queued with Drain.
type Output struct {
	mu     sync.Mutex
	items  []OutputItem
	notify chan struct{}
}

// NewOutput returns an empty output queue.
func NewOutput() *Output {
	return &Output{notify: make(chan struct{}, 1)}
}

// Ready returns a channel that has a value whenever items may be queued.
func (o *Output) Ready() <-chan struct{} { return o.notify }

// Drain appends every queued item to dst[:0] and empties the queue. The
// returned slice is the caller's; passing the previous result back in
// recycles its storage, so a steady-state reader allocates nothing.
func (o *Output) Drain(dst []OutputItem) []OutputItem {
	o.mu.Lock()
	items := o.items
	o.items = dst[:0]
	o.mu.Unlock()
	return items
}

// push appends one item and wakes the reader.
func (o *Output) push(it OutputItem) {
	o.mu.Lock()
	o.items = append(o.items, it)
	o.mu.Unlock()
	select {
	case o.notify <- struct{}{}:
	default:
	}
}
