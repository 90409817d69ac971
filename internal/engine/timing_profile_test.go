package engine

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestProfileValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(p *Profile)
		array   string // "" = valid
		wantMsg string
	}{
		{"valid profile", func(p *Profile) {}, "", ""},
		{"missing prefill_isl", func(p *Profile) { p.PrefillISL = nil }, "prefill_isl", "missing"},
		{"missing prefill_ttft_ms", func(p *Profile) { p.PrefillTTFTMs = nil }, "prefill_ttft_ms", "missing"},
		{"missing decode_active_kv_tokens", func(p *Profile) { p.DecodeActiveKVTokens = nil }, "decode_active_kv_tokens", "missing"},
		{"missing decode_context_length", func(p *Profile) { p.DecodeContextLength = nil }, "decode_context_length", "missing"},
		{"missing decode_itl", func(p *Profile) { p.DecodeITL = nil }, "decode_itl", "missing"},
		{"empty axis", func(p *Profile) { p.PrefillISL = []float64{} }, "prefill_isl", "at least 2"},
		{"one-point axis", func(p *Profile) {
			p.DecodeActiveKVTokens = []float64{1000}
			p.DecodeITL = p.DecodeITL[:1]
		}, "decode_active_kv_tokens", "at least 2"},
		{"repeated axis value", func(p *Profile) { p.DecodeActiveKVTokens[1] = 1000 }, "decode_active_kv_tokens", "strictly increasing"},
		{"decreasing axis", func(p *Profile) { p.DecodeContextLength = []float64{300, 100} }, "decode_context_length", "strictly increasing"},
		{"prefill_ttft_ms too short", func(p *Profile) { p.PrefillTTFTMs = p.PrefillTTFTMs[:2] }, "prefill_ttft_ms", "has 2 values, want 3"},
		{"prefill_ttft_ms too long", func(p *Profile) { p.PrefillTTFTMs = append(p.PrefillTTFTMs, 90) }, "prefill_ttft_ms", "has 4 values, want 3"},
		{"decode_itl missing a row", func(p *Profile) { p.DecodeITL = p.DecodeITL[:2] }, "decode_itl", "has 2 rows, want 3"},
		{"decode_itl short row", func(p *Profile) { p.DecodeITL[2] = []float64{13} }, "decode_itl", "row 2 has 1 values, want 2"},
		{"decode_itl nil row", func(p *Profile) { p.DecodeITL[0] = nil }, "decode_itl", "row 0 has 0 values"},
		{"NaN in prefill_isl", func(p *Profile) { p.PrefillISL[0] = math.NaN() }, "prefill_isl", "finite"},
		{"-Inf in prefill_isl", func(p *Profile) { p.PrefillISL[0] = math.Inf(-1) }, "prefill_isl", "finite"},
		{"+Inf at the end of decode_context_length", func(p *Profile) { p.DecodeContextLength[1] = math.Inf(1) }, "decode_context_length", "finite"},
		{"NaN in prefill_ttft_ms", func(p *Profile) { p.PrefillTTFTMs[2] = math.NaN() }, "prefill_ttft_ms", "finite"},
		{"Inf in decode_itl", func(p *Profile) { p.DecodeITL[1][1] = math.Inf(1) }, "decode_itl", "row 1 element 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := interpTestProfile()
			tc.mutate(p)
			err := p.Validate()
			if tc.array == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			var ae *ProfileArrayError
			if !errors.As(err, &ae) || ae.Array != tc.array {
				t.Errorf("error %q does not name array %q", err, tc.array)
			}
			if !strings.Contains(err.Error(), tc.array) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %q does not mention %q and %q", err, tc.array, tc.wantMsg)
			}
		})
	}
	var nilProfile *Profile
	if nilProfile.Validate() == nil {
		t.Error("nil profile validated")
	}
}
