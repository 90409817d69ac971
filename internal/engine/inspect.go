package engine

import (
	"time"

	"github.com/mocker-server/mocker-server/internal/kv"
)

// Inspector watches one rank closely enough to draw it (the live UI of
// internal/ui). Unlike Observer, which gets aggregates, it sees each
// sequence: what every pass did to it, and on request a full picture of the
// queues and the block pool. Its methods are called on the engine goroutine
// and must be quick and non-blocking; values passed are valid only during
// the call. A nil Inspector costs the engine nothing.
type Inspector interface {
	// InspectPass is called after every pass, and after cancellations or
	// submissions applied outside a pass, with what each sequence did.
	InspectPass(t *PassTrace)
	// WantState is asked after each InspectPass; when it returns true the
	// engine fills a StateSnapshot and calls InspectState. Building one
	// walks the whole pool, so the inspector throttles it (by its own
	// clock: the engine's may be virtual).
	WantState() bool
	// InspectState receives the rank's state.
	InspectState(s *StateSnapshot)
}

// PassTrace is what one pass (IsPass) or one batch of out-of-pass mailbox
// messages did on one rank.
type PassTrace struct {
	Rank   int
	IsPass bool
	// Start and Deadline bound the pass as modeled; End is the engine clock
	// reading when it was delivered (later than Deadline when the machine
	// lags). Modeled is Deadline − Start. All three are zero outside a
	// pass.
	Start, Deadline, End time.Time
	Modeled              time.Duration
	// Submitted lists the requests queued since the previous trace.
	Submitted []SubmittedRecord
	// Steps has one entry per sequence scheduled in the pass.
	Steps []SeqStep
	// Preempted lists the sequences preempted in the pass.
	Preempted []uint64
	// Finished lists the sequences that finished (completion or abort)
	// since the previous trace, Rejected those refused at the head of the
	// waiting queue.
	Finished []FinishedRecord
	Rejected []uint64
	// KVEvents are the pass's KV event records (nil when none).
	KVEvents []kv.Event
}

// SubmittedRecord describes a newly queued request.
type SubmittedRecord struct {
	ID            uint64
	Label         string
	Arrival       time.Time
	PromptTokens  int
	PlannedTokens int
}

// SeqStep is what one pass did for one sequence.
type SeqStep struct {
	ID uint64
	// Admitted is true when the pass admitted the sequence from the waiting
	// queue (its first admission or a resumption after preemption).
	Admitted bool
	// PrefillTokens are prompt (or recomputed) tokens computed this pass;
	// CachedTokens are prefix-cache hits found at this admission.
	PrefillTokens, CachedTokens int
	// Tokens is the number of output tokens the pass delivered to it: one,
	// or with speculative decoding the accepted drafts plus one.
	Tokens int
	// NewHashes are the sequence hashes of the blocks this pass filled, so
	// that an inspector can tell which request a Stored event came from.
	NewHashes []uint64
}

// StateSnapshot is the whole visible state of one rank at one instant.
type StateSnapshot struct {
	Rank int
	Time time.Time
	// Blocks reads the pool's blocks during the call (the pool itself, so
	// that a snapshot copies nothing the inspector does not keep). Nil for
	// the SGLang engine type, whose KV lives in a radix tree of pages
	// rather than the block pool.
	Blocks BlockReader
	// Running and Waiting are the queues in scheduling order.
	Running, Waiting []SeqState
	// Sleep is the rank's sleep state (sleep.go).
	Sleep SleepStatus
}

// BlockReader reads a block pool without changing it; *kv.Pool is one.
type BlockReader interface {
	NumBlocks() int
	// RefCount is the block's number of references (0: free).
	RefCount(b kv.BlockID) int
	// BlockHash is the sequence hash the block is cached under, if any.
	BlockHash(b kv.BlockID) (uint64, bool)
}

// SeqState is one queued or running sequence's progress.
type SeqState struct {
	ID                             uint64
	PromptTokens, ComputedTokens   int
	GeneratedTokens, PlannedTokens int
	Preemptions                    int
	Preempted                      bool
	// Blocks is the sequence's block table (block ids in order) and
	// Hashes the sequence hashes of its full blocks, one per block from
	// the first; a block past len(Hashes) is not full yet.
	Blocks []kv.BlockID
	Hashes []uint64
}

// inspection is a Core's scratch for its Inspector.
type inspection struct {
	trace     PassTrace
	state     StateSnapshot
	stale     bool // a trace went out without a state snapshot after it
	events    []kv.Event
	submitted []SubmittedRecord
	preempted []uint64
	rejected  []uint64
	steps     []SeqStep
}

