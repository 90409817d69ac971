package engine

import (
	"context"
	"sort"
	"time"
)

// Simulator drives one Core in virtual time: before each
// pass it applies every scheduled arrival and cancellation whose time has
// come; when the core is idle it jumps to the next one; each pass advances
// the clock by its modeled duration. It never sleeps.
type Simulator struct {
	Core  *Core
	Clock *VirtualClock
	// BeforePass, when set, is called before each pass with the 1-based
	// index of the pass about to run; it may Submit or Cancel on Core.
	BeforePass func(pass int)
	// AfterPass, when set, is called after each pass's EndPass.
	AfterPass func(pass int)

	actions    []simAction
	seq        int
	passes     int
	lastBefore int
}

type simAction struct {
	at     time.Duration
	seq    int
	req    *Request // submit when non-nil
	cancel uint64
}

// NewSimulator returns a simulator for core starting at virtual time 0.
func NewSimulator(core *Core) *Simulator {
	return &Simulator{Core: core, Clock: &VirtualClock{}}
}

// SubmitAt schedules r to arrive at virtual time at (its ArrivalTime is set).
func (s *Simulator) SubmitAt(at time.Duration, r *Request) {
	r.ArrivalTime = VirtualEpoch.Add(at)
	s.add(simAction{at: at, req: r})
}

// CancelAt schedules a cancellation of request id at virtual time at.
func (s *Simulator) CancelAt(at time.Duration, id uint64) {
	s.add(simAction{at: at, cancel: id})
}

func (s *Simulator) add(a simAction) {
	s.seq++
	a.seq = s.seq
	i := sort.Search(len(s.actions), func(i int) bool {
		return s.actions[i].at > a.at
	})
	s.actions = append(s.actions, simAction{})
	copy(s.actions[i+1:], s.actions[i:])
	s.actions[i] = a
}

// Passes returns the number of passes run so far.
func (s *Simulator) Passes() int { return s.passes }

// Now returns the virtual time since the epoch.
func (s *Simulator) Now() time.Duration { return s.Clock.Since() }

// applyDue applies every action due at or before now.
func (s *Simulator) applyDue() {
	now := s.Clock.Now()
	for len(s.actions) > 0 && s.actions[0].at <= s.Clock.Since() {
		a := s.actions[0]
		s.actions = s.actions[1:]
		if a.req != nil {
			s.Core.Submit(a.req)
		} else {
			s.Core.Cancel(a.cancel, now)
		}
	}
	s.Core.AdvanceTimers(now)
	s.Core.FlushReport()
}

// nextWake returns the virtual instant of the next scheduled action or
// engine timer (a transfer completing, a hold expiring).
func (s *Simulator) nextWake() (time.Time, bool) {
	t, ok := s.Core.NextTimer()
	if len(s.actions) > 0 {
		at := VirtualEpoch.Add(s.actions[0].at)
		if !ok || at.Before(t) {
			t, ok = at, true
		}
	}
	return t, ok
}

// Run simulates until no work and no scheduled action remain, or maxPasses
// passes have run (0 = no limit). It returns the number of passes run.
func (s *Simulator) Run(maxPasses int) int {
	for maxPasses == 0 || s.passes < maxPasses {
		if !s.Step() {
			break
		}
	}
	return s.passes
}

// Step runs one pass (jumping over idle time first). It reports false when
// there is nothing left to do.
func (s *Simulator) Step() bool {
	for {
		s.applyDue()
		if s.BeforePass != nil && s.lastBefore != s.passes+1 {
			s.lastBefore = s.passes + 1
			s.BeforePass(s.passes + 1)
			s.Core.FlushReport()
		}
		if !s.Core.Idle() {
			break
		}
		wake, ok := s.nextWake()
		if !ok {
			return false
		}
		_ = s.Clock.SleepUntil(context.Background(), wake)
	}
	start := s.Clock.Now()
	d := s.Core.BeginPass(start)
	if !s.Core.PassActive() {
		// Nothing could be scheduled: wait for the next action or timer.
		wake, ok := s.nextWake()
		if !ok {
			return false
		}
		_ = s.Clock.SleepUntil(context.Background(), wake)
		return true
	}
	s.passes++
	deadline := start.Add(d)
	_ = s.Clock.SleepUntil(context.Background(), deadline)
	s.Core.EndPass(deadline, deadline)
	if s.AfterPass != nil {
		s.AfterPass(s.passes)
	}
	return true
}
