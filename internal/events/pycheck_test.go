package events

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

// fakeServer is a minimal stand-in for the HTTP API (which other packages
// implement): it tokenizes chat content by words and runs the requests on a
// live engine whose KV sink is the publisher under test.
func fakeServer(t *testing.T, e *engine.Engine) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"mocker-model","object":"model"}]}`))
	})
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
			MaxTokens int `json:"max_tokens"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var prompt []uint32
		for _, m := range body.Messages {
			for _, word := range strings.Fields(m.Content) {
				h := fnv.New32a()
				h.Write([]byte(word))
				prompt = append(prompt, h.Sum32()%50000)
			}
		}
		out := engine.NewOutput()
		req := &engine.Request{ID: engine.NewRequestID(), Prompt: prompt,
			PlannedOutput: tokenRange(100, max(body.MaxTokens, 1)), ArrivalTime: e.Clock().Now(), Out: out}
		if err := e.Submit(req); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		for done := false; !done; {
			select {
			case <-out.Ready():
			case <-r.Context().Done():
				e.Cancel(req.ID)
				return
			}
			for _, it := range out.Drain(nil) {
				done = done || it.Final
			}
		}
		_, _ = w.Write([]byte(`{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"length"}]}`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestPythonChecker runs scripts/check_kv_events.py (Debian python3 with
// python3-zmq and python3-msgpack) against a live engine publishing
// through a KVPublisher, in both encodings, and checks that it catches a
// block size mismatch.
func TestPythonChecker(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	py := debianPython()
	if py == "" {
		t.Skip("no python3 with zmq and msgpack")
	}
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "scripts", "check_kv_events.py")

	for _, tc := range []struct {
		name      string
		enc       Encoding
		blockSize int
		subBinds  bool // the script binds, the publisher connects
		wantOK    bool
	}{
		{"map", EncodingMap, 16, false, true},
		{"array/sub-binds", EncodingArray, 16, true, true},
		{"wrong-block-size", EncodingMap, 8, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			settings := KVSettings{Encoding: tc.enc, Publish: true}
			var out []byte
			var err error
			if tc.subBinds {
				// The script binds the port it is told, so one has to be
				// picked for it; another process may take it first.
				testutil.WithPortRuns(t, 1, 1, func(bases []int) error {
					settings.Endpoint = "tcp://127.0.0.1:" + strconv.Itoa(bases[0])
					p := newKVPub(t, nil, settings, nil)
					out, err = runChecker(t, py, script, p, tc.blockSize, "--bind")
					if bytes.Contains(out, []byte("error: cannot bind")) {
						return fmt.Errorf("checker: %s", out)
					}
					return nil
				})
			} else {
				settings.Endpoint, settings.Bind = "tcp://127.0.0.1:*", true
				p := newKVPub(t, nil, settings, nil)
				out, err = runChecker(t, py, script, p, tc.blockSize)
			}
			t.Logf("check_kv_events.py:\n%s", out)
			if tc.wantOK {
				if err != nil {
					t.Fatalf("checker failed: %v", err)
				}
				if !strings.Contains(string(out), " passed, 0 failed") {
					t.Errorf("no clean summary")
				}
				return
			}
			var exit *exec.ExitError
			if err == nil || !errors.As(err, &exit) || exit.ExitCode() != 1 ||
				!strings.Contains(string(out), "block_size 16, server expected 8") {
				t.Errorf("checker did not report the mismatch (err %v)", err)
			}
		})
	}
}

// runChecker runs the checker script against a live engine that publishes
// through p, the script's SUB on p's endpoint.
func runChecker(t *testing.T, py, script string, p *KVPublisher, blockSize int, extraArgs ...string) ([]byte, error) {
	t.Helper()
	cfg := config.Default()
	cfg.BlockSize, cfg.NumGPUBlocks, cfg.SpeedupRatio = 16, 22, 100 // small: evictions
	e, err := engine.New(cfg.EngineConfig(nil), engine.Options{KVSink: p})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = e.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	srv := fakeServer(t, e)

	// The SUB settles for 2 s before the first request: with 0.7 s, on a
	// machine with a load average of 25 on 2 cores, the script once missed
	// the first batch (the one announcing the shared prefix) to the slow
	// joiner.
	args := []string{script, "--endpoint", p.Endpoint(), "--http", srv.URL,
		"--block-size", strconv.Itoa(blockSize), "--requests", "6", "--settle", "2",
		"--quiet", "0.5", "--timeout", "30"}
	return exec.Command(py, append(args, extraArgs...)...).CombinedOutput()
}
