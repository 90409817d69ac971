package metrics

import (
	"bufio"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// vLLM's HTTP metrics are prometheus-fastapi-instrumentator's default set,
// which vLLM mounts with .add() and no arguments (vllm/entrypoints/serve/
// instrumentator/metrics.py): http_requests_total{method,status,handler},
// http_request_size_bytes{handler} and http_response_size_bytes{handler}
// (summaries without quantiles), http_request_duration_highr_seconds (no
// labels, 21 buckets) and http_request_duration_seconds{method,handler}
// (0.1, 0.5, 1). The instrumentator's defaults shape the labels: statuses
// grouped ("2xx"), a request that matched no route has handler "none",
// and handlers containing one of vLLM's excluded paths are not counted.
// The mock exports them with the vLLM family.

// httpExcluded are the excluded_handlers vLLM passes; the instrumentator
// compiles each as a regular expression and searches the handler with it,
// so each excludes every handler that contains it (/load also excludes
// /v1/load_lora_adapter, /server_info also /get_server_info).
var httpExcluded = [...]string{"/metrics", "/health", "/health/decode", "/load", "/ping", "/version", "/server_info"}

// The instrumentator's default bucket sets.
var (
	// BucketsHTTPHighR is latency_highr_buckets.
	BucketsHTTPHighR = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5, 7.5, 10, 30, 60}
	// BucketsHTTPLowR is latency_lowr_buckets.
	BucketsHTTPLowR = []float64{0.1, 0.5, 1}
)

// httpMetrics holds the HTTP families and the children already resolved.
type httpMetrics struct {
	total    *prometheus.CounterVec
	inSize   *prometheus.SummaryVec
	outSize  *prometheus.SummaryVec
	highr    prometheus.Histogram
	lowr     *prometheus.HistogramVec
	children sync.Map // httpKey → *httpChildren
}

// httpKey names one (method, status class, handler) combination.
type httpKey struct {
	method, handler string
	status          byte // '1' … '5'
}

// httpChildren are the children one combination touches.
type httpChildren struct {
	total           prometheus.Counter
	inSize, outSize prometheus.Observer
	lowr            prometheus.Observer
}

func (r *Registry) buildHTTP() {
	h := &httpMetrics{
		total: r.counterVec("http_requests_total", "Total number of requests by method, status and handler.",
			"method", "status", "handler"),
		inSize: prometheus.NewSummaryVec(prometheus.SummaryOpts{Name: "http_request_size_bytes",
			Help: "Content length of incoming requests by handler. Only value of header is respected. Otherwise ignored. No percentile calculated. "},
			[]string{"handler"}),
		outSize: prometheus.NewSummaryVec(prometheus.SummaryOpts{Name: "http_response_size_bytes",
			Help: "Content length of outgoing responses by handler. Only value of header is respected. Otherwise ignored. No percentile calculated. "},
			[]string{"handler"}),
		highr: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "http_request_duration_highr_seconds",
			Help:    "Latency with many buckets but no API specific labels. Made for more accurate percentile calculations. ",
			Buckets: BucketsHTTPHighR}),
		lowr: r.histVec("http_request_duration_seconds",
			"Latency with only few buckets by handler. Made to be only used if aggregation by handler is important. ",
			BucketsHTTPLowR, "method", "handler"),
	}
	r.MustRegister(h.inSize, h.outSize, h.highr)
	r.http = h
}

// InstrumentHTTP wraps an HTTP handler so that every request it serves is
// counted in vLLM's HTTP metrics. route reports, once the handler has run,
// the route template the request matched ("" when none matched, as for a
// 404 or 405). Without the vLLM family it returns next unchanged.
func (r *Registry) InstrumentHTTP(next http.Handler, route func(*http.Request) string) http.Handler {
	h := r.http
	if h == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		start := time.Now()
		rw := &sizeWriter{ResponseWriter: w}
		// Recorded even when the handler panics (status 500, as the
		// instrumentator records an exception), then the panic goes on.
		defer func() {
			handler := route(req)
			templated := handler != ""
			if !templated {
				handler = req.URL.Path
			}
			if excludedHandler(handler) {
				return
			}
			if !templated {
				handler = "none"
			}
			status := rw.status
			if status == 0 {
				status = http.StatusInternalServerError
				if rw.wrote {
					status = http.StatusOK
				}
			}
			h.observe(httpKey{method: methodLabel(req.Method), handler: handler, status: byte('0' + status/100%10)},
				requestSize(req), rw.responseSize(), time.Since(start).Seconds())
		}()
		next.ServeHTTP(rw, req)
	})
}

func (h *httpMetrics) observe(k httpKey, inSize, outSize int64, seconds float64) {
	c, ok := h.children.Load(k)
	if !ok {
		c, _ = h.children.LoadOrStore(k, &httpChildren{
			total:   h.total.WithLabelValues(k.method, string([]byte{k.status, 'x', 'x'}), k.handler),
			inSize:  h.inSize.WithLabelValues(k.handler),
			outSize: h.outSize.WithLabelValues(k.handler),
			lowr:    h.lowr.WithLabelValues(k.method, k.handler),
		})
	}
	ch := c.(*httpChildren)
	ch.total.Inc()
	ch.inSize.Observe(float64(inSize))
	ch.outSize.Observe(float64(outSize))
	h.highr.Observe(seconds)
	ch.lowr.Observe(seconds)
}

// excludedHandler applies vLLM's excluded_handlers.
func excludedHandler(handler string) bool {
	for _, p := range httpExcluded {
		if strings.Contains(handler, p) {
			return true
		}
	}
	return false
}

// methodLabel is the method label: the standard methods as sent, any
// other token as "other", so a client inventing methods cannot grow the
// label set without bound (the instrumentator would keep each).
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "other"
}

// requestSize is the instrumentator's request size: the Content-Length
// header's value, 0 without one (a chunked body).
func requestSize(r *http.Request) int64 { return max(r.ContentLength, 0) }

// sizeWriter records a response's status, whether it was streamed, and
// its body bytes; Unwrap keeps http.ResponseController working (deadlines,
// hijacking) for the handlers below.
type sizeWriter struct {
	http.ResponseWriter
	status  int
	wrote   bool
	flushed bool
	n       int64
}

func (w *sizeWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *sizeWriter) Write(b []byte) (int, error) {
	w.wrote = true
	n, err := w.ResponseWriter.Write(b)
	w.n += int64(n)
	return n, err
}

// Flush marks the response as streamed.
func (w *sizeWriter) Flush() {
	w.flushed = true
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// FlushError is Flush for http.ResponseController.
func (w *sizeWriter) FlushError() error {
	w.flushed = true
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Hijack marks the connection as taken over (a stream that writes its
// events to the socket itself).
func (w *sizeWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.flushed = true
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

func (w *sizeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// responseSize is the instrumentator's response size: the Content-Length
// the response declared, else 0. Starlette declares it on every complete
// body and never on a stream; a handler here that wrote a whole body
// without declaring it is counted at its length, a streamed one
// (flushed, hijacked or text/event-stream) at 0.
func (w *sizeWriter) responseSize() int64 {
	if cl := w.Header().Get("Content-Length"); cl != "" {
		if n, err := strconv.ParseInt(cl, 10, 64); err == nil {
			return n
		}
	}
	if w.flushed || strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
		return 0
	}
	return w.n
}