// noteSubmit records a newly queued request for the next trace.
func (c *Core) noteSubmit(s *sequence) {
	if c.inspector == nil {
		return
	}
	c.insp.submitted = append(c.insp.submitted, SubmittedRecord{ID: s.req.ID, Label: s.req.Label,
		Arrival: s.arrival, PromptTokens: s.numPromptTokens, PlannedTokens: len(s.planned)})
}

// notePreempt records a preemption for the next trace.
func (c *Core) notePreempt(s *sequence) {
	if c.inspector != nil {
		c.insp.preempted = append(c.insp.preempted, s.req.ID)
	}
}

// noteReject records a queued request refused at the queue head.
func (c *Core) noteReject(s *sequence) {
	if c.inspector != nil {
		c.insp.rejected = append(c.insp.rejected, s.req.ID)
	}
}

// captureSteps records, at the start of EndPass, what the pass scheduled
// for each running sequence; token delivery then marks its step.
func (c *Core) captureSteps() {
	if c.inspector == nil {
		return
	}
	steps := c.insp.steps[:0]
	for _, s := range c.running {
		if !s.scheduled {
			continue
		}
		st := SeqStep{ID: s.req.ID, Admitted: s.passAdmitted}
		if s.passPrefill {
			st.PrefillTokens = s.passTokens
		}
		if s.passAdmitted {
			st.CachedTokens = s.passPrefix
		}
		if s.passTokens > 0 {
			hashes := s.kv.chain.Hashes()
			to := min(s.kv.numCachedBlocks, len(hashes))
			if from := max(0, (s.numComputedTokens-s.passTokens)/c.cfg.BlockSize); from < to {
				st.NewHashes = hashes[from:to]
			}
		}
		steps = append(steps, st)
		s.inspStep = int32(len(steps))
	}
	c.insp.steps = steps
}

// noteTokens records that sequence s got n tokens in this pass.
func (c *Core) noteTokens(s *sequence, n int) {
	if s.inspStep > 0 {
		c.insp.steps[s.inspStep-1].Tokens += n
	}
}

// noteEvents keeps the KV events of the current pass for the next trace.
func (c *Core) noteEvents(events []kv.Event) {
	if c.inspector != nil {
		c.insp.events = append(c.insp.events, events...)
	}
}

// inspect hands the inspector the trace of what happened since the last
// one and, if it wants, the state.
func (c *Core) inspect(isPass bool, end time.Time) {
	if c.inspector == nil {
		return
	}
	in := &c.insp
	t := &in.trace
	*t = PassTrace{Rank: c.rank, IsPass: isPass, End: end, Submitted: in.submitted, Preempted: in.preempted,
		Rejected: in.rejected, Finished: c.report.Finished, KVEvents: in.events}
	if isPass {
		t.Start, t.Modeled = c.cur.start, c.cur.duration
		t.Deadline = t.Start.Add(t.Modeled)
		t.Steps = in.steps
	} else if len(t.Submitted)+len(t.Finished)+len(t.Preempted)+len(t.Rejected)+len(t.KVEvents) == 0 {
		return
	}
	c.inspector.InspectPass(t)
	clear(in.events)
	in.events, in.submitted, in.preempted, in.rejected = in.events[:0], in.submitted[:0], in.preempted[:0], in.rejected[:0]
	in.steps = in.steps[:0]
	in.stale = true
	if c.inspector.WantState() {
		c.InspectState(end)
	}
}

// InspectState hands the inspector a state snapshot now if the last trace
// went out without one (the engine's loop calls it before it idles, so the
// final state of a burst is always shown).
func (c *Core) InspectState(now time.Time) {
	if c.inspector == nil || !c.insp.stale {
		return
	}
	c.insp.stale = false
	st := &c.insp.state
	st.Rank, st.Time, st.Blocks, st.Sleep = c.rank, now, nil, c.sleep.status
	if c.kv.radix == nil {
		st.Blocks = c.kv.pool
	}
	st.Running = st.Running[:0]
	for _, s := range c.running {
		st.Running = append(st.Running, seqState(s))
	}
	st.Waiting = st.Waiting[:0]
	for i := range c.waiting.Len() {
		st.Waiting = append(st.Waiting, seqState(c.waiting.At(i)))
	}
	c.inspector.InspectState(st)
}

func seqState(s *sequence) SeqState {
	hashes := s.kv.chain.Hashes()
	if n := s.kv.numCachedBlocks; len(hashes) > n {
		hashes = hashes[:n]
	}
	return SeqState{ID: s.req.ID, PromptTokens: s.numPromptTokens, ComputedTokens: s.numComputedTokens,
		GeneratedTokens: s.numGeneratedTokens, PlannedTokens: len(s.planned), Preemptions: s.numPreemptions,
		Preempted: s.status == statusPreempted, Blocks: s.kv.blocks, Hashes: hashes}
}
