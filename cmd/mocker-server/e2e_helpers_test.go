package main

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pebbe/zmq4"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mocker-server/mocker-server/internal/config"
)

// Helpers shared by the end-to-end tests (metrics_e2e_test.go,
// fpm_e2e_test.go, kvevents_e2e_test.go): the real server started the way
// runServer starts it (productionOptions: Prometheus registry and ZMQ
// publishers wired into every rank), scraping, and bounded polling.

// e2eStartProduction runs serve with productionOptions in the background and
// waits until it listens. The publishers are closed after serve returned
// (engines stopped), exactly as runServer does.
func e2eStartProduction(t *testing.T, cfg *config.Config) *running {
	t.Helper()
	r, err := e2eTryStartProduction(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// e2eTryStartProduction is e2eStartProduction that returns the error of
// opening the ZMQ publishers (a port taken) instead of failing the test, for
// testutil.WithPortRuns to try other ports.
func e2eTryStartProduction(t *testing.T, cfg *config.Config) (*running, error) {
	t.Helper()
	opts, closePubs, err := productionOptions(cfg, io.Discard)
	if err != nil {
		return nil, fmt.Errorf("productionOptions: %w", err)
	}
	opts.ShutdownGrace = 2 * time.Second
	return startWith(t, cfg, opts, closePubs), nil
}

// e2eExposition is one parsed /metrics exposition.
type e2eExposition struct {
	raw      []byte
	families map[string]*dto.MetricFamily
}

func (r *running) e2eScrape(t *testing.T) *e2eExposition {
	t.Helper()
	resp, err := r.client.Get(r.url + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read /metrics: %v", err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics = %d: %s", resp.StatusCode, raw)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("/metrics Content-Type = %q", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, raw)
	}
	return &e2eExposition{raw: raw, families: fams}
}

// series returns the samples of family name whose labels include want.
func (s *e2eExposition) series(name string, want map[string]string) []*dto.Metric {
	f := s.families[name]
	if f == nil {
		return nil
	}
	var out []*dto.Metric
	for _, m := range f.GetMetric() {
		if e2eLabelsMatch(m, want) {
			out = append(out, m)
		}
	}
	return out
}

func e2eLabelsMatch(m *dto.Metric, want map[string]string) bool {
	have := e2eLabelMap(m)
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

func e2eLabelMap(m *dto.Metric) map[string]string {
	have := map[string]string{}
	for _, lp := range m.GetLabel() {
		have[lp.GetName()] = lp.GetValue()
	}
	return have
}

func e2eLabelNames(m *dto.Metric) string {
	var names []string
	for _, lp := range m.GetLabel() {
		names = append(names, lp.GetName())
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// value sums a counter or gauge over the matching series; it returns NaN
// when no series matches.
func (s *e2eExposition) value(name string, want map[string]string) float64 {
	ms := s.series(name, want)
	if len(ms) == 0 {
		return math.NaN()
	}
	var v float64
	for _, m := range ms {
		switch {
		case m.Counter != nil:
			v += m.Counter.GetValue()
		case m.Gauge != nil:
			v += m.Gauge.GetValue()
		case m.Untyped != nil:
			v += m.Untyped.GetValue()
		}
	}
	return v
}

// hist sums a histogram's count and sum over the matching series.
func (s *e2eExposition) hist(name string, want map[string]string) (count uint64, sum float64) {
	for _, m := range s.series(name, want) {
		if m.Histogram != nil {
			count += m.Histogram.GetSampleCount()
			sum += m.Histogram.GetSampleSum()
		}
	}
	return count, sum
}

// e2eZSock is a test-side ZMQ socket with its own context. Sockets are used
// only from the test goroutine.
type e2eZSock struct {
	ctx  *zmq4.Context
	sock *zmq4.Socket
}

// e2eNewZSock creates a socket of type typ and connects (or binds) it to ep.
// Cleanup closes it with linger 0 and terminates its context.
func e2eNewZSock(t *testing.T, typ zmq4.Type, ep string, bind bool, setup func(*zmq4.Socket) error) *e2eZSock {
	t.Helper()
	ctx, err := zmq4.NewContext()
	if err != nil {
		t.Fatal(err)
	}
	s, err := ctx.NewSocket(typ)
	if err != nil {
		ctx.Term()
		t.Fatal(err)
	}
	z := &e2eZSock{ctx: ctx, sock: s}
	t.Cleanup(z.close)
	if err := s.SetLinger(0); err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		if err := setup(s); err != nil {
			t.Fatal(err)
		}
	}
	if bind {
		err = s.Bind(ep)
	} else {
		err = s.Connect(ep)
	}
	if err != nil {
		t.Fatalf("%v %s: %v", typ, ep, err)
	}
	return z
}

func (z *e2eZSock) close() {
	if z.sock != nil {
		z.sock.Close()
		z.sock = nil
		z.ctx.Term()
	}
}

// recv waits up to timeout for one multipart message; nil on timeout.
func (z *e2eZSock) recv(t *testing.T, timeout time.Duration) [][]byte {
	t.Helper()
	poller := zmq4.NewPoller()
	poller.Add(z.sock, zmq4.POLLIN)
	polled, err := poller.Poll(timeout)
	if err != nil {
		t.Fatalf("poll: %v", err)
	}
	if len(polled) == 0 {
		return nil
	}
	msg, err := z.sock.RecvMessageBytes(0)
	if err != nil {
		t.Fatalf("recv: %v", err)
	}
	return msg
}

// num converts a generically decoded msgpack number to float64.
func e2eNum(v any) (float64, bool) {
	switch x := v.(type) {
	case int8:
		return float64(x), true
	case int16:
		return float64(x), true
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case uint8:
		return float64(x), true
	case uint16:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint64:
		return float64(x), true
	case uint:
		return float64(x), true
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// e2eIsInt reports whether v is a generically decoded msgpack integer.
func e2eIsInt(v any) bool {
	switch v.(type) {
	case int8, int16, int32, int64, int, uint8, uint16, uint32, uint64, uint:
		return true
	}
	return false
}

// u64 returns a decoded msgpack integer as uint64 (block hashes).
func e2eU64(v any) (uint64, bool) {
	switch x := v.(type) {
	case uint8:
		return uint64(x), true
	case uint16:
		return uint64(x), true
	case uint32:
		return uint64(x), true
	case uint64:
		return x, true
	case int8:
		return uint64(x), x >= 0
	case int16:
		return uint64(x), x >= 0
	case int32:
		return uint64(x), x >= 0
	case int64:
		return uint64(x), x >= 0
	}
	return 0, false
}
