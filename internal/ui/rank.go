package ui

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/kv"
)

// Block grid codes, one byte per block: free and never cached, free but
// cached (evictable), in use by 1..9+ references as 'A'..'I'. No code is a
// digit, so that run lengths can follow codes (appendRLE).
const (
	blockFree   = '.'
	blockCached = 'c'
	blockInUse  = 'A' // + references − 1, at most 'I'
	maxRefsCode = 9
)

// rankView is what the pages show of one DP rank. The engine goroutine
// writes it through the engine.Inspector methods; encoders read it.
type rankView struct {
	hub  *Hub
	rank int

	mu        sync.Mutex
	lastState time.Time // wall clock of the last state snapshot

	// The pool at the last state snapshot.
	grid        []byte // one code per block
	hashes      []uint64
	inUse       int
	cached      int
	running     []seqView
	waiting     []seqView // at most maxQueueShown
	numWaiting  int
	sleep       engine.SleepStatus
	parents     map[uint64]uint64 // sequence hash → parent hash, from Stored events
	passRing    ring[passPoint]
	feed        ring[feedLine]
	ttft, itl   ring[float64] // milliseconds
	e2e         ring[float64]
	passes      int64
	preemptions int64
	evictions   int64
	promptToks  int64 // prompt tokens of admissions
	cachedToks  int64 // of which prefix-cache hits

	ownerOf map[uint64]uint64 // scratch: hash → request id, per pass
}

// maxQueueShown bounds the queue rows sent to the page; the counts are exact.
const maxQueueShown = 200

type seqView struct {
	ID                                   uint64
	Prompt, Computed, Generated, Planned int
	Preemptions                          int
	Preempted                            bool
	Blocks                               []kv.BlockID
	Hashes                               []uint64
}

type passPoint struct {
	At                     time.Time
	Batch, Prefill, Decode int
	Modeled, Actual        float64 // milliseconds
}

// feedKind says what a feed line reports.
type feedKind string

const (
	feedPreempt feedKind = "preempt" // preemptions (and maybe evictions) of one pass
	feedEvict   feedKind = "evict"   // evictions only
	feedReset   feedKind = "reset"   // prefix cache reset
)

// feedLine is one line of the preemptions and evictions feed.
type feedLine struct {
	At   time.Time // wall clock
	Kind feedKind
	Text string
}

// maxFeedIDs bounds the request ids one feed line names.
const maxFeedIDs = 3

// passLine describes one pass's preemptions and evictions.
func (rv *rankView) passLine(t *engine.PassTrace, evicted int) feedLine {
	l := feedLine{At: time.Now(), Kind: feedEvict}
	var b strings.Builder
	if t.IsPass {
		fmt.Fprintf(&b, "pass %d · ", rv.passes)
	}
	if n := len(t.Preempted); n > 0 {
		l.Kind = feedPreempt
		fmt.Fprintf(&b, "preempted %d:", n)
		for i, id := range t.Preempted[:min(n, maxFeedIDs)] {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(" " + rv.hub.reqs.label(id))
		}
		if n > maxFeedIDs {
			fmt.Fprintf(&b, " and %d more", n-maxFeedIDs)
		}
		if evicted > 0 {
			b.WriteString(" · ")
		}
	}
	if evicted > 0 {
		fmt.Fprintf(&b, "evicted %d block%s", evicted, map[bool]string{true: "", false: "s"}[evicted == 1])
	}
	l.Text = b.String()
	return l
}

func newRankView(h *Hub, rank int) *rankView {
	return &rankView{hub: h, rank: rank, parents: map[uint64]uint64{}, ownerOf: map[uint64]uint64{},
		passRing: newRing[passPoint](passHistory), feed: newRing[feedLine](feedLength),
		ttft: newRing[float64](latencyWindow), itl: newRing[float64](latencyWindow), e2e: newRing[float64](latencyWindow)}
}

