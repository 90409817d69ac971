package api

import (
	"bufio"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/api/settings"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite the golden SSE transcripts in testdata")

// goldenToolStream is a streamed parallel tool call (tool_choice
// "required", fixed seed, usage on). Its bytes are pinned in
// testdata/toolcall_stream.sse; the key names and order follow vLLM's
// ChatCompletionStreamResponse / DeltaToolCall (id, type, index, function)
// serialized with exclude_unset.
const goldenToolStream = `{"model":"mocker-model","messages":[{"role":"user","content":"Weather in Paris and a trip?"}],` +
	`"tools":` + weatherTools + `,"tool_choice":"required","seed":8,"stream":true,"stream_options":{"include_usage":true}}`

func TestToolCallStream_GoldenTranscript(t *testing.T) {
	env := startServer(t, map[string]any{"timing_model": "fixed", "fixed_prefill_ms": 1.0, "fixed_decode_ms": 1.0, "speedup_ratio": 1.0})
	r := env.post("/v1/chat/completions", goldenToolStream, "X-Request-Id", "golden-tool-call")
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	path := filepath.Join("testdata", "toolcall_stream.sse")
	if *updateGolden {
		if err := os.WriteFile(path, []byte(r.Body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update-golden to create it)", err)
	}
	if r.Body != string(want) {
		t.Fatalf("transcript differs from %s:\n%s", path, r.Body)
	}
	// The transcript is a tool call a client can assemble, with two calls.
	got := streamResult(t, r.Body)
	if len(got.Calls) < 2 || got.Finish != "tool_calls" {
		t.Fatalf("golden transcript has %d calls, finish %q", len(got.Calls), got.Finish)
	}
}

// lagRecorder collects the server's per-token delivery lag: how long after
// the engine's modeled token time each token's SSE event was flushed.
type lagRecorder struct {
	mu   sync.Mutex
	lags []float64
}

func (l *lagRecorder) ObserveDeliveryLag(_ int, seconds float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lags = append(l.lags, seconds)
}

// A streamed tool call's argument fragments arrive at the engine's token
// times: the server flushes fragments within 2 ms of their tokens' modeled
// times, and at the client consecutive fragments are one decode pass apart
// (fixed timing model; medians within ± 2 ms).
func TestToolCallStream_FragmentsArriveAtTokenTimes(t *testing.T) {
	const decodeMS = 12
	lags := &lagRecorder{}
	env := startServer(t, map[string]any{"timing_model": "fixed", "fixed_prefill_ms": 5.0,
		"fixed_decode_ms": float64(decodeMS), "speedup_ratio": 1.0}, settings.Deps{DeliveryLag: lags})
	body := chatBody(`,"tool_choice":{"type":"function","function":{"name":"get_weather"}},"seed":3,"stream":true`)
	req, _ := http.NewRequest("POST", env.URL+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := env.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	reader := bufio.NewReader(resp.Body)
	var arrivals []time.Time
	for {
		ev, err := readEvent(reader)
		if err != nil {
			t.Fatal(err)
		}
		if ev == "[DONE]" {
			break
		}
		if strings.Contains(ev, `"tool_calls"`) {
			arrivals = append(arrivals, time.Now())
		}
	}
	if len(arrivals) < 10 {
		t.Fatalf("only %d tool-call chunks", len(arrivals))
	}
	tolerance := 2 * time.Millisecond
	gaps := make([]time.Duration, 0, len(arrivals)-1)
	for k := 1; k < len(arrivals); k++ {
		gaps = append(gaps, arrivals[k].Sub(arrivals[k-1]))
	}
	slices.Sort(gaps)
	if median, want := gaps[len(gaps)/2], decodeMS*time.Millisecond; median < want-tolerance || median > want+tolerance {
		t.Errorf("median gap between fragments %v, want %v ± %v (gaps %v)", median, want, tolerance, gaps)
	}
	lags.mu.Lock()
	defer lags.mu.Unlock()
	if len(lags.lags) < len(arrivals) {
		t.Fatalf("%d lags observed for %d fragments", len(lags.lags), len(arrivals))
	}
	sorted := slices.Sorted(slices.Values(lags.lags))
	t.Logf("median gap %v; flush lags (s) %v", gaps[len(gaps)/2], lags.lags)
	// Medians: on a shared 2-core machine single flushes can be a few ms
	// late (the scheduler, -race), the stream as a whole is not.
	if median := sorted[len(sorted)/2]; median > tolerance.Seconds() {
		t.Errorf("median flush lag %.4fs after the token time, want ≤ %v", median, tolerance)
	}
}
