package worker

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/metrics"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

// vLLM's FastAPI HTTP metrics on a production worker, read with the
// Prometheus text parser: handlers are route templates, statuses grouped,
// unmatched requests "none", vLLM's excluded paths (and the 401s and
// preflights its outer middleware answers) not counted, sizes from
// Content-Length (0 for a stream), the instrumentator's buckets.
func TestHTTPMetrics_VLLMsInstrumentatorSeries(t *testing.T) {
	cfg := testConfig(t)
	cfg.DevMode, cfg.EnableSleepMode, cfg.SleepWeightsGB = true, true, 0
	cfg.APIKey = []string{"k"}
	cfg.RequestBodyTimeout = 0.2
	opts, err := Production(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := New(cfg, opts)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	defer http.DefaultClient.CloseIdleConnections()
	url := w.URL()
	do := func(method, path, body string, auth bool) (int, int) {
		t.Helper()
		req, err := http.NewRequest(method, url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if auth {
			req.Header.Set("Authorization", "Bearer k")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, len(b)
	}
	chatBody := `{"messages":[{"role":"user","content":"hi"}],"max_tokens":3}`
	st, chatLen := do("POST", "/v1/chat/completions", chatBody, true)
	if st != 200 {
		t.Fatalf("chat: %d", st)
	}
	do("POST", "/v1/chat/completions", strings.TrimSuffix(chatBody, "}")+`,"stream":true}`, true) // 0 bytes: a stream
	do("POST", "/v1/chat/completions", `{"messages":"bad"}`, true)                                // 4xx
	do("POST", "/v1/chat/completions", chatBody, false)                                           // 401: not counted
	do("OPTIONS", "/v1/chat/completions", "", false)                                              // preflight: not counted
	do("GET", "/v1/chat/completions", "", true)                                                   // 405: no route
	do("GET", "/no/such/path", "", false)                                                         // 404: no route
	for _, p := range []string{"/health", "/ping", "/load", "/version"} {                         // excluded
		do("GET", p, "", false)
	}
	do("GET", "/is_sleeping", "", false)     // a worker route, counted like vLLM's
	do("OPTIONS", "/is_sleeping", "", false) // its preflight: not counted
	do("GET", "/v1/models", "", true)
	// A body that never arrives: the 408 is answered before routing and
	// still counted under the route it would have matched.
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	if res, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || res.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("trickled body: %v %v", res, err)
	}

	e := testutil.Scrape(t, nil, url+"/metrics", "")
	total := func(labels map[string]string) float64 {
		v := e.Value("http_requests_total", labels)
		if v != v { // NaN: no series
			return 0
		}
		return v
	}
	for _, c := range []struct {
		labels map[string]string
		want   float64
	}{
		{map[string]string{"handler": "/v1/chat/completions", "method": "POST", "status": "2xx"}, 2},
		{map[string]string{"handler": "/v1/chat/completions", "method": "POST", "status": "4xx"}, 2},
		{map[string]string{"handler": "none", "method": "GET", "status": "4xx"}, 2},
		{map[string]string{"handler": "/is_sleeping", "method": "GET", "status": "2xx"}, 1},
		{map[string]string{"handler": "/v1/models", "method": "GET", "status": "2xx"}, 1},
		{map[string]string{"method": "OPTIONS"}, 0},
		{map[string]string{"handler": "/health"}, 0},
		{map[string]string{"handler": "/load"}, 0},
		{map[string]string{"handler": "/metrics"}, 0},
		{map[string]string{}, 8},
	} {
		if got := total(c.labels); got != c.want {
			t.Errorf("http_requests_total%v = %v, want %v", c.labels, got, c.want)
		}
	}
	sum := func(name, handler string) (float64, uint64) {
		ms := e.Series(name, map[string]string{"handler": handler})
		if len(ms) != 1 || ms[0].GetSummary() == nil {
			t.Fatalf("%s{handler=%q}: %d series", name, handler, len(ms))
		}
		return ms[0].GetSummary().GetSampleSum(), ms[0].GetSummary().GetSampleCount()
	}
	reqs := len(chatBody) + len(strings.TrimSuffix(chatBody, "}")+`,"stream":true}`) + len(`{"messages":"bad"}`) + 100
	if s, n := sum("http_request_size_bytes", "/v1/chat/completions"); s != float64(reqs) || n != 4 {
		t.Errorf("request sizes %v over %d, want %d over 4", s, n, reqs)
	}
	if s, n := sum("http_response_size_bytes", "/v1/chat/completions"); n != 4 || s <= float64(chatLen) || s > float64(chatLen+512) {
		t.Errorf("response sizes %v over %d: the JSON answer (%d bytes), the 400 and the 408, the stream counting 0", s, n, chatLen)
	}
	hi := e.Families["http_request_duration_highr_seconds"].GetMetric()
	if len(hi) != 1 || len(hi[0].GetLabel()) != 0 || hi[0].GetHistogram().GetSampleCount() != 8 {
		t.Fatalf("highr histogram: %v", hi)
	}
	if got := bucketBounds(hi[0].GetHistogram().GetBucket()); got != floats(metrics.BucketsHTTPHighR)+" +Inf" {
		t.Errorf("highr buckets %s", got)
	}
	lo := e.Series("http_request_duration_seconds", map[string]string{"handler": "/v1/chat/completions", "method": "POST"})
	if len(lo) != 1 || lo[0].GetHistogram().GetSampleCount() != 4 || bucketBounds(lo[0].GetHistogram().GetBucket()) != "0.1 0.5 1 +Inf" {
		t.Errorf("lowr histogram: %v", lo)
	}
}

func bucketBounds[B interface{ GetUpperBound() float64 }](bs []B) string {
	s := make([]string, len(bs))
	for i, b := range bs {
		s[i] = strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)
	}
	return strings.Join(s, " ")
}

func floats(fs []float64) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = strconv.FormatFloat(f, 'g', -1, 64)
	}
	return strings.Join(s, " ")
}
