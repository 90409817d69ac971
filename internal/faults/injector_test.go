package faults

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func mustNew(t *testing.T, s Settings, o Options) *Injector {
	t.Helper()
	in, err := New(s, o)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// failing returns the arrival numbers of the first n decisions that
// injected a fault.
func failing(t *testing.T, in *Injector, n int) []uint64 {
	t.Helper()
	var out []uint64
	for range n {
		d, err := in.Decide("")
		if err != nil {
			t.Fatal(err)
		}
		if d.Injected() {
			out = append(out, d.Index)
		}
	}
	return out
}

func TestInjector_SeededRateFailsTheSameRequestsOnEveryRun(t *testing.T) {
	s := Settings{FailureRate: 0.3, FailureTypes: []string{"rate_limit", "server_error"}}
	a := failing(t, mustNew(t, s, Options{Seed: 7}), 10000)
	b := failing(t, mustNew(t, s, Options{Seed: 7}), 10000)
	c := failing(t, mustNew(t, s, Options{Seed: 8}), 10000)
	if !slices.Equal(a, b) {
		t.Error("two runs with the same seed failed different requests")
	}
	if slices.Equal(a, c) {
		t.Error("a different seed failed the same requests")
	}
	if got := float64(len(a)) / 10000; math.Abs(got-0.3) > 0.02 {
		t.Errorf("failure fraction %.3f, want 0.3 ± 0.02", got)
	}
}

func TestInjector_RateDrawsEveryListedTypeAndDefaultsToAllButTimeout(t *testing.T) {
	seen := map[Kind]int{}
	in := mustNew(t, Settings{FailureRate: 1}, Options{Seed: 1})
	for range 5000 {
		d, _ := in.Decide("")
		seen[d.Fault.Kind]++
	}
	// Every kind but timeout and llm-d-inference-sim's three.
	for _, k := range Kinds {
		if drawn := seen[k] > 0; drawn != k.drawnByDefault() {
			t.Errorf("default types drawn: %v; %s drawn = %v", seen, k, drawn)
		}
	}
	if len(seen) != len(Kinds)-4 {
		t.Errorf("default types drawn: %v, want %d kinds", seen, len(Kinds)-4)
	}
	in = mustNew(t, Settings{FailureRate: 1, FailureTypes: []string{"truncate;after=5", "timeout"}}, Options{})
	for range 200 {
		d, _ := in.Decide("")
		if d.Fault != (Fault{Kind: Truncate, After: 5}) && d.Fault != (Fault{Kind: Timeout}) {
			t.Fatalf("drew %+v", d.Fault)
		}
	}
}

func TestInjector_HeaderOnlyWhenAllowedAndBeforeTheScript(t *testing.T) {
	in := mustNew(t, Settings{Script: "then server_error"}, Options{})
	d, err := in.Decide("truncate;after=5")
	if err != nil || !d.HeaderIgnored || d.Fault.Kind != ServerError || d.Source != FromScript {
		t.Errorf("header not allowed: %+v, %v", d, err)
	}
	in = mustNew(t, Settings{Script: "then server_error", AllowHeaders: true}, Options{})
	d, err = in.Decide("truncate;after=5")
	if err != nil || d.Fault != (Fault{Kind: Truncate, After: 5}) || d.Source != FromHeader {
		t.Errorf("header allowed: %+v, %v", d, err)
	}
	if _, err := in.Decide("truncate;after=x"); err == nil || !strings.Contains(err.Error(), HeaderName) {
		t.Errorf("malformed allowed header: %v", err)
	}
	if d, _ := in.Decide(""); d.Fault.Kind != ServerError || d.Index != 3 {
		t.Errorf("no header: %+v", d)
	}
}

func TestInjector_UpdateRestartsArrivalCountAndClock(t *testing.T) {
	now := time.Unix(1000, 0)
	in := mustNew(t, Settings{}, Options{Now: func() time.Time { return now }})
	failing(t, in, 5)
	now = now.Add(time.Minute)
	if err := in.Update(Settings{Script: "first 1: rate_limit; from 10s: unavailable"}); err != nil {
		t.Fatal(err)
	}
	if d, _ := in.Decide(""); d.Fault.Kind != RateLimit || d.Index != 1 {
		t.Errorf("after update: %+v", d)
	}
	if d, _ := in.Decide(""); d.Injected() {
		t.Errorf("second request before 10s: %+v", d)
	}
	now = now.Add(10 * time.Second)
	if d, _ := in.Decide(""); d.Fault.Kind != Unavailable {
		t.Errorf("after 10s: %+v", d)
	}
	if err := in.Update(Settings{FailureRate: 2}); err == nil {
		t.Error("rate 2 accepted")
	}
	if got := in.Settings(); got.Script != "first 1: rate_limit; from 10s: unavailable" {
		t.Errorf("a failed update changed the settings: %+v", got)
	}
}

func TestInjector_ReadsScriptFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "faults.txt")
	if err := os.WriteFile(path, []byte("# retry test\nfirst 2: rate_limit\nthen ok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	in := mustNew(t, Settings{Script: "@" + path}, Options{})
	if got := failing(t, in, 5); !slices.Equal(got, []uint64{1, 2}) {
		t.Errorf("failing = %v", got)
	}
	if err := Check(Settings{Script: "@" + path + ".missing"}); err == nil {
		t.Error("missing file accepted")
	}
	if err := in.Update(Settings{Script: "@" + path}); err == nil {
		t.Error("Update read a file")
	}
}
