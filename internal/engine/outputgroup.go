package engine

import "sync"

// OutputGroup lets one goroutine serve many outputs. An output that joined
// a group does not signal its own Ready channel: the first item it gets
// after a Drain puts it on the group's ready list, and the group's Ready
// channel fires when that list stops being empty. A consumer serving
// thousands of streams then wakes once per pass, not once per stream, and
// the engine pays a list append instead of a goroutine wake-up per token.
type OutputGroup struct {
	mu     sync.Mutex
	ready  []*Output
	notify chan struct{}
}

// NewOutputGroup returns an empty group.
func NewOutputGroup() *OutputGroup {
	return &OutputGroup{notify: make(chan struct{}, 1)}
}

// Ready returns a channel that has a value whenever Take may return
// outputs.
func (g *OutputGroup) Ready() <-chan struct{} { return g.notify }

// Take appends the outputs that got items since the last Take to dst and
// empties the list, in the order the outputs became ready (the engine's
// delivery order). An output can be listed although its items were
// drained already, or after it left the group: Drain then returns nothing
// new, which the consumer must allow for.
func (g *OutputGroup) Take(dst []*Output) []*Output {
	g.mu.Lock()
	dst = append(dst, g.ready...)
	clear(g.ready)
	g.ready = g.ready[:0]
	g.mu.Unlock()
	return dst
}

// add lists an output that got its first item since its last Drain; true
// means the list was empty, so the consumer must be signalled.
func (g *OutputGroup) add(o *Output) bool {
	g.mu.Lock()
	first := len(g.ready) == 0
	g.ready = append(g.ready, o)
	g.mu.Unlock()
	return first
}

func (g *OutputGroup) signal() {
	select {
	case g.notify <- struct{}{}:
	default:
	}
}

// wakeList holds the groups a pass made ready until the pass has
// delivered everything (Core.DeliverPass signals them).
type wakeList []*OutputGroup

// signal signals every listed group and empties the list.
func (w *wakeList) signal() {
	for i, g := range *w {
		g.signal()
		(*w)[i] = nil
	}
	*w = (*w)[:0]
}

// JoinGroup makes g the output's reader signal. owner is the consumer's
// state for the output, returned by Owner, so a consumer serving thousands
// of outputs finds it without a lookup. Items already queued list the
// output at once. An unsynced output (NewUnsyncedOutput) cannot join a
// group.
func (o *Output) JoinGroup(g *OutputGroup, owner any) {
	if o.notify == nil {
		panic("engine: an unsynced Output cannot join an OutputGroup")
	}
	o.mu.Lock()
	o.owner = owner
	o.switchTo(g)
}

// Owner returns the owner given to JoinGroup. It stays set after
// LeaveGroup, for a consumer that still finds the output listed. It is for
// the group's consumer, on outputs Take returned: JoinGroup set the owner
// before the output could be listed, and the group's lock orders that
// before Take, so no lock of the output's is needed.
func (o *Output) Owner() any { return o.owner }

// LeaveGroup makes the output signal its own Ready channel again, at once
// when items are queued. The group may still list it once.
func (o *Output) LeaveGroup() {
	o.mu.Lock()
	o.switchTo(nil)
}

// switchTo makes g (nil: the output's own Ready channel) the reader
// signal and unlocks o.mu, which the caller holds; items already queued
// wake the new reader at once.
func (o *Output) switchTo(g *OutputGroup) {
	o.group = g
	o.listed = false
	if len(o.items) > 0 {
		o.wake(nil)
		return
	}
	o.mu.Unlock()
}
