package replay

import (
	"errors"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func drainSource(t *testing.T, src Source) []Request {
	t.Helper()
	var out []Request
	for {
		r, err := src.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
}

// TestSyntheticSessionsExtendTheirContext checks multi-turn sessions: each
// turn arrives TurnGap after the previous one and its prompt starts with
// the previous prompt followed by the previous turn's output tokens.
func TestSyntheticSessionsExtendTheirContext(t *testing.T) {
	g, err := NewSynthetic(SyntheticOptions{Requests: 7, Rate: 1, Arrival: ArrivalFixed, Input: Dist{Kind: DistFixed, A: 5},
		Output: Dist{Kind: DistFixed, A: 3}, PrefixGroups: 1, PrefixTokens: 4, Turns: 3, TurnGap: 2500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	reqs := drainSource(t, g)
	// Sessions start at 0, 1 s, 2 s; turns 2.5 s apart; the third session
	// has only one turn left of the 7 requests.
	wantArrivals := []time.Duration{0, 1000, 2000, 2500, 3500, 5000, 6000}
	if len(reqs) != len(wantArrivals) {
		t.Fatalf("%d requests, want %d", len(reqs), len(wantArrivals))
	}
	for i, r := range reqs {
		if r.Index != i || r.Arrival != wantArrivals[i]*time.Millisecond {
			t.Errorf("request %d: index %d arrival %v, want %v", i, r.Index, r.Arrival, wantArrivals[i]*time.Millisecond)
		}
	}
	first, second := reqs[0].Prompt, reqs[3].Prompt // session 1, turns 1 and 2
	if len(first) != 9 || len(second) != 9+3+5 {
		t.Fatalf("prompt lengths %d and %d, want 9 and 17", len(first), len(second))
	}
	if !slices.Equal(second[:9], first) || !slices.Equal(second[9:12], outputTokens(3)) {
		t.Error("turn 2 does not extend turn 1's prompt and output")
	}
	if !slices.Equal(reqs[1].Prompt[:4], first[:4]) || slices.Equal(reqs[1].Prompt[4:9], first[4:9]) {
		t.Error("sessions must share the 4-token prefix and nothing else")
	}
}

// TestDistributions checks parsing and the sample means of each kind.
func TestDistributions(t *testing.T) {
	tests := []struct {
		spec string
		mean float64
	}{
		{"100", 100}, {"fixed:7", 7}, {"uniform:100:300", 200}, {"normal:500:50", 500}, {"lognormal:400:200", 400},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			d, err := ParseDist(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			g, _ := NewSynthetic(SyntheticOptions{Requests: 1, Rate: 1, Input: d, Output: d})
			sum := 0
			const n = 20000
			for i := 0; i < n; i++ {
				sum += d.Sample(g.rng)
			}
			if got := float64(sum) / n; math.Abs(got-tt.mean) > 0.02*tt.mean {
				t.Errorf("sample mean %.1f, want %.1f ± 2 %%", got, tt.mean)
			}
		})
	}
	for _, bad := range []string{"", "0", "uniform:5", "uniform:9:3", "gauss:1:2", "normal:a:1", "lognormal:0:1", "empirical:"} {
		if _, err := ParseDist(bad); err == nil {
			t.Errorf("ParseDist(%q) accepted", bad)
		}
	}
	if _, err := parseLengths(stringsReader("12\n# c\n\n30\n"), "f"); err != nil {
		t.Error(err)
	}
	if _, err := parseLengths(stringsReader("12\nx\n"), "f"); err == nil || err.Error() != `f:2: "x" is not a length ≥ 1` {
		t.Errorf("bad empirical line: %v", err)
	}
}

func stringsReader(s string) io.Reader { return strings.NewReader(s) }
