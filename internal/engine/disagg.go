package engine

import (
	"time"

	"github.com/mocker-server/mocker-server/internal/kv"
)

// Disaggregated prefill/decode in the engine (docs/disaggregation.md). A
// prefill request (Request.Handoff) computes its prompt, emits one token and,
// when it finishes at its length limit, keeps its blocks: they stay
// referenced and unevictable until the decode side has pulled them
// (ReleaseHeld) or the hold times out. A decode request (Request.Remote)
// takes its blocks when the scheduler reaches it, pulls the prompt KV it
// lacks over the rank's transfer link, and then joins the running list with
// its prompt computed: its first pass only samples the first token.

// Handoff makes a request the prefill half of a disaggregated handoff.
type Handoff struct {
	// Timeout is the longest the blocks are held after the request
	// finishes (vLLM's VLLM_NIXL_ABORT_REQUEST_TIMEOUT, Dynamo's handoff
	// session timeout); 0 releases them at once.
	Timeout time.Duration
	// ReleaseAfter, when positive, releases the blocks this long after the
	// request finishes without waiting for ReleaseHeld: the modeled
	// transfer time of a handoff that has no side channel.
	ReleaseAfter time.Duration
	// OnReleased, when set, is called on the engine goroutine once the held
	// blocks are freed: pulled is true after ReleaseHeld, false after a
	// timeout or shutdown. It must not block.
	OnReleased func(pulled bool)
}

// RemoteKV makes a request the decode half of a disaggregated handoff: its
// prompt KV comes from a prefill worker instead of being computed.
type RemoteKV struct {
	// NoTransferTime skips the link: the KV is already here (the side
	// channel has modeled the transfer, as Dynamo's bootstrap does).
	NoTransferTime bool
	// OnPulled, when set, is called on the engine goroutine when the
	// transfer has completed (pulled true) or the request ended before it
	// did (false), so the caller can tell the prefill worker to free its
	// blocks. It must not block.
	OnPulled func(pulled bool)
}

// TransferRecord is one completed KV transfer into this rank.
type TransferRecord struct {
	// Tokens and Bytes moved; Blocks is the number of blocks they fill.
	Tokens int
	Bytes  int64
	Blocks int
	// Duration from the transfer's start to its completion.
	Duration time.Duration
}

// heldHandoff is a finished prefill's blocks kept for the decode side.
type heldHandoff struct {
	id       uint64
	blocks   []kv.BlockID
	deadline time.Time // released at the latest then
	pulledAt time.Time // zero, or the automatic release time (ReleaseAfter)
	handoff  *Handoff
	dropped  bool // released; removed from Core.holds at the next compaction
}

// statusArriving is a decode request whose blocks are allocated and whose
// KV is on its way over the link.
const statusArriving status = statusFinished + 1

// holdOnFinish keeps a finishing prefill's blocks instead of freeing them,
// as vLLM's NixlConnector does for a request finished at its length limit
// with do_remote_decode set. It returns the held block ids (nil when the
// blocks were not held).
func (c *Core) holdOnFinish(s *sequence, reason FinishReason, now time.Time) []int {
	h := s.req.Handoff
	if h == nil || reason != FinishLength || len(s.kv.blocks) == 0 || h.Timeout <= 0 {
		return nil
	}
	blocks := c.kv.hold(s)
	held := &heldHandoff{id: s.req.ID, blocks: blocks, deadline: now.Add(h.Timeout), handoff: h}
	if h.ReleaseAfter > 0 {
		held.pulledAt = now.Add(h.ReleaseAfter)
	}
	c.holds = append(c.holds, held)
	if c.holdByID == nil {
		c.holdByID = make(map[uint64]*heldHandoff)
	}
	c.holdByID[held.id] = held
	c.heldBlocks += len(blocks)
	ids := make([]int, len(blocks))
	for i, b := range blocks {
		ids[i] = int(b)
	}
	return ids
}

// HoldsHandoff reports whether the blocks of finished prefill request id
// are still held.
func (c *Core) HoldsHandoff(id uint64) bool {
	_, ok := c.holdByID[id]
	return ok
}

// ReleaseHeld frees the held blocks of prefill request id because the
// decode side has pulled them. It reports whether they were still held.
func (c *Core) ReleaseHeld(id uint64) bool {
	h, ok := c.holdByID[id]
	if ok {
		c.dropHold(h, true)
	}
	return ok
}

// dropHold frees hold h and tells its owner. It is O(1): h stays in
// c.holds, marked, until compactHolds, so a storm of releases is linear.
func (c *Core) dropHold(h *heldHandoff, pulled bool) {
	h.dropped = true
	delete(c.holdByID, h.id)
	c.heldBlocks -= len(h.blocks)
	c.kv.releaseHeld(h.blocks)
	c.gaugesDirty = true
	if h.handoff.OnReleased != nil {
		h.handoff.OnReleased(pulled)
	}
}

// compactHolds removes dropped holds from c.holds, keeping the order.
func (c *Core) compactHolds() {
	kept := c.holds[:0]
	for _, h := range c.holds {
		if !h.dropped {
			kept = append(kept, h)
		}
	}
	clear(c.holds[len(kept):])
	c.holds = kept
}

// NumHeldBlocks returns the blocks held for handoffs (a block shared by two
// holds counts twice).
func (c *Core) NumHeldBlocks() int { return c.heldBlocks }

// NumArriving returns the decode requests whose KV is in transit.
func (c *Core) NumArriving() int { return len(c.arriving) }

