package engine

import (
	"sync"
	"time"
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
	Reason FinishReason
	// NumGenerated counts the tokens the sequence emitted.
	NumGenerated int
	// CachedTokens is the prefix-cache hit of the sequence's first admission.
	CachedTokens int
	// Rejection is set when the request could never run; its message is
	// the answer to give the client.
	Rejection *Rejection
	// HeldBlocks are the block ids a disaggregated prefill keeps for its
	// decode side (nil when nothing is held).
	HeldBlocks []int
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

// NewUnsyncedOutput returns an empty output queue for a caller that drives
// the engine and drains the queue from one goroutine (a simulation loop).
// It takes no lock and sends no wake-up per item — at millions of tokens a
// second those are most of the cost of delivering one — so it must never be
// shared between goroutines. Its Ready channel is nil: the driver knows when
// a pass has ended and drains then.
func NewUnsyncedOutput() *Output {
	return &Output{}
}

// Ready returns a channel that has a value whenever items may be queued
// (nil for an unsynced output).
func (o *Output) Ready() <-chan struct{} { return o.notify }

// Drain returns every queued item and empties the queue. dst becomes the
// queue's storage for the items pushed next, so a reader that passes its
// previous result back in allocates nothing in the steady state; the
// returned slice is the caller's until then.
func (o *Output) Drain(dst []OutputItem) []OutputItem {
	if o.notify == nil {
		items := o.items
		o.items = dst[:0]
		return items
	}
	o.mu.Lock()
	items := o.items
	o.items = dst[:0]
	o.mu.Unlock()
	return items
}

// push appends one item and wakes the reader.
func (o *Output) push(it OutputItem) {
	if o.notify == nil {
		o.items = append(o.items, it)
		return
	}
	o.mu.Lock()
	o.items = append(o.items, it)
	o.mu.Unlock()
	select {
	case o.notify <- struct{}{}:
	default:
	}
}

// pushRun appends the items one pass delivered to one sequence at once, so
// a reader never drains part of a pass (a speculative pass delivers
// several tokens that are streamed as one chunk).
func (o *Output) pushRun(items []OutputItem) {
	if len(items) == 1 {
		o.push(items[0])
		return
	}
	if o.notify == nil {
		o.items = append(o.items, items...)
		return
	}
	o.mu.Lock()
	o.items = append(o.items, items...)
	o.mu.Unlock()
	select {
	case o.notify <- struct{}{}:
	default:
	}
}
