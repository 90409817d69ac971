package engine

import (
	"sync"
	"testing"
	"time"
)

// ready reports whether ch has a value, without waiting.
func ready(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func tok(choice int, id uint32) OutputItem { return OutputItem{Choice: choice, Token: id} }

func TestOutputGroup_ListsAnOutputOnceUntilItIsDrained(t *testing.T) {
	g := NewOutputGroup()
	a, b := NewOutput(), NewOutput()
	a.JoinGroup(g, "a")
	b.JoinGroup(g, "b")
	if ready(g.Ready()) {
		t.Fatal("an empty group signalled")
	}
	a.push(tok(0, 1), nil)
	a.push(tok(0, 2), nil)
	b.push(tok(0, 3), nil)
	if !ready(g.Ready()) {
		t.Fatal("the group did not signal its first ready output")
	}
	if ready(a.Ready()) || ready(b.Ready()) {
		t.Fatal("an output in a group signalled its own channel")
	}
	got := g.Take(nil)
	if len(got) != 2 || got[0] != a || got[1] != b {
		t.Fatalf("Take = %v, want [a b] in the order they became ready", got)
	}
	if got[0].Owner() != "a" || got[1].Owner() != "b" {
		t.Fatalf("owners %v %v, want a b", got[0].Owner(), got[1].Owner())
	}
	if items := a.Drain(nil); len(items) != 2 {
		t.Fatalf("a drained %d items, want 2", len(items))
	}
	// b is not drained yet: more items do not list it again.
	b.push(tok(0, 4), nil)
	if got := g.Take(nil); len(got) != 0 {
		t.Fatalf("an undrained output was listed again: %v", got)
	}
	// a was drained: its next item lists it again.
	a.push(tok(0, 5), nil)
	if got := g.Take(nil); len(got) != 1 || got[0] != a {
		t.Fatalf("Take after a's drain = %v, want [a]", got)
	}
}

func TestOutputGroup_APassSignalsOnceAfterItsLastDelivery(t *testing.T) {
	g := NewOutputGroup()
	outs := []*Output{NewOutput(), NewOutput(), NewOutput()}
	for _, o := range outs {
		o.JoinGroup(g, nil)
	}
	var wakes wakeList
	for i, o := range outs {
		o.push(tok(0, uint32(i)), &wakes)
		if ready(g.Ready()) {
			t.Fatalf("the group signalled during the pass, after output %d", i)
		}
	}
	if len(wakes) != 1 || wakes[0] != g {
		t.Fatalf("wakes = %v, want the group once", wakes)
	}
	wakes.signal()
	if !ready(g.Ready()) {
		t.Fatal("the group was not signalled at the end of the pass")
	}
	if len(wakes) != 0 {
		t.Fatal("signal did not empty the list")
	}
	if got := g.Take(nil); len(got) != 3 {
		t.Fatalf("Take = %d outputs, want 3", len(got))
	}
}

func TestOutputGroup_JoinAndLeaveKeepQueuedItemsVisible(t *testing.T) {
	g := NewOutputGroup()
	o := NewOutput()
	o.push(tok(0, 1), nil)
	<-o.Ready() // the output's own signal before it joined
	o.JoinGroup(g, nil)
	if !ready(g.Ready()) {
		t.Fatal("joining with a queued item did not make the group ready")
	}
	if got := g.Take(nil); len(got) != 1 || got[0] != o {
		t.Fatalf("Take = %v, want [o]", got)
	}
	o.push(tok(0, 2), nil) // listed? no: not drained since it was listed
	o.LeaveGroup()
	if !ready(o.Ready()) {
		t.Fatal("leaving with queued items did not signal the output's own channel")
	}
	o.push(tok(0, 3), nil)
	if !ready(o.Ready()) {
		t.Fatal("an output that left its group does not signal its own channel")
	}
	if items := o.Drain(nil); len(items) != 3 {
		t.Fatalf("drained %d items, want 3", len(items))
	}
	o.LeaveGroup() // nothing queued: no signal
	if ready(o.Ready()) {
		t.Fatal("leaving with nothing queued signalled")
	}
}

// One goroutine pushes as the engine does while another serves the group
// as a delivery goroutine does: every item arrives once, in order.
func TestOutputGroup_ConcurrentPushAndTakeLoseNothing(t *testing.T) {
	const outputs, perOutput = 16, 2000
	g := NewOutputGroup()
	outs := make([]*Output, outputs)
	for i := range outs {
		outs[i] = NewOutput()
		outs[i].JoinGroup(g, nil)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		var wakes wakeList
		for n := range perOutput {
			for _, o := range outs {
				o.push(tok(0, uint32(n)), &wakes)
			}
			wakes.signal()
		}
	})
	next := make(map[*Output]uint32, outputs)
	var listed []*Output
	var items []OutputItem
	received := 0
	deadline := time.After(10 * time.Second)
	for received < outputs*perOutput {
		select {
		case <-g.Ready():
		case <-deadline:
			t.Fatalf("received %d of %d items", received, outputs*perOutput)
		}
		listed = g.Take(listed[:0])
		for _, o := range listed {
			items = o.Drain(items)
			for _, it := range items {
				if it.Token != next[o] {
					t.Fatalf("token %d, want %d", it.Token, next[o])
				}
				next[o]++
				received++
			}
		}
	}
	wg.Wait()
}
