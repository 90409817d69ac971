package profile

import (
	"path/filepath"
	"testing"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// TestExampleProfile loads the committed H100-like example profile and
// checks it behaves like one: prefill 16–400 ms over 128–16384 tokens,
// decode 6–30 ms over the grid, both monotone along their axes.
func TestExampleProfile(t *testing.T) {
	p, err := Load(filepath.Join("testdata", "profile.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := engine.NewInterpolatedTiming(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.PrefillMs(1024); got != 33.6 {
		t.Errorf("PrefillMs(1024) = %v, want the grid value 33.6", got)
	}
	if got := m.DecodeMs(65536, 1048576, 4096); got != 9.5 {
		t.Errorf("DecodeMs(65536, ·, 4096) = %v, want the grid value 9.5", got)
	}
	prev := 0.0
	for tok := 128; tok <= 16384; tok += 64 {
		v := m.PrefillMs(tok)
		if v < 16 || v > 400 || v < prev {
			t.Fatalf("PrefillMs(%d) = %v: outside 16–400 ms or not monotone (prev %v)", tok, v, prev)
		}
		prev = v
	}
	for kv := 1024; kv <= 1048576; kv *= 2 {
		prevCtx := 0.0
		for ctx := 128; ctx <= 16384; ctx *= 2 {
			v := m.DecodeMs(kv, 1048576, ctx)
			if v < 6 || v > 30 || v < prevCtx {
				t.Fatalf("DecodeMs(%d, ·, %d) = %v: outside 6–30 ms or not monotone", kv, ctx, v)
			}
			prevCtx = v
		}
	}
}
