package calibrate

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// misbehaving is an OpenAI-compatible server that does what real ones do
// to a calibration: no /tokenize, prompt lengths rounded up to a multiple
// of 64, ignore_eos ignored (outputs end after 40 tokens), every 7th
// request rate-limited with Retry-After, every 11th failing with a 500.
// Its timing is simple: TTFT 3 ms + 2 µs a prompt token, 2 ms a token.
type misbehaving struct {
	mu       sync.Mutex
	requests int
	inFlight atomic.Int32
	maxSeen  atomic.Int32
}

func (m *misbehaving) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/models":
		fmt.Fprint(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
		return
	case "/v1/completions":
	default:
		http.NotFound(w, r)
		return
	}
	n := m.inFlight.Add(1)
	defer m.inFlight.Add(-1)
	for {
		old := m.maxSeen.Load()
		if n <= old || m.maxSeen.CompareAndSwap(old, n) {
			break
		}
	}
	var body struct {
		Prompt    string `json:"prompt"`
		MaxTokens int    `json:"max_tokens"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	m.requests++
	k := m.requests
	m.mu.Unlock()
	switch {
	case k%7 == 0:
		w.Header().Set("Retry-After", "0.05")
		http.Error(w, `{"error":{"message":"rate limited"}}`, http.StatusTooManyRequests)
		return
	case k%11 == 0:
		http.Error(w, `{"error":{"message":"boom"}}`, http.StatusInternalServerError)
		return
	}
	prompt := (len(strings.Fields(body.Prompt)) + 63) / 64 * 64
	out := min(body.MaxTokens, 40)
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	time.Sleep(3*time.Millisecond + time.Duration(prompt)*2*time.Microsecond)
	for i := range out {
		if i > 0 {
			time.Sleep(2 * time.Millisecond)
		}
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":\" w\"}]}\n\n")
		fl.Flush()
	}
	fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d}}\n\ndata: [DONE]\n\n", prompt, out)
}

func TestMeasureNoticesMisbehaviourAndFitsWhatIsLeft(t *testing.T) {
	srv := &misbehaving{}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	c := NewClient(ts.URL+"/v1", "", "")
	defer c.Close()
	c.RequestTimeout = 10 * time.Second
	plan := Plan{Repeats: 2, Warmup: 1, Experiments: []Experiment{
		{ID: "prefill-32", Kind: KindPrefill, Streams: []Stream{{Role: RoleProbe, After: -1, Prompt: 32, Output: 4}}},
		{ID: "prefill-512", Kind: KindPrefill, Streams: []Stream{{Role: RoleProbe, After: -1, Prompt: 512, Output: 4}}},
		{ID: "prefill-2048", Kind: KindPrefill, Streams: []Stream{{Role: RoleProbe, After: -1, Prompt: 2048, Output: 4}}},
		{ID: "decode-b12-ctx128", Kind: KindDecode, Streams: repeatStream(Stream{Role: RoleProbe, After: -1, Prompt: 128, Output: 64}, 12)},
	}}
	const limit = 5
	m, err := Measure(context.Background(), c, Options{Budget: 30 * time.Second, MaxConcurrency: limit, Plan: plan})
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.maxSeen.Load(); got > limit {
		t.Errorf("%d requests in flight at once, --max-concurrency %d", got, limit)
	}
	if m.Server.Tokenize {
		t.Errorf("the server has no /tokenize, discovery says it has")
	}
	all := strings.Join(m.Warnings, "\n")
	for _, want := range []string{"no /tokenize", "failed", "rate-limited", "ended before max_tokens", "differ from the wanted length"} {
		if !strings.Contains(all, want) {
			t.Errorf("no warning containing %q; warnings:\n%s", want, all)
		}
	}
	fit, err := FitProfile(m, FitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := fit.Profile.Validate(); err != nil {
		t.Fatal(err)
	}
	// The simulated requests have the lengths the server reported.
	for _, run := range m.Runs {
		for _, r := range run.Results {
			if r.Err == "" && r.PromptTokens%64 != 0 {
				t.Fatalf("prompt_tokens %d not as the server rounds them", r.PromptTokens)
			}
		}
	}
	t.Logf("warnings:\n%s", all)
	NewReport(ts.URL, m, fit).WriteTable(testWriter{t})
}

func repeatStream(s Stream, n int) []Stream {
	out := make([]Stream, n)
	for i := range out {
		out[i] = s
	}
	return out
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestMeasureHonoursTheBudget: a server far slower than the budget allows
// is cut off by the deadline, never waited for past it.
func TestMeasureHonoursTheBudget(t *testing.T) {
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"data":[{"id":"m"}]}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for range 1000 {
			fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"x\"}]}\n\n")
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	ts := httptest.NewServer(slow)
	defer ts.Close()
	start := time.Now()
	c := NewClient(ts.URL, "", "")
	defer c.Close()
	_, err := Measure(context.Background(), c, Options{Budget: 3 * time.Second})
	if took := time.Since(start); took > 6*time.Second {
		t.Fatalf("a 3 s budget took %v", took)
	}
	if err == nil {
		t.Fatalf("no error although no experiment could complete")
	}
}
