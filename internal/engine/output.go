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
	// group, when set, is told instead of notify (see OutputGroup);
	// listed records that the output is on the group's ready list since
	// its last Drain, so a pass lists it once however many items it gets.
	group  *OutputGroup
	listed bool
	// owner is the group consumer's state for this output (JoinGroup).
	owner any
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
	o.listed = false
	o.mu.Unlock()
	return items
}

// push appends one item and wakes the reader. With wakes set, a group
// the output makes ready is recorded there instead of signalled, so a pass
// signals each group once, after its last delivery.
func (o *Output) push(it OutputItem, wakes *wakeList) {
	if o.notify == nil {
		o.items = append(o.items, it)
		return
	}
	o.mu.Lock()
	o.items = append(o.items, it)
	o.wake(wakes)
}

// pushRun appends the items one pass delivered to one sequence at once, so
// a reader never drains part of a pass (a speculative pass delivers
// several tokens that are streamed as one chunk).
func (o *Output) pushRun(items []OutputItem, wakes *wakeList) {
	if len(items) == 1 {
		o.push(items[0], wakes)
		return
	}
	if o.notify == nil {
		o.items = append(o.items, items...)
		return
	}
	o.mu.Lock()
	o.items = append(o.items, items...)
	o.wake(wakes)
}

// wake unlocks o.mu, which the caller holds after queueing items, and
// tells the reader: the output's group the first time since the last
// Drain (deferred to wakes when given), else its own Ready channel.
func (o *Output) wake(wakes *wakeList) {
	if g := o.group; g != nil {
		first := !o.listed
		o.listed = true
		o.mu.Unlock()
		if first && g.add(o) {
			if wakes != nil {
				*wakes = append(*wakes, g)
			} else {
				g.signal()
			}
		}
		return
	}
	o.mu.Unlock()
	select {
	case o.notify <- struct{}{}:
	default:
	}
}