// InspectPass implements engine.Inspector.
func (rv *rankView) InspectPass(t *engine.PassTrace) {
	rv.hub.reqs.apply(rv.rank, t)
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if t.IsPass {
		rv.passes++
		p := passPoint{At: t.Start, Batch: len(t.Steps), Modeled: ms(t.Modeled), Actual: ms(t.End.Sub(t.Start))}
		for _, s := range t.Steps {
			if s.PrefillTokens > 0 {
				p.Prefill += s.PrefillTokens
			} else {
				p.Decode += s.Tokens // several with speculative decoding
			}
			if s.Admitted {
				rv.cachedToks += int64(s.CachedTokens)
				rv.promptToks += int64(s.CachedTokens + s.PrefillTokens)
			}
		}
		rv.passRing.push(p)
	}
	var evicted int
	for _, e := range t.KVEvents {
		switch e.Kind {
		case kv.Stored:
			parent, has := e.ParentBlockHash, e.HasParent
			for _, h := range e.BlockHashes {
				if has {
					rv.parents[h] = parent
				}
				parent, has = h, true
			}
		case kv.Removed:
			evicted += len(e.BlockHashes)
			for _, h := range e.BlockHashes {
				delete(rv.parents, h)
			}
		case kv.AllCleared:
			clear(rv.parents)
			rv.feed.push(feedLine{At: time.Now(), Kind: feedReset, Text: "prefix cache reset"})
		}
	}
	rv.evictions += int64(evicted)
	rv.preemptions += int64(len(t.Preempted))
	if len(t.Preempted) > 0 || evicted > 0 {
		// One line per pass: a pass that evicts thousands of blocks must
		// not push its preemptions out of the feed.
		rv.feed.push(rv.passLine(t, evicted))
	}
	var tokens int
	for _, s := range t.Steps {
		tokens += s.Tokens
	}
	rv.hub.rates.add(time.Now(), tokens, len(t.Finished))
	for _, f := range t.Finished {
		if f.FirstToken.IsZero() {
			continue
		}
		rv.ttft.push(ms(f.FirstToken.Sub(f.Arrival)))
		rv.e2e.push(ms(f.Finished.Sub(f.Arrival)))
		if f.Generated > 1 {
			rv.itl.push(ms(f.LastToken.Sub(f.FirstToken)) / float64(f.Generated-1))
		}
	}
	rv.hub.version.Add(1)
}

// WantState implements engine.Inspector: at most one snapshot per
// StateInterval of wall time.
func (rv *rankView) WantState() bool {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	return time.Since(rv.lastState) >= rv.hub.opts.StateInterval
}

// InspectState implements engine.Inspector.
func (rv *rankView) InspectState(s *engine.StateSnapshot) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	rv.lastState = time.Now()
	n := 0
	if s.Blocks != nil { // nil: SGLang's radix cache, no block grid
		n = s.Blocks.NumBlocks()
	}
	if cap(rv.grid) < n {
		rv.grid, rv.hashes = make([]byte, n), make([]uint64, n)
	}
	rv.grid, rv.hashes = rv.grid[:n], rv.hashes[:n]
	rv.inUse, rv.cached = 0, 0
	for i := range n {
		refs := s.Blocks.RefCount(kv.BlockID(i))
		hash, cached := s.Blocks.BlockHash(kv.BlockID(i))
		switch {
		case refs > 0:
			rv.grid[i] = byte(blockInUse + min(refs, maxRefsCode) - 1)
			rv.inUse++
		case cached:
			rv.grid[i] = blockCached
			rv.cached++
		default:
			rv.grid[i] = blockFree
		}
		rv.hashes[i] = hash // 0 when not cached
	}
	rv.running = copySeqs(rv.running, s.Running, true)
	rv.numWaiting = len(s.Waiting)
	rv.sleep = s.Sleep
	rv.waiting = copySeqs(rv.waiting, s.Waiting[:min(len(s.Waiting), maxQueueShown)], false)
	rv.hub.version.Add(1)
}

// copySeqs copies the engine's sequences into dst, reusing its slices;
// with blocks, also their block tables (the engine's are valid only
// during the call).
func copySeqs(dst []seqView, src []engine.SeqState, blocks bool) []seqView {
	if cap(dst) < len(src) {
		dst = append(dst[:cap(dst)], make([]seqView, len(src)-cap(dst))...)
	}
	dst = dst[:len(src)]
	for i, s := range src {
		v := &dst[i]
		v.ID, v.Prompt, v.Computed = s.ID, s.PromptTokens, s.ComputedTokens
		v.Generated, v.Planned, v.Preemptions, v.Preempted = s.GeneratedTokens, s.PlannedTokens, s.Preemptions, s.Preempted
		v.Blocks, v.Hashes = v.Blocks[:0], v.Hashes[:0]
		if blocks {
			v.Blocks = append(v.Blocks, s.Blocks...)
			v.Hashes = append(v.Hashes, s.Hashes...)
		}
	}
	return dst
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
