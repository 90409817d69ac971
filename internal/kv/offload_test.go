package kv

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// describeEvents renders events as "Removed[1]@GPU Stored[1]@CPU".
func describeEvents(events []Event) string {
	var parts []string
	for _, e := range events {
		parts = append(parts, fmt.Sprintf("%s%v@%s", strings.TrimPrefix(e.Kind.String(), "Block"), e.BlockHashes, e.MediumOrGPU()))
	}
	return strings.Join(parts, " ")
}

// A full CPU tier demotes its least recently used block to disk, a full
// disk tier drops its own, and a hash already held is only refreshed.
func TestTiersDemoteLeastRecentlyUsed(t *testing.T) {
	tiers, err := NewTiers([]TierSpec{{Medium: MediumCPU, NumBlocks: 2}, {Medium: MediumDisk, NumBlocks: 1}})
	if err != nil {
		t.Fatal(err)
	}
	var rec recorder
	tiers.rec, tiers.blockSize = &rec, 4
	steps := []struct {
		offload    uint64
		wantEvents string
		cpu, disk  []uint64 // most recently used first
	}{
		{1, "Stored[1]@CPU", []uint64{1}, nil},
		{2, "Stored[2]@CPU", []uint64{2, 1}, nil},
		{1, "", []uint64{1, 2}, nil}, // refreshed, no event
		{3, "Removed[2]@CPU Stored[2]@DISK Stored[3]@CPU", []uint64{3, 1}, []uint64{2}},
		{4, "Removed[1]@CPU Removed[2]@DISK Stored[1]@DISK Stored[4]@CPU", []uint64{4, 3}, []uint64{1}},
	}
	for i, s := range steps {
		tiers.offload(s.offload)
		if got := describeEvents(rec.take()); got != s.wantEvents {
			t.Errorf("step %d: events %q, want %q", i, got, s.wantEvents)
		}
		if got := tiers.Hashes(0); !slices.Equal(got, s.cpu) {
			t.Errorf("step %d: CPU %v, want %v", i, got, s.cpu)
		}
		if got := tiers.Hashes(1); !slices.Equal(got, s.disk) && len(got)+len(s.disk) > 0 {
			t.Errorf("step %d: disk %v, want %v", i, got, s.disk)
		}
	}
	// Lookup stops at the first hash no tier holds and names the fastest
	// tier of each; Hit refreshes without moving anything.
	if got := tiers.Lookup([]uint64{3, 1, 9, 4}, nil); !slices.Equal(got, []int{0, 1}) {
		t.Errorf("Lookup = %v, want [0 1]", got)
	}
	tiers.Hit([]uint64{3}, []int{0})
	if got := tiers.Hashes(0); !slices.Equal(got, []uint64{3, 4}) {
		t.Errorf("after Hit: CPU %v, want [3 4]", got)
	}
}

func TestNewTiersRejectsBadSpecs(t *testing.T) {
	for _, specs := range [][]TierSpec{
		{{Medium: MediumCPU, NumBlocks: 0}},
		{{Medium: MediumCPU, NumBlocks: 1}, {Medium: MediumCPU, NumBlocks: 1}},
		{{Medium: MediumGPU, NumBlocks: 1}},
		{{Medium: "", NumBlocks: 1}},
	} {
		if _, err := NewTiers(specs); err == nil {
			t.Errorf("NewTiers(%v) accepted", specs)
		}
	}
}

// Through the pool: only the last GPU copy of a hash moves down when it is
// evicted, and a reset empties the tiers.
func TestPoolOffloadsLastCopyOnEviction(t *testing.T) {
	p := NewPool(2, 4, true)
	tiers, err := NewTiers([]TierSpec{{Medium: MediumCPU, NumBlocks: 4}})
	if err != nil {
		t.Fatal(err)
	}
	p.SetLower(tiers)
	tokens := []uint32{1, 2, 3, 4}
	a, _ := p.Allocate(nil, 1)
	p.Cache(a, []uint64{10}, tokens, 0, 1, Keys{})
	b, _ := p.Allocate(nil, 1) // a second copy of hash 10
	p.Cache(b, []uint64{10}, tokens, 0, 1, Keys{})
	p.Release(a)
	p.Release(b)
	p.TakeEvents()
	d, _ := p.Allocate(nil, 1) // evicts one copy: not the last, nothing offloaded
	if ev := p.TakeEvents(); len(ev) != 0 || tiers.Len(0) != 0 {
		t.Fatalf("first eviction: events %s, CPU %d blocks", describeEvents(ev), tiers.Len(0))
	}
	c, _ := p.Allocate(nil, 1) // evicts the last copy
	if got := describeEvents(p.TakeEvents()); got != "Removed[10]@GPU Stored[10]@CPU" {
		t.Errorf("last-copy eviction events %q", got)
	}
	if ev := p.TakeEvents(); ev != nil {
		t.Errorf("events left: %v", ev)
	}
	if !tiers.Contains(0, 10) {
		t.Errorf("CPU tier lacks hash 10")
	}
	p.Release(c)
	p.Release(d)
	if !p.Reset() || tiers.Len(0) != 0 {
		t.Errorf("reset: CPU tier keeps %d blocks", tiers.Len(0))
	}
	if got := describeEvents(p.TakeEvents()); got != "AllBlocksCleared[]@GPU" {
		t.Errorf("reset events %q", got)
	}
}
