package testutil

import (
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	zmq "github.com/pebbe/zmq4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Scrape reads a real registry's exposition through a real server, with
// the bearer key when one is given, and sums series by label.
func TestScrapeParsesARealExposition(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:requests_total", Help: "h"}, []string{"model", "rank"})
	reg.MustRegister(c)
	c.WithLabelValues("m", "0").Add(2)
	c.WithLabelValues("m", "1").Add(3)
	c.WithLabelValues("other", "0").Add(7)
	metrics := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		metrics.ServeHTTP(w, r)
	}))
	defer srv.Close()
	e := Scrape(t, srv.Client(), srv.URL+"/metrics", "k")
	if got := e.Value("vllm:requests_total", map[string]string{"model": "m"}); got != 5 {
		t.Errorf("model m = %v, want 5", got)
	}
	if got := e.Value("vllm:requests_total", nil); got != 12 {
		t.Errorf("all series = %v, want 12", got)
	}
	if n := len(e.Series("vllm:requests_total", map[string]string{"rank": "0"})); n != 2 {
		t.Errorf("rank 0 has %d series, want 2", n)
	}
	if got := e.Value("vllm:missing", nil); !math.IsNaN(got) {
		t.Errorf("a missing family = %v, want NaN", got)
	}
	if !strings.Contains(string(e.Raw), `vllm:requests_total{model="other",rank="0"} 7`) {
		t.Errorf("raw exposition:\n%s", e.Raw)
	}
	f := &fakeTB{TB: t}
	if msg := f.run(func(tb testing.TB) { Scrape(tb, srv.Client(), srv.URL+"/metrics", "") }); !strings.Contains(msg, "401") {
		t.Errorf("a refused scrape reported %q", msg)
	}
}

// A subscriber settles, then receives what a real publisher sends on its
// topic; Recv times out with nil and MustRecv fails the test.
func TestZMQSubReceivesPublishedMessages(t *testing.T) {
	pub := NewZMQSocket(t, nil, zmq.PUB, AnyLoopbackPort, true, nil)
	ep := LastEndpoint(t, pub.Sock)
	sub := NewZMQSub(t, nil, ep, false, "kv")
	sub.Settle(300 * time.Millisecond)
	if _, err := pub.Sock.SendMessage("other", "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := pub.Sock.SendMessage("kv", "payload"); err != nil {
		t.Fatal(err)
	}
	msg := sub.MustRecv(5*time.Second, "the kv message")
	if len(msg) != 2 || string(msg[0]) != "kv" || string(msg[1]) != "payload" {
		t.Fatalf("received %q", msg)
	}
	if msg := sub.Recv(50 * time.Millisecond); msg != nil {
		t.Fatalf("received %q from another topic", msg)
	}
	f := &fakeTB{TB: t}
	if got := f.run(func(testing.TB) { sub.t = f; sub.MustRecv(10*time.Millisecond, "nothing") }); !strings.Contains(got, "waiting for nothing") {
		t.Errorf("MustRecv on silence reported %q", got)
	}
	if _, err := OpenZMQSocket(t, nil, zmq.PUB, ep, true, nil); err == nil {
		t.Error("binding a taken endpoint succeeded")
	}
}
