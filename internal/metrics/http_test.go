package metrics

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/config"
)

// A handler that panics is counted as a 5xx before the panic goes on to
// the server's recovery; a stream and a body without Content-Length are
// sized as the instrumentator sizes them; the SGLang family has no HTTP
// metrics.
func TestInstrumentHTTP_PanicsStreamsAndFamilies(t *testing.T) {
	reg := newReg(testConfig(nil), "test")
	mux := http.NewServeMux()
	mux.HandleFunc("/panic", func(http.ResponseWriter, *http.Request) { panic("boom") })
	mux.HandleFunc("/stream", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: 1\n\n"))
		http.NewResponseController(w).Flush()
		_, _ = w.Write([]byte("data: 2\n\n"))
	})
	mux.HandleFunc("/plain", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("twelve bytes")) })
	h := reg.InstrumentHTTP(mux, func(r *http.Request) string { return r.URL.Path })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if recover() != nil {
				w.WriteHeader(http.StatusInternalServerError)
			}
		}()
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	for _, p := range []string{"/panic", "/stream", "/plain"} {
		res, err := srv.Client().Post(srv.URL+p, "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	e := scrapeText(t, reg)
	if v := e.Value("http_requests_total", map[string]string{"handler": "/panic", "status": "5xx", "method": "POST"}); v != 1 {
		t.Errorf("panic counted %v times as 5xx", v)
	}
	for handler, want := range map[string]float64{"/stream": 0, "/plain": 12} {
		ms := e.Series("http_response_size_bytes", map[string]string{"handler": handler})
		if len(ms) != 1 || ms[0].GetSummary().GetSampleSum() != want {
			t.Errorf("%s response size %v, want %v", handler, ms, want)
		}
		in := e.Series("http_request_size_bytes", map[string]string{"handler": handler})
		if len(in) != 1 || in[0].GetSummary().GetSampleSum() != 2 {
			t.Errorf("%s request size %v, want 2", handler, in)
		}
	}

	sgl := newReg(testConfig(func(c *config.Config) { c.MetricsFamily = config.MetricsSGLang }), "test")
	if got := sgl.InstrumentHTTP(mux, nil); got != http.Handler(mux) {
		t.Error("the SGLang family instruments HTTP")
	}
	for name := range scrape(t, sgl) {
		if strings.HasPrefix(name, "http_") {
			t.Errorf("SGLang family exports %s", name)
		}
	}
}
