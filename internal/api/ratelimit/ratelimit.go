// Package ratelimit is the provider-style request limits of the HTTP layer:
// concurrent requests, requests and tokens per minute (token buckets), the
// x-ratelimit-* headers and Retry-After.
package ratelimit

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/faults"
)

// Limiter enforces the provider-style limits: generation requests in
// flight (max_concurrent_requests), requests per minute (rpm) and tokens
// per minute (tpm, counting prompt tokens plus the requested output tokens
// the way OpenAI estimates a request). rpm and tpm are token buckets that
// start full and refill continuously, so a burst of a minute's quota is
// allowed and then the rate holds. Every generation response carries
// OpenAI's x-ratelimit-* headers for the limits that are set.
type Limiter struct {
	maxConcurrent int64
	active        atomic.Int64
	now           func() time.Time

	mu       sync.Mutex
	requests *bucket // nil = no rpm limit
	tokens   *bucket // nil = no tpm limit
}

func NewLimiter(maxConcurrent, rpm, tpm int, now func() time.Time) *Limiter {
	l := &Limiter{maxConcurrent: int64(maxConcurrent), now: now}
	t := now()
	if rpm > 0 {
		l.requests = newBucket(rpm, t)
	}
	if tpm > 0 {
		l.tokens = newBucket(tpm, t)
	}
	return l
}

// bucket is a token bucket holding up to a minute's quota.
type bucket struct {
	capacity float64
	level    float64
	perSec   float64
	last     time.Time
}

func newBucket(perMinute int, now time.Time) *bucket {
	c := float64(perMinute)
	return &bucket{capacity: c, level: c, perSec: c / 60, last: now}
}

func (b *bucket) refill(now time.Time) {
	if dt := now.Sub(b.last).Seconds(); dt > 0 {
		b.level = min(b.capacity, b.level+dt*b.perSec)
	}
	b.last = now
}

// wait is how long until n units are available (0 when they are).
func (b *bucket) wait(n float64) time.Duration {
	if b.level >= n {
		return 0
	}
	return time.Duration((n - b.level) / b.perSec * float64(time.Second))
}

// reset is how long until the bucket is full again (OpenAI's
// x-ratelimit-reset-*: "until the limit resets to its initial state").
func (b *bucket) reset() time.Duration {
	return time.Duration((b.capacity - b.level) / b.perSec * float64(time.Second))
}

// Admit applies the limits to a request of the given token cost and sets
// the x-ratelimit-* headers. It returns a release function to call when the
// request ends, or the 429 to answer (with Retry-After set) and the type of
// limit that was hit.
func (l *Limiter) Admit(h http.Header, cost int) (release func(), e *wire.APIError, hit string) {
	if l == nil {
		return func() {}, nil, ""
	}
	if l.maxConcurrent > 0 {
		if l.active.Add(1) > l.maxConcurrent {
			l.active.Add(-1)
			l.mu.Lock()
			now := l.now()
			for _, b := range []*bucket{l.requests, l.tokens} {
				if b != nil {
					b.refill(now)
				}
			}
			setLimitHeaders(h, "requests", l.requests)
			setLimitHeaders(h, "tokens", l.tokens)
			l.mu.Unlock()
			SetRetryAfter(h, time.Second)
			return nil, &wire.APIError{Status: http.StatusTooManyRequests, Type: wire.TypeRateLimit,
				Message: "Too many concurrent requests: limit " + strconv.FormatInt(l.maxConcurrent, 10) + "."}, faults.LimitConcurrency
		}
	}
	release = func() {}
	if l.maxConcurrent > 0 {
		release = func() { l.active.Add(-1) }
	}
	if l.requests == nil && l.tokens == nil {
		return release, nil, ""
	}
	now := l.now()
	l.mu.Lock()
	if l.tokens != nil && float64(cost) > l.tokens.capacity {
		e := l.tooLarge(h, cost, now)
		l.mu.Unlock()
		release()
		return nil, e, faults.LimitTPM
	}
	var waitReq, waitTok time.Duration
	if l.requests != nil {
		l.requests.refill(now)
		waitReq = l.requests.wait(1)
	}
	if l.tokens != nil {
		l.tokens.refill(now)
		waitTok = l.tokens.wait(float64(cost))
	}
	ok := waitReq == 0 && waitTok == 0
	if ok {
		if l.requests != nil {
			l.requests.level--
		}
		if l.tokens != nil {
			l.tokens.level -= float64(cost)
		}
	}
	setLimitHeaders(h, "requests", l.requests)
	setLimitHeaders(h, "tokens", l.tokens)
	l.mu.Unlock()
	if ok {
		return release, nil, ""
	}
	release()
	if waitReq >= waitTok {
		SetRetryAfter(h, waitReq)
		return nil, &wire.APIError{Status: http.StatusTooManyRequests, Type: wire.TypeRateLimit,
			Message: "Rate limit reached for requests: limit " + strconv.Itoa(int(l.requests.capacity)) + " per minute."}, faults.LimitRPM
	}
	SetRetryAfter(h, waitTok)
	msg := "Rate limit reached for tokens: limit " + strconv.Itoa(int(l.tokens.capacity)) +
		" per minute, requested " + strconv.Itoa(cost) + "."
	return nil, &wire.APIError{Status: http.StatusTooManyRequests, Type: wire.TypeRateLimit, Message: msg}, faults.LimitTPM
}

// tooLarge is the answer to a request whose cost exceeds the whole token
// budget: no wait makes it fit, so it gets no Retry-After, which would have
// a client retry for ever. Called with l.mu held.
func (l *Limiter) tooLarge(h http.Header, cost int, now time.Time) *wire.APIError {
	l.tokens.refill(now)
	if l.requests != nil {
		l.requests.refill(now)
	}
	setLimitHeaders(h, "requests", l.requests)
	setLimitHeaders(h, "tokens", l.tokens)
	return &wire.APIError{Status: http.StatusTooManyRequests, Type: wire.TypeRateLimit,
		Message: "Request too large for tokens per minute: limit " + strconv.Itoa(int(l.tokens.capacity)) +
			", requested " + strconv.Itoa(cost) + ". It can never succeed under this limit: " +
			"reduce the input or the output tokens (max_tokens)."}
}

// setLimitHeaders sets x-ratelimit-limit-<what>, -remaining-<what> and
// -reset-<what> the way OpenAI formats them (reset as "1s", "6m0s", "20ms").
func setLimitHeaders(h http.Header, what string, b *bucket) {
	if b == nil {
		return
	}
	h.Set("X-Ratelimit-Limit-"+what, strconv.Itoa(int(b.capacity)))
	h.Set("X-Ratelimit-Remaining-"+what, strconv.Itoa(max(int(b.level), 0)))
	h.Set("X-Ratelimit-Reset-"+what, b.reset().Round(time.Millisecond).String())
}

// SetRetryAfter sets Retry-After (whole seconds, rounded up, as HTTP
// requires) and retry-after-ms (the exact value, which OpenAI's SDKs
// prefer).
func SetRetryAfter(h http.Header, d time.Duration) {
	secs := int64(math.Ceil(d.Seconds()))
	h.Set("Retry-After", strconv.FormatInt(max(secs, 0), 10))
	h.Set("Retry-After-Ms", strconv.FormatInt(d.Milliseconds(), 10))
}
