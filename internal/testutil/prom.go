package testutil

import (
	"bytes"
	"io"
	"math"
	"net/http"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Exposition is one scraped Prometheus text exposition.
type Exposition struct {
	Header   http.Header
	Raw      []byte
	Families map[string]*dto.MetricFamily
}

// Scrape GETs url (a /metrics URL) with client (nil: http.DefaultClient),
// with "Authorization: Bearer key" when key is not "", and parses the
// answer. Anything but a 200 with a parsable exposition fails the test.
func Scrape(t testing.TB, client *http.Client, url, key string) *Exposition {
	t.Helper()
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading %s: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", url, resp.Status, raw)
	}
	return &Exposition{Header: resp.Header, Raw: raw, Families: ParseExposition(t, raw)}
}

// ParseExposition parses a Prometheus text exposition with the classic
// name rules (which every vllm:*, sglang:* and mocker_* name follows, and
// which older scrapers require), failing the test when it does not parse.
func ParseExposition(t testing.TB, raw []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("parsing the exposition: %v\n%s", err, raw)
	}
	return fams
}

// Series returns the samples of family name whose labels include every
// name=value pair of want.
func (e *Exposition) Series(name string, want map[string]string) []*dto.Metric {
	f := e.Families[name]
	if f == nil {
		return nil
	}
	var out []*dto.Metric
next:
	for _, m := range f.GetMetric() {
		for k, v := range want {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == k && l.GetValue() == v {
					found = true
					break
				}
			}
			if !found {
				continue next
			}
		}
		out = append(out, m)
	}
	return out
}

// Value sums the counter, gauge or untyped values of the matching series;
// NaN when no series matches.
func (e *Exposition) Value(name string, want map[string]string) float64 {
	ms := e.Series(name, want)
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
