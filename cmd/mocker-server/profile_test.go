package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/testutil"

	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/engine"
)

// countProfileLoads wraps loadProfile for the test and returns the number
// of loads so far.
func countProfileLoads(t *testing.T) func() int64 {
	t.Helper()
	var loads atomic.Int64
	real := loadProfile
	loadProfile = func(path string) (*engine.Profile, error) {
		loads.Add(1)
		return real(path)
	}
	t.Cleanup(func() { loadProfile = real })
	return loads.Load
}

// slowPrefillProfile is a profile whose prefill always costs 300 ms and
// whose decode costs the 1 ms floor, so a one-token request takes about
// 300 ms of wall time at speedup 1 — far from the polynomial model's ~17 ms.
const slowPrefillProfile = `{
  "prefill_isl": [1, 100000],
  "prefill_ttft_ms": [300, 300],
  "decode_active_kv_tokens": [0, 10000000],
  "decode_context_length": [0, 1000000],
  "decode_itl": [[1, 1], [1, 1]]
}`

func TestServe_ProfileLoadedOnceAndSharedByEveryRank(t *testing.T) {
	loads := countProfileLoads(t)
	path := filepath.Join(t.TempDir(), "profile.json")
	if err := os.WriteFile(path, []byte(slowPrefillProfile), 0o644); err != nil {
		t.Fatal(err)
	}
	const ranks = 8
	cfg := loadConfig(t, map[string]any{"dp_size": ranks, "speedup_ratio": 1.0, "planner_profile_data": path})
	r := startServe(t, cfg, time.Second)
	if got := loads(); got != 1 {
		t.Fatalf("profile loaded %d times for dp_size %d, want once", got, ranks)
	}

	// Every rank uses the profile: a one-token request sent to each rank
	// (all at once) waits for the profile's 300 ms prefill.
	var wg sync.WaitGroup
	took := make([]time.Duration, ranks)
	errs := make([]error, ranks)
	for i := range took {
		wg.Go(func() {
			start := time.Now()
			body := fmt.Sprintf(`{"model":"mocker-model","prompt":"request %d","max_tokens":1}`, i)
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost,
				r.url+"/v1/completions", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Data-Parallel-Rank", fmt.Sprint(i))
			resp, err := r.client.Do(req)
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK {
				errs[i] = fmt.Errorf("status %d: %s", resp.StatusCode, b)
			}
			took[i] = time.Since(start)
		})
	}
	wg.Wait()
	for i := range took {
		if errs[i] != nil {
			t.Fatalf("rank %d: %v", i, errs[i])
		}
		if took[i] < 280*time.Millisecond {
			t.Errorf("rank %d answered in %v, want >= 300 ms of profiled prefill", i, took[i])
		}
	}
	if got := loads(); got != 1 {
		t.Errorf("profile loaded %d times after serving, want once", got)
	}
}

func TestServe_ProfileIsNotReadWhenAnotherModelIsSelected(t *testing.T) {
	loads := countProfileLoads(t)
	missing := filepath.Join(t.TempDir(), "never-read.npz")
	cfg := loadConfig(t, map[string]any{"dp_size": 2, "timing_model": "fixed", "planner_profile_data": missing})
	startServe(t, cfg, time.Second)
	if got := loads(); got != 0 {
		t.Errorf("profile loaded %d times with timing_model fixed, want never", got)
	}
}

func TestServe_BadProfileIsAStartupConfigurationError(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string { return testutil.WriteFile(t, dir, name, content) }
	tests := []struct {
		name    string
		path    string
		wantMsg string
	}{
		{"missing file", filepath.Join(dir, "nope.npz"), "no such file"},
		{"invalid profile", write("bad.json", strings.Replace(slowPrefillProfile, "[1, 100000]", "[100000, 1]", 1)),
			"prefill_isl: not strictly increasing"},
		{"numpy object array", filepath.Join("..", "..", "internal", "profile", "testdata", "object_prefill_ttft_ms.npz"),
			"object array"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			loads := countProfileLoads(t)
			cfg := loadConfig(t, map[string]any{"dp_size": 8, "planner_profile_data": tc.path})
			err := serve(context.Background(), cfg, serverOptions{Ready: func(string) {
				t.Error("server became ready with a bad profile")
			}})
			var cfgErr *config.Error
			if !errors.As(err, &cfgErr) {
				t.Fatalf("serve = %v (%T), want a *config.Error", err, err)
			}
			if code := exitCode(err); code != 2 {
				t.Errorf("exit code = %d, want 2", code)
			}
			var stderr bytes.Buffer
			reportError(&stderr, err)
			line := stderr.String()
			if strings.Count(line, "\n") != 1 || !strings.Contains(line, tc.path) || !strings.Contains(line, tc.wantMsg) {
				t.Errorf("stderr = %q, want one line naming %q and %q", line, tc.path, tc.wantMsg)
			}
			if got := loads(); got != 1 {
				t.Errorf("profile loaded %d times, want once", got)
			}
		})
	}
}
