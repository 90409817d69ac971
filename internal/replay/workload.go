package replay

import (
	"sync"
	"sync/atomic"
	"time"
)

// Request is one request of a workload.
type Request struct {
	// Index is the request's position in the workload (0-based).
	Index int
	// Arrival is the virtual time at which the request arrives.
	Arrival time.Duration
	// Prompt holds the prompt token ids (at least one).
	Prompt []uint32
	// OutputTokens is the number of tokens to generate (at least one).
	OutputTokens int
	// Output, when set, is the planned output itself (OutputTokens long);
	// nil plans the workload's shared output sequence. A replay of what a
	// live server answered sets it, so that a later turn's prompt holds
	// the very tokens the earlier turn produced.
	Output []uint32
	// Follows is 1 + the index of the session turn this request continues
	// (0 for a first turn): its Prompt holds that turn's output at
	// FollowsOutputAt. An online driver waits for that answer and puts the
	// answered tokens there.
	Follows         int
	FollowsOutputAt int
}

// Source yields a workload's requests in arrival order. Next returns io.EOF
// after the last request; any other error ends the run.
type Source interface {
	Next() (Request, error)
}

// outputTokens returns the planned output token ids of a request generating
// n tokens. Every request shares one sequence: output blocks still hash
// differently per request because block hashes chain over the prompt, and a
// multi-turn session can put the previous turn's output into the next
// prompt exactly (see Synthetic).
func outputTokens(n int) []uint32 {
	// Every request of a run asks, so the common case (long enough already)
	// is one atomic load; only growing takes the lock.
	if p := sharedOutput.Load(); p != nil && n <= len(*p) {
		return (*p)[:n:n]
	}
	sharedOutputMu.Lock()
	defer sharedOutputMu.Unlock()
	var cur []uint32
	if p := sharedOutput.Load(); p != nil {
		cur = *p
	}
	if n > len(cur) {
		grown := make([]uint32, max(n, 2*len(cur)))
		for i := range grown {
			grown[i] = outputToken(i)
		}
		cur = grown
		sharedOutput.Store(&cur)
	}
	return cur[:n:n]
}

// sharedOutput only grows, into a new array each time, so slices handed out
// earlier stay valid and immutable. sharedOutputMu serialises growing.
var (
	sharedOutputMu sync.Mutex
	sharedOutput   atomic.Pointer[[]uint32]
)

// outputToken is the i-th token of the shared output sequence.
func outputToken(i int) uint32 { return uint32(mix64(0x6f7574707574 ^ uint64(i))) }

// mix64 is SplitMix64's finaliser: a cheap bijective scrambler, so that
// distinct (id, position) pairs give distinct-looking token ids.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// blockTokens appends the n tokens of content block id: equal ids give equal
// tokens, which is how a trace's hash ids become shared prefixes.
func blockTokens(dst []uint32, id uint64, n int) []uint32 {
	base := mix64(id) << 16
	for j := 0; j < n; j++ {
		dst = append(dst, uint32(mix64(base^uint64(j))))
	}
	return dst
}
