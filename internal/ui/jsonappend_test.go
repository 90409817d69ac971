package ui

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

func TestAppendFloat_NullForTimesThatHaveNotHappened(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want string
	}{{math.NaN(), "null"}, {12.345, "12.35"}, {0, "0"}, {1e6, "1000000"}} {
		if got := string(appendFloat(nil, tc.f)); got != tc.want {
			t.Errorf("%v: %s, want %s", tc.f, got, tc.want)
		}
	}
}

// The hand-written engine view is valid JSON with the fields the page reads.
func TestEncodeEngine_IsValidJSON(t *testing.T) {
	hub := NewHub(Options{Name: "w\"1"})
	s := newSimulated(t, hub, 64)
	s.submit(0, "cmpl-\x01odd", 40, 5)
	s.submit(0, "", 40, 200) // no label: its engine id
	s.sim.Run(8)
	s.core.InspectState(s.sim.Clock.Now())
	_, b := hub.encodeEngine()
	var v struct {
		Worker string `json:"worker"`
		Ranks  []struct {
			BlocksRLE string                `json:"blocks_rle"`
			NumBlocks int                   `json:"num_blocks"`
			InUse     int                   `json:"in_use"`
			Running   [][]any               `json:"running"`
			Passes    map[string][]float64  `json:"passes"`
			Latency   map[string][3]float64 `json:"latency"`
		} `json:"ranks"`
		Requests [][]any `json:"requests"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	r := v.Ranks[0]
	if v.Worker != "w\"1" || r.NumBlocks != 64 || len(r.Running) != 1 || len(r.Passes["t"]) != 8 || len(v.Requests) != 2 {
		t.Errorf("decoded %+v", v)
	}
	if got := expandRLE(r.BlocksRLE); len(got) != 64 || string(got) != string(hub.rankView(0).grid) {
		t.Errorf("RLE %q expands to %q, grid %q", r.BlocksRLE, got, hub.rankView(0).grid)
	}
	// Newest first: the running request (no label: its engine id), then the finished one.
	running, finished := v.Requests[0], v.Requests[1]
	if running[5] != "running" || running[6] == nil || running[8] != nil || finished[1+7] == nil || finished[0] != "cmpl-\x01odd" {
		t.Errorf("requests %q: want queue times for both, no e2e for the running one", v.Requests)
	}
}

// expandRLE is the page's decoder (engine.js), written again here.
func expandRLE(s string) []byte {
	var out []byte
	for i := 0; i < len(s); {
		code := s[i]
		i++
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			n = n*10 + int(s[i]-'0')
			i++
		}
		if n == 0 {
			n = 1
		}
		out = append(out, bytes.Repeat([]byte{code}, n)...)
	}
	return out
}
