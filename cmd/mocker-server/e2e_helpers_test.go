package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/testutil"
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
	exp      *testutil.Exposition
}

func (r *running) e2eScrape(t *testing.T) *e2eExposition {
	t.Helper()
	e := testutil.Scrape(t, r.client, r.url+"/metrics", "")
	if ct := e.Header.Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("/metrics Content-Type = %q", ct)
	}
	return &e2eExposition{raw: e.Raw, families: e.Families, exp: e}
}

// series returns the samples of family name whose labels include want.
func (s *e2eExposition) series(name string, want map[string]string) []*dto.Metric {
	return s.exp.Series(name, want)
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
	return s.exp.Value(name, want)
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
