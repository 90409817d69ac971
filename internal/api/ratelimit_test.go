package api

import (
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

func TestRateLimits_RPMAnswers429WithOpenAIHeaders(t *testing.T) {
	obs := &faultCounter{n: map[string]int{}}
	env := startServer(t, map[string]any{"rpm": 3}, settings.Deps{FaultObserver: obs})
	for i := 1; i <= 4; i++ {
		r := env.post("/v1/completions", `{"prompt":"a","max_tokens":1}`)
		h := r.Header
		if h.Get("X-Ratelimit-Limit-Requests") != "3" {
			t.Errorf("request %d: limit header %q", i, h.Get("X-Ratelimit-Limit-Requests"))
		}
		if i <= 3 {
			if r.Status != 200 || h.Get("X-Ratelimit-Remaining-Requests") != []string{"", "2", "1", "0"}[i] {
				t.Errorf("request %d: %d, remaining %q", i, r.Status, h.Get("X-Ratelimit-Remaining-Requests"))
			}
			continue
		}
		msg, typ, _, code := errorOf(t, r)
		// One request comes back every 20 s; the bucket is full again after ~60 s.
		reset, err := time.ParseDuration(h.Get("X-Ratelimit-Reset-Requests"))
		if r.Status != 429 || code != 429 || typ != "RateLimitError" || msg != "Rate limit reached for requests: limit 3 per minute." ||
			h.Get("Retry-After") != "20" || err != nil || reset < 59*time.Second || reset > 60*time.Second {
			t.Errorf("request 4: %d %s, headers %v", r.Status, r.Body, h)
		}
	}
	if obs.n["limit_rpm"] != 1 {
		t.Errorf("counted %v", obs.n)
	}
}

func TestRateLimits_TPMCountsPromptPlusMaxTokens(t *testing.T) {
	env := startServer(t, map[string]any{"tpm": 100})
	// Prompt [1,2,3,4] + 40 max tokens = 44 tokens per request.
	body := `{"prompt":[1,2,3,4],"max_tokens":40}`
	for i, want := range []struct {
		status    int
		remaining string
	}{{200, "56"}, {200, "12"}, {429, "12"}} {
		r := env.post("/v1/completions", body)
		if r.Status != want.status || r.Header.Get("X-Ratelimit-Remaining-Tokens") != want.remaining ||
			r.Header.Get("X-Ratelimit-Limit-Tokens") != "100" {
			t.Errorf("request %d: %d remaining %q", i+1, r.Status, r.Header.Get("X-Ratelimit-Remaining-Tokens"))
		}
	}
	r := env.post("/v1/completions", `{"prompt":[1],"max_tokens":200}`)
	// It can never succeed: the answer says so, with no Retry-After to
	// send a client into a retry loop.
	if msg, _, _, _ := errorOf(t, r); r.Status != 429 || msg != "Request too large for tokens per minute: limit 100, "+
		"requested 201. It can never succeed under this limit: reduce the input or the output tokens (max_tokens)." ||
		r.Header.Get("Retry-After") != "" || r.Header.Get("Retry-After-Ms") != "" {
		t.Errorf("too large: %d Retry-After %q %s", r.Status, r.Header.Get("Retry-After"), r.Body)
	}
}

func TestRateLimits_MaxConcurrentRequests(t *testing.T) {
	env := startServer(t, map[string]any{"max_concurrent_requests": 1, "speedup_ratio": 1.0,
		"timing_model": "fixed", "fixed_decode_ms": 20.0})
	cancel := env.holdStream()
	defer cancel()
	r := env.post("/v1/completions", `{"prompt":"a","max_tokens":1}`)
	if msg, _, _, _ := errorOf(t, r); r.Status != 429 || r.Header.Get("Retry-After") != "1" || msg != "Too many concurrent requests: limit 1." {
		t.Errorf("second request: %d %s", r.Status, r.Body)
	}
	cancel()
	testutil.WaitFor(t, 2*time.Second, "the stream to end", func() bool { return env.srv.InFlight() == 0 })
	if r := env.post("/v1/completions", `{"prompt":"a","max_tokens":1}`); r.Status != 200 {
		t.Errorf("after the stream ended: %d", r.Status)
	}
}

// Error-status faults answer before the limits and use none of them.
func TestRateLimits_StatusFaultsUseNoQuota(t *testing.T) {
	env := startServer(t, map[string]any{"rpm": 2, "failure_script": "first 3: server_error; then ok"})
	for i, want := range []int{500, 500, 500, 200, 200, 429} {
		if r := env.post("/v1/completions", `{"prompt":"a","max_tokens":1}`); r.Status != want {
			t.Errorf("request %d: %d, want %d", i+1, r.Status, want)
		}
	}
}
