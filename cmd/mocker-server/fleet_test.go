package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/config"
)

func TestFleet_BadInputExitsWithStatus2AndOneLine(t *testing.T) {
	dir := t.TempDir()
	unknownKey := filepath.Join(dir, "unknown.yaml")
	if err := os.WriteFile(unknownKey, []byte("workers:\n  - count: 2\n    replicas: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"fleet file with an unknown key", []string{"fleet", "--fleet-file", unknownKey},
			`fleet file ` + unknownKey + `: line 3: unknown key "replicas" (a fleet file has workers:, each group count:, config: and args:)`},
		{"missing fleet file", []string{"fleet", "--fleet-file", filepath.Join(dir, "none.yaml")},
			"fleet file: open " + filepath.Join(dir, "none.yaml") + ": no such file or directory"},
		{"port collision", []string{"fleet", "--workers", "4", "--base-port", "8000", "--zmq-kv-events-port", "8003"},
			"port collision: port 8003 is used by worker 0 KV events (dp rank 0) and worker 3 HTTP"},
		{"admin port collision", []string{"fleet", "--workers", "4", "--base-port", "9000"},
			"port collision: port 9000 is used by the admin API and worker 0 HTTP"},
		{"zero workers", []string{"fleet", "--workers", "0"}, "--workers must be between 1 and 4096, got 0"},
		{"too many workers", []string{"fleet", "--workers", "4097"}, "--workers must be between 1 and 4096, got 4097"},
		{"no size", []string{"fleet"}, "fleet needs --workers N or --fleet-file FILE"},
		{"port and base port disagree", []string{"fleet", "--workers", "2", "--port", "7000", "--base-port", "7100"},
			"--port and --base-port disagree: give one of them (worker i listens on the base + i)"},
		{"a worker's configuration", []string{"fleet", "--workers", "2", "--max-num-seqs", "0"},
			"--max-num-seqs must be between 1 and 65536, got 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, err := runCLI(t, tt.args...)
			var cfgErr *config.Error
			if !errors.As(err, &cfgErr) || exitCode(err) != 2 {
				t.Fatalf("run = %v (exit %d), want a configuration error", err, exitCode(err))
			}
			if lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n"); !slices.Equal(lines, []string{"mocker-server: " + tt.want}) {
				t.Errorf("stderr lines:\n got  %q\n want %q", lines, []string{tt.want})
			}
			if stdout != "" {
				t.Errorf("stdout = %q", stdout)
			}
		})
	}
}

// runInBackground runs the command line until the test ends and waits
// for the line matching re on stderr; it returns the first submatch.
func runInBackground(t *testing.T, re *regexp.Regexp, args ...string) (func() error, *syncBuffer, []string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, &stdout, &stderr) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if m := re.FindAllStringSubmatch(stderr.String(), -1); m != nil {
			var found []string
			for _, x := range m {
				found = append(found, x[1])
			}
			stop := func() error {
				cancel()
				select {
				case err := <-done:
					return err
				case <-time.After(15 * time.Second):
					t.Fatal("run did not return")
					return nil
				}
			}
			return stop, &stderr, found
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("no line matching %s; stderr:\n%s", re, stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func getJSON(t *testing.T, client *http.Client, method, url string) (int, any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var v any
	_ = json.Unmarshal(raw, &v)
	return resp.StatusCode, v
}

// serve --admin-port runs the same admin API over a fleet of one, worker "0".
func TestServe_AdminPortServesTheAdminAPIForWorker0(t *testing.T) {
	serveFunc = runServer
	defer func() { serveFunc = printConfig }()
	stop, _, found := runInBackground(t, regexp.MustCompile(`admin API on (http://127\.0\.0\.1:\d+)\n(?s:.*)listening on`),
		"--port", "0", "--admin-port", "0", "--speedup-ratio", "inf", "--log-level", "warn")
	admin := found[0]
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	status, list := getJSON(t, client, http.MethodGet, admin+"/workers")
	workers, _ := list.([]any)
	if status != 200 || len(workers) != 1 || workers[0].(map[string]any)["id"] != "0" ||
		workers[0].(map[string]any)["state"] != "running" {
		t.Fatalf("GET /workers = %d %v", status, list)
	}
	url := workers[0].(map[string]any)["url"].(string)
	if status, _ := getJSON(t, client, http.MethodPost, admin+"/workers/0/drain"); status != 200 {
		t.Errorf("drain = %d", status)
	}
	resp, err := client.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(helloChat+`,"max_tokens":2}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Errorf("chat on the drained worker = %d", resp.StatusCode)
	}
	if status, _ := getJSON(t, client, http.MethodPost, admin+"/workers/1/drain"); status != 404 {
		t.Errorf("drain worker 1 = %d, want 404", status)
	}
	if err := stop(); err != nil {
		t.Errorf("run = %v", err)
	}
}

// fleet through run(): two workers from the command line, the admin API,
// a clean exit when cancelled.
func TestFleet_RunsWorkersUntilCancelled(t *testing.T) {
	stop, stderr, found := runInBackground(t, regexp.MustCompile(`(?s)listening on (http://127\.0\.0\.1:\d+)\n.*fleet started.*\n  worker 0…2 [^\n]*\n`),
		"fleet", "--workers", "3", "--base-port", "0", "--admin-port", "0", "--admin-key", "k",
		"--speedup-ratio", "inf", "--served-model-name", "m")
	urls := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`).FindAllStringSubmatch(stderr.String(), -1)
	if len(found) == 0 || len(urls) != 3 {
		t.Fatalf("stderr:\n%s", stderr.String())
	}
	// The summary's pool reads as serve's banner does (thousands
	// separators, "per DP rank"), not as bare 16384 … 1048576.
	if !regexp.MustCompile(`(?m)^  worker 0…2 +vllm aggregated, dp 1, KV pool 16,384 blocks × \d+ tokens = \d{1,3}(,\d{3})+ tokens per DP rank, timing polynomial$`).MatchString(stderr.String()) {
		t.Errorf("fleet summary's KV pool line differs from serve's banner:\n%s", stderr.String())
	}
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	for _, u := range urls {
		resp, err := client.Post(u[1]+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":3}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s: chat = %d", u[1], resp.StatusCode)
		}
	}
	admin := regexp.MustCompile(`admin API on (\S+)`).FindStringSubmatch(stderr.String())[1]
	if status, body := getJSON(t, client, http.MethodGet, admin+"/workers"); status != 401 {
		t.Errorf("GET /workers without the key = %d %v", status, body)
	}
	if err := stop(); err != nil || exitCode(err) != 0 {
		t.Errorf("run = %v", err)
	}
}
