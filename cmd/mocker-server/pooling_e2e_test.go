package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// A cross-encoder end to end on `serve` (docs/pooling.md): the Cohere
// rerank path answers, the generation routes are gone, and the
// production registry counts the pairs as engine requests and the HTTP
// requests under their route templates (docs/metrics.md).
func TestE2E_PoolingModelRerankAndHTTPMetrics(t *testing.T) {
	srv := e2eStartProduction(t, loadConfig(t, map[string]any{"runner": "pooling", "convert": "classify", "log_level": "error"}))
	post := func(path, body string) (int, string) {
		t.Helper()
		res, err := srv.client.Post(srv.url+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	code, body := post("/v2/rerank", `{"model":"mocker-model","query":"capital of France","documents":["Paris is in France","capital of France","Cats"],"top_n":2}`)
	if code != http.StatusOK || !strings.Contains(body, `"results":[{"index":1,`) {
		t.Fatalf("rerank: %d %s", code, body)
	}
	if code, body := post("/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`); code != http.StatusNotFound || body != `{"detail":"Not Found"}` {
		t.Errorf("chat on a pooling model: %d %s", code, body)
	}
	s := srv.e2eScrape(t)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"vllm:request_success_total", map[string]string{"finished_reason": "length"}, 3},
		{"vllm:generation_tokens_total", nil, 0},
		{"http_requests_total", map[string]string{"handler": "/v2/rerank", "method": "POST", "status": "2xx"}, 1},
		{"http_requests_total", map[string]string{"handler": "none", "method": "POST", "status": "4xx"}, 1},
	} {
		if got := s.exp.Value(c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}
