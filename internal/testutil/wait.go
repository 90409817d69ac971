package testutil

import (
	"testing"
	"time"
)

// pollStart and pollMax bound the back-off between two checks: short at
// first so fast conditions cost little, longer later so a slow one does not
// keep a shared core busy.
const (
	pollStart = 2 * time.Millisecond
	pollMax   = 50 * time.Millisecond
)

// WaitFor polls cond until it holds; after timeout it fails the test with
// "timed out after <timeout> waiting for <what>".
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	WaitUntil(t, timeout, func() string {
		if cond() {
			return ""
		}
		return "waiting for " + what
	})
}

// WaitUntil polls cond until it returns "" (satisfied); after timeout it
// fails the test with the last reason cond gave, so that the failure says
// what was still missing.
func WaitUntil(t testing.TB, timeout time.Duration, cond func() (why string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	delay := pollStart
	for {
		why := cond()
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v: %s", timeout, why)
		}
		time.Sleep(delay)
		delay = min(2*delay, pollMax)
	}
}
