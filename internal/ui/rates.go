package ui

import (
	"sync"
	"time"
)

// Throughput is measured over the last rateWindow of wall time in
// rateBuckets buckets, so that the rate a page shows follows a change
// within a few seconds and reading it costs a fixed amount of work.
const (
	rateWindow  = 5 * time.Second
	rateBuckets = 50
	rateBucket  = rateWindow / rateBuckets
)

// rates counts a worker's delivered output tokens and finished requests:
// totals since its first start and per-bucket counts for the recent rate.
// Safe for concurrent use (one writer per rank).
type rates struct {
	mu       sync.Mutex
	first    time.Time // first count; the window is shorter before it is full
	buckets  [rateBuckets]rateCount
	tokens   int64
	finished int64
}

type rateCount struct {
	slot             int64 // bucket number since the epoch
	tokens, finished int64
}

// add counts tokens and finished requests at now.
func (r *rates) add(now time.Time, tokens, finished int) {
	if tokens == 0 && finished == 0 {
		return
	}
	slot := now.UnixNano() / int64(rateBucket)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.first.IsZero() {
		r.first = now
	}
	b := &r.buckets[slot%rateBuckets]
	if b.slot != slot {
		*b = rateCount{slot: slot}
	}
	b.tokens += int64(tokens)
	b.finished += int64(finished)
	r.tokens += int64(tokens)
	r.finished += int64(finished)
}

// Rate is a worker's throughput at one instant.
type Rate struct {
	// TokensPerSec and RequestsPerSec are output tokens delivered and
	// requests finished per second over the last 5 s (or since the first
	// one, when that is shorter but at least 1 s).
	TokensPerSec, RequestsPerSec float64
	// OutputTokens and Finished are the totals since the first start.
	OutputTokens, Finished int64
}

// at returns the rate at now.
func (r *rates) at(now time.Time) Rate {
	slot := now.UnixNano() / int64(rateBucket)
	r.mu.Lock()
	defer r.mu.Unlock()
	out := Rate{OutputTokens: r.tokens, Finished: r.finished}
	if r.first.IsZero() {
		return out
	}
	var tokens, finished int64
	for _, b := range r.buckets {
		if b.slot > slot-rateBuckets && b.slot <= slot {
			tokens += b.tokens
			finished += b.finished
		}
	}
	window := min(rateWindow, max(time.Second, now.Sub(r.first))).Seconds()
	out.TokensPerSec = float64(tokens) / window
	out.RequestsPerSec = float64(finished) / window
	return out
}
