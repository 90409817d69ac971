package ui

import (
	"strconv"
	"sync"
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/kv"
)

// Per-request bounds: a long request keeps its first events and tokens and
// counts the rest.
const (
	maxTimelineEvents = 256
	maxTokenTimes     = 8192
	maxKVNotes        = 64
)

// Request states shown in the requests table.
type requestState string

const (
	stateWaiting   requestState = "waiting"
	stateRunning   requestState = "running"
	statePreempted requestState = "preempted"
	stateFinished  requestState = "finished"
	stateRejected  requestState = "rejected"
)

// eventKind names a timeline event.
type eventKind string

const (
	evArrive  eventKind = "arrive"
	evAdmit   eventKind = "admit"
	evPrefill eventKind = "prefill"
	evPreempt eventKind = "preempt"
	evFinish  eventKind = "finish"
	evReject  eventKind = "reject"
)

// requestRecord is one engine sequence's life as the requests page shows it.
type requestRecord struct {
	ID          uint64
	Label       string
	Rank        int
	Arrival     time.Time
	Prompt      int
	Planned     int
	Cached      int
	State       requestState
	Admitted    time.Time
	FirstToken  time.Time
	Finished    time.Time
	Generated   int
	Reason      string
	Preemptions int
	Events      []timelineEvent
	Tokens      []float32 // delivery times, ms after arrival
	KV          []kvNote
	Dropped     int // events, tokens or KV notes beyond the bounds
}

type timelineEvent struct {
	At   float64   `json:"t"` // ms after arrival
	Kind eventKind `json:"kind"`
	N    int       `json:"n,omitempty"`
	Text string    `json:"text,omitempty"`
}

type kvNote struct {
	At     float64  `json:"t"`
	Kind   string   `json:"kind"`
	Hashes []string `json:"hashes"`
}

// requestLog holds the live requests, a ring of finished ones (for the
// timelines) and a ring of the most recently queued ones, live or not (the
// requests table: newest first without sorting thousands of records).
type requestLog struct {
	mu       sync.Mutex
	live     map[uint64]*requestRecord
	done     ring[*requestRecord]
	recent   ring[*requestRecord]
	finished int64
}

func (l *requestLog) init(capacity int) {
	l.live = map[uint64]*requestRecord{}
	l.done = newRing[*requestRecord](capacity)
	l.recent = newRing[*requestRecord](maxRequestRows)
}

func (l *requestLog) finishedTotal() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.finished
}

// label returns a request's label, or its engine id as text.
func (l *requestLog) label(id uint64) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r := l.live[id]; r != nil && r.Label != "" {
		return r.Label
	}
	return strconv.FormatUint(id, 10)
}

func (r *requestRecord) since(t time.Time) float64 { return ms(t.Sub(r.Arrival)) }

func (r *requestRecord) addEvent(e timelineEvent) {
	if len(r.Events) >= maxTimelineEvents {
		r.Dropped++
		return
	}
	r.Events = append(r.Events, e)
}

// apply folds one pass trace into the log.
func (l *requestLog) apply(rank int, t *engine.PassTrace) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range t.Submitted {
		r := &requestRecord{ID: s.ID, Label: s.Label, Rank: rank, Arrival: s.Arrival,
			Prompt: s.PromptTokens, Planned: s.PlannedTokens, State: stateWaiting,
			// Sized once: growing it token by token leaves a trail of
			// garbage per request (1 KB or more at thousands of streams).
			Tokens: make([]float32, 0, min(s.PlannedTokens, maxTokenTimes))}
		r.addEvent(timelineEvent{At: 0, Kind: evArrive, N: s.PromptTokens})
		l.live[s.ID] = r
		l.recent.push(r)
	}
	var owners map[uint64]*requestRecord
	for _, s := range t.Steps {
		r := l.live[s.ID]
		if r == nil {
			continue
		}
		if s.Admitted {
			if r.Admitted.IsZero() {
				r.Admitted, r.Cached = t.Start, s.CachedTokens
			}
			r.State = stateRunning
			r.addEvent(timelineEvent{At: r.since(t.Start), Kind: evAdmit, N: s.CachedTokens})
		}
		if s.PrefillTokens > 0 {
			r.addEvent(timelineEvent{At: r.since(t.Start), Kind: evPrefill, N: s.PrefillTokens})
		}
		if s.Tokens > 0 {
			if r.Generated == 0 {
				r.FirstToken = t.Deadline
			}
			r.Generated += s.Tokens
			for range s.Tokens { // with speculative decoding, several at one deadline
				if len(r.Tokens) < maxTokenTimes {
					r.Tokens = append(r.Tokens, float32(r.since(t.Deadline)))
				} else {
					r.Dropped++
				}
			}
		}
		if len(s.NewHashes) > 0 {
			if owners == nil {
				owners = map[uint64]*requestRecord{}
			}
			for _, h := range s.NewHashes {
				owners[h] = r
			}
		}
	}
	for _, e := range t.KVEvents {
		if e.Kind != kv.Stored || owners == nil {
			continue
		}
		if r := owners[e.BlockHashes[0]]; r != nil {
			if len(r.KV) >= maxKVNotes {
				r.Dropped++
				continue
			}
			n := kvNote{At: r.since(t.Start), Kind: e.Kind.String()}
			for _, h := range e.BlockHashes[:min(len(e.BlockHashes), 8)] {
				n.Hashes = append(n.Hashes, hashText(h))
			}
			r.KV = append(r.KV, n)
		}
	}
	for _, id := range t.Preempted {
		if r := l.live[id]; r != nil {
			r.State = statePreempted
			r.Preemptions++
			r.addEvent(timelineEvent{At: r.since(t.Start), Kind: evPreempt})
		}
	}
	for _, f := range t.Finished {
		r := l.live[f.ID]
		if r == nil {
			continue
		}
		r.State, r.Reason, r.Finished = stateFinished, string(f.Reason), f.Finished
		r.Generated, r.Cached, r.Preemptions = f.Generated, f.CachedTokens, f.Preemptions
		r.addEvent(timelineEvent{At: r.since(f.Finished), Kind: evFinish, Text: string(f.Reason)})
		l.retire(r)
	}
	for _, id := range t.Rejected {
		if r := l.live[id]; r != nil {
			r.State, r.Reason = stateRejected, "rejected"
			r.addEvent(timelineEvent{At: r.since(r.Arrival), Kind: evReject})
			l.retire(r)
		}
	}
}

// retire moves a finished request from the live map to the ring.
func (l *requestLog) retire(r *requestRecord) {
	delete(l.live, r.ID)
	l.done.push(r)
	l.finished++
}

// find returns the records whose label or engine id is key: several
// sequences share a label when a request asks for n > 1 choices.
func (l *requestLog) find(key string) []requestDetail {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []requestDetail
	match := func(r *requestRecord) {
		if r != nil && (r.Label == key || strconv.FormatUint(r.ID, 10) == key) {
			out = append(out, r.detail())
		}
	}
	l.done.each(match)
	for _, r := range l.live {
		match(r)
	}
	return out
}

func hashText(h uint64) string { return strconv.FormatUint(h, 16) }