// NextTimer returns the next instant at which AdvanceTimers has work: a
// transfer completing or a hold expiring.
func (c *Core) NextTimer() (time.Time, bool) {
	next, ok := c.link.next()
	if due := c.sleep.status.WakeDue; !due.IsZero() && (!ok || due.Before(next)) {
		next, ok = due, true
	}
	for _, h := range c.holds {
		if h.dropped {
			continue
		}
		t := h.deadline
		if !h.pulledAt.IsZero() && h.pulledAt.Before(t) {
			t = h.pulledAt
		}
		if !ok || t.Before(next) {
			next, ok = t, true
		}
	}
	return next, ok
}

// AdvanceTimers carries out what is due at now: holds whose automatic
// release or timeout has come are freed, and decode requests whose KV has
// arrived join the waiting queue's front, ready to sample their first token.
func (c *Core) AdvanceTimers(now time.Time) {
	c.advanceWake(now)
	for _, h := range c.holds {
		if h.dropped {
			continue
		}
		if !h.pulledAt.IsZero() && !now.Before(h.pulledAt) {
			c.dropHold(h, true)
		} else if !now.Before(h.deadline) {
			c.dropHold(h, false)
		}
	}
	c.compactHolds()
	if len(c.link.flows) == 0 {
		return
	}
	c.arrived = c.link.complete(now, c.arrived[:0])
	for _, f := range c.arrived {
		s := f.seq
		c.removeArriving(s)
		c.report.Handoffs = append(c.report.Handoffs, TransferRecord{Tokens: f.tokens, Bytes: f.bytes,
			Blocks: ceilDiv(f.tokens, c.kv.blockSize), Duration: now.Sub(f.start)})
		// The pulled KV is computed: every prompt token but the last,
		// which the first pass recomputes to sample the first token, as
		// vLLM does. Its full blocks enter the prefix cache (BlockStored).
		s.numComputedTokens = s.numPromptTokens - 1
		s.remoteArrived = true
		c.kv.cacheFullBlocks(s)
		s.status = statusWaiting
		c.waiting.PushPreempted(s)
		if r := s.req.Remote; r.OnPulled != nil {
			r.OnPulled(true)
		}
	}
	clear(c.arrived)
}

// removeArriving drops s from the arriving list; false if it was not there.
func (c *Core) removeArriving(s *sequence) bool {
	for i, a := range c.arriving {
		if a == s {
			c.arriving = append(c.arriving[:i], c.arriving[i+1:]...)
			return true
		}
	}
	return false
}

// remoteOutcome is what admitRemote did with a waiting decode request.
type remoteOutcome uint8

const (
	remoteNotRemote remoteOutcome = iota // an ordinary request: admit as usual
	remoteStarted                        // blocks taken, transfer started
	remotePromoted                       // KV here: running, sampling its first token
	remoteMustWait                       // no room: the queue waits
)

// admitRemote handles a waiting decode request at the head of the queue: the
// first time it takes blocks for the whole prompt (local prefix hits
// included) and starts pulling the rest; once the KV has arrived it runs
// without consuming prompt budget.
func (c *Core) admitRemote(s *sequence, start time.Time, budget, claimed int) remoteOutcome {
	if s.req.Remote == nil || s.status != statusWaiting {
		return remoteNotRemote
	}
	if s.remoteArrived {
		if budget < 1 {
			return remoteMustWait
		}
		s.status = statusRunning
		s.numComputedTokens++
		s.scheduled = true
		s.passTokens = 1
		s.passCtx = s.numTokens()
		c.running = append(c.running, s)
		return remotePromoted
	}
	numHit, ok := c.kv.admitRemote(s, claimed)
	if !ok {
		return remoteMustWait
	}
	hitTokens := numHit * c.kv.blockSize
	tokens := s.numPromptTokens
	if c.cfg.Transfer.Mode == TransferDestinationMissing {
		tokens -= hitTokens
	}
	s.firstAdmitted = true
	s.firstScheduled = start
	s.cachedFirst = hitTokens
	c.report.PrefixQueries += s.numPromptTokens
	c.report.PrefixHits += hitTokens
	s.status = statusArriving
	c.arriving = append(c.arriving, s)
	f := &transferFlow{seq: s, tokens: tokens, bytes: int64(tokens) * c.cfg.Transfer.BytesPerToken}
	if s.req.Remote.NoTransferTime {
		f.bytes = 0
	}
	if f.bytes == 0 {
		f.tokens = 0
	}
	c.link.add(f, start)
	return remoteStarted
}

// abortDisaggregated ends every hold and transfer (shutdown).
func (c *Core) abortDisaggregated(now time.Time) {
	for _, h := range c.holds {
		if !h.dropped {
			c.dropHold(h, false)
		}
	}
	c.compactHolds()
	for len(c.arriving) > 0 {
		s := c.arriving[0]
		c.cancelArriving(s, now)
		c.finish(s, FinishAbort, now)
	}
}

// cancelArriving removes a decode request whose KV is in transit.
func (c *Core) cancelArriving(s *sequence, now time.Time) bool {
	if s.status != statusArriving || !c.removeArriving(s) {
		return false
	}
	c.link.remove(s, now)
	return true
}

// notifyRemoteEnded tells a decode request's owner that it ended before its
// KV arrived.
func notifyRemoteEnded(s *sequence) {
	if r := s.req.Remote; r != nil && r.OnPulled != nil && !s.remoteArrived {
		s.remoteArrived = true // notify once
		r.OnPulled(false)
	}
}
