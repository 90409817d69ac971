package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCalibrateBadInput: every bad setup is one clear line on stderr and
// exit status 2, and no profile is written.
func TestCalibrateBadInput(t *testing.T) {
	keyed := startServe(t, loadConfig(t, map[string]any{"api_key": "sekrit"}), time.Second)
	open := startServe(t, loadConfig(t, nil), time.Second)
	// A server that answers completions without streaming them.
	noSSE := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"data":[{"id":"m"}]}`)
			return
		}
		fmt.Fprint(w, `{"choices":[{"text":"hi"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`)
	}))
	defer noSSE.Close()
	dir := t.TempDir()
	out := filepath.Join(dir, "p.json")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unreachable", []string{"--url", "http://127.0.0.1:1"}, "cannot reach http://127.0.0.1:1"},
		{"401", []string{"--url", keyed.url}, "refused the API key (HTTP 401"},
		{"wrong key", []string{"--url", keyed.url, "--api-key", "nope"}, "refused the API key"},
		{"unknown model", []string{"--url", open.url, "--model", "gpt-imaginary"}, `model "gpt-imaginary" is not served`},
		{"no streaming", []string{"--url", noSSE.URL}, "does not stream"},
		{"no url", []string{}, "calibrate needs --url"},
		{"bad url", []string{"--url", "ftp://x"}, "want http://HOST:PORT"},
		{"no out", []string{"--url", open.url, "--out", ""}, "calibrate needs --out"},
		{"out dir missing", []string{"--url", open.url, "--out", "/nonexistent/dir/p.json"}, "does not exist"},
		{"bad concurrency", []string{"--url", open.url, "--max-concurrency", "0"}, "--max-concurrency must be ≥ 1"},
		{"bad budget", []string{"--url", open.url, "--budget", "-1s"}, "--budget must be > 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"calibrate", "--out", out, "--budget", "10s", "--no-progress"}, tc.args...)
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), args, &stdout, &stderr)
			if code := exitCode(err); code != 2 {
				t.Fatalf("exit %d (%v), want 2; stderr %q", code, err, stderr.String())
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
				t.Fatalf("stderr %q, want one line containing %q", stderr.String(), tc.want)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Fatalf("a profile was written")
			}
		})
	}
}

// TestCalibrateInterruptedWritesNothing: Ctrl-C (the context the signal
// handler cancels) mid-run leaves neither the profile nor a temporary file.
func TestCalibrateInterruptedWritesNothing(t *testing.T) {
	srv := startServe(t, loadConfig(t, map[string]any{"speedup_ratio": 1}), time.Second)
	dir := t.TempDir()
	out := filepath.Join(dir, "p.json")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(1500*time.Millisecond, cancel)
	var stdout, stderr bytes.Buffer
	start := time.Now()
	err := run(ctx, []string{"calibrate", "--url", srv.url, "--out", out, "--html", filepath.Join(dir, "r.html"),
		"--budget", "2m", "--no-progress"}, &stdout, &stderr)
	if err == nil {
		t.Fatalf("an interrupted calibration succeeded")
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the interrupt took %v to stop the run", took)
	}
	if !strings.Contains(stderr.String(), "interrupted: nothing written") {
		t.Fatalf("stderr %q", stderr.String())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Fatalf("files left behind: %v", entries)
	}
}

// TestCalibrateDryRun prints the plan without touching the network.
func TestCalibrateDryRun(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"calibrate", "--dry-run", "--budget", "2m", "--max-concurrency", "8"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	s := stdout.String()
	for _, want := range []string{"calibration plan:", "prefill-32", "prefix-1024+256", "decode-b4-ctx128", "held-out"} {
		if !strings.Contains(s, want) {
			t.Errorf("dry run lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "decode-b16") || strings.Contains(s, "mixed-b32") {
		t.Errorf("the plan exceeds --max-concurrency 8:\n%s", s)
	}
}
