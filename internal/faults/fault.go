// Package faults is mocker-server's failure injection: the kinds of fault a
// request can be given, the grammar of fault specifications and of failure
// scripts, the Injector that decides per request (scripted sequence,
// seeded random rate, or a per-request header) and the admin HTTP handler
// that changes the settings at run time. The HTTP layer (internal/api)
// carries the chosen fault out; this package only decides.
package faults

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Kind names one kind of injected failure.
type Kind string

// The fault kinds. None ("ok") means "serve the request normally".
const (
	None           Kind = "ok"
	RateLimit      Kind = "rate_limit"       // 429 with Retry-After
	ServerError    Kind = "server_error"     // 500
	Unavailable    Kind = "unavailable"      // 503 with Retry-After
	ContextLength  Kind = "context_length"   // 400 with vLLM's context-length message
	Timeout        Kind = "timeout"          // accept, never answer until the client gives up
	Stall          Kind = "stall"            // the stream pauses after N tokens, then resumes
	Truncate       Kind = "truncate"         // the stream ends after N tokens without [DONE]
	StreamError    Kind = "stream_error"     // an error event after N tokens, then [DONE]
	SlowFirstToken Kind = "slow_first_token" // extra delay before the request starts
	Reset          Kind = "reset"            // TCP reset after N tokens

	// llm-d-inference-sim's failure types that have no kind above
	// (docs/migrating-from-llm-d-inference-sim.md). They are not drawn by
	// default, so --failure-rate without --failure-types draws what it
	// always drew.
	InvalidAPIKey  Kind = "invalid_api_key" // 401, as a wrong API key is answered
	InvalidRequest Kind = "invalid_request" // 400 naming a missing parameter
	ModelNotFound  Kind = "model_not_found" // 404, as an unknown model is answered
)

// Kinds lists every fault kind except None, in documentation order.
var Kinds = []Kind{RateLimit, ServerError, Unavailable, ContextLength, Timeout, Stall,
	Truncate, StreamError, SlowFirstToken, Reset, InvalidAPIKey, InvalidRequest, ModelNotFound}

// drawnByDefault reports whether --failure-rate draws k when no
// --failure-types are given: every kind but timeout (a request that never
// ends is asked for by name) and llm-d-inference-sim's additions.
func (k Kind) drawnByDefault() bool {
	switch k {
	case Timeout, InvalidAPIKey, InvalidRequest, ModelNotFound:
		return false
	}
	return true
}

// Defaults of the fault parameters when a specification names none.
const (
	DefaultAfter      = 1
	DefaultStall      = time.Second
	DefaultFirstToken = time.Second
	DefaultRetryAfter = time.Second
)

// maxDuration bounds every duration parameter: a fault is a test tool, and
// an hour-long stall is a typo more often than an intention.
const maxDuration = time.Hour

// Fault is one decided fault with its parameters.
type Fault struct {
	Kind Kind
	// After is how many tokens are delivered before a mid-stream fault
	// (stall, truncate, stream_error, reset) strikes; 0 strikes right after
	// the response headers.
	After int
	// Duration is the stall length (stall), the extra delay (slow_first_token)
	// or the Retry-After value (rate_limit, unavailable).
	Duration time.Duration
}

// MidStream reports whether the fault strikes after After tokens of a
// response (rather than instead of the response).
func (f Fault) MidStream() bool {
	switch f.Kind {
	case Stall, Truncate, StreamError, Reset:
		return true
	}
	return false
}

// String renders the fault in the header form accepted by Parse.
func (f Fault) String() string {
	var b strings.Builder
	b.WriteString(string(f.Kind))
	if f.MidStream() {
		b.WriteString(";after=" + strconv.Itoa(f.After))
	}
	switch f.Kind {
	case Stall, SlowFirstToken:
		b.WriteString(";for=" + f.Duration.String())
	case RateLimit, Unavailable:
		b.WriteString(";retry_after=" + f.Duration.String())
	}
	return b.String()
}

// params says which parameters a kind accepts.
func (k Kind) params() (after, dur bool, durKey string) {
	switch k {
	case Stall:
		return true, true, "for"
	case Truncate, StreamError, Reset:
		return true, false, ""
	case SlowFirstToken:
		return false, true, "for"
	case RateLimit, Unavailable:
		return false, true, "retry_after"
	}
	return false, false, ""
}

func parseKind(s string) (Kind, error) {
	k := Kind(strings.ToLower(strings.ReplaceAll(s, "-", "_")))
	if k == None {
		return None, nil
	}
	for _, known := range Kinds {
		if k == known {
			return k, nil
		}
	}
	return "", fmt.Errorf("unknown fault %q (known: ok, %s)", s, kindList())
}

func kindList() string {
	names := make([]string, len(Kinds))
	for i, k := range Kinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

// Parse reads one fault specification: a kind followed by parameters, each
// either key=value or "key value", separated by spaces or semicolons.
//
//	truncate;after=5        truncate after 5
//	stall;after=3;for=250ms stall after 3 for 250ms
//	rate_limit;retry_after=2s
//
// after takes a token count; for and retry_after take a Go duration
// ("250ms", "2s"). Parameters a kind does not use are errors.
func Parse(spec string) (Fault, error) {
	fields := strings.FieldsFunc(spec, func(r rune) bool { return r == ';' || r == ' ' || r == '\t' })
	if len(fields) == 0 {
		return Fault{}, fmt.Errorf("empty fault specification")
	}
	kind, err := parseKind(fields[0])
	if err != nil {
		return Fault{}, err
	}
	f := Fault{Kind: kind}
	takesAfter, takesDur, durKey := kind.params()
	if takesAfter {
		f.After = DefaultAfter
	}
	switch kind {
	case Stall:
		f.Duration = DefaultStall
	case SlowFirstToken:
		f.Duration = DefaultFirstToken
	case RateLimit, Unavailable:
		f.Duration = DefaultRetryAfter
	}
	rest := fields[1:]
	for len(rest) > 0 {
		key, val, hasEq := strings.Cut(rest[0], "=")
		rest = rest[1:]
		if !hasEq {
			if len(rest) == 0 {
				return Fault{}, fmt.Errorf("fault %s: parameter %q has no value", kind, key)
			}
			val, rest = rest[0], rest[1:]
		}
		key = strings.ToLower(key)
		switch {
		case key == "after" && takesAfter:
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 || n > 1<<20 {
				return Fault{}, fmt.Errorf("fault %s: after must be a token count between 0 and %d, got %q", kind, 1<<20, val)
			}
			f.After = n
		case key == durKey && takesDur:
			d, err := time.ParseDuration(val)
			if err != nil || d < 0 || d > maxDuration {
				return Fault{}, fmt.Errorf("fault %s: %s must be a duration with a unit between 0 and 1h (e.g. 250ms, 2s), got %q", kind, key, val)
			}
			f.Duration = d
		default:
			return Fault{}, fmt.Errorf("fault %s takes no parameter %q%s", kind, key, paramHint(kind))
		}
	}
	return f, nil
}

func paramHint(k Kind) string {
	after, dur, key := k.params()
	var ps []string
	if after {
		ps = append(ps, "after")
	}
	if dur {
		ps = append(ps, key)
	}
	if len(ps) == 0 {
		return " (it takes none)"
	}
	return " (it takes: " + strings.Join(ps, ", ") + ")"
}

// Counter types of the provider-style limits (--max-concurrent-requests,
// --rpm, --tpm). They are real limits, not drawn faults, but are counted
// with the faults (mocker_injected_faults_total{type}) because a client
// under test sees them the same way: a 429 with Retry-After.
const (
	LimitConcurrency = "limit_concurrency"
	LimitRPM         = "limit_rpm"
	LimitTPM         = "limit_tpm"
)

// CounterTypes lists every type label of mocker_injected_faults_total.
func CounterTypes() []string {
	out := make([]string, 0, len(Kinds)+3)
	for _, k := range Kinds {
		out = append(out, string(k))
	}
	return append(out, LimitConcurrency, LimitRPM, LimitTPM)
}
