package events

import (
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/mocker-server/mocker-server/internal/engine"
)

func TestEncodeFPM_HeldBlocksAppearOnlyWhileHeld(t *testing.T) {
	for _, held := range []int{0, 300} {
		var m map[string]any
		b := EncodeFPM(nil, "w:1", engine.ForwardPassSnapshot{CounterID: 3, NumHeldBlocks: held})
		if err := msgpack.Unmarshal(b, &m); err != nil {
			t.Fatalf("held %d: %v", held, err)
		}
		got, ok := m["num_held_blocks"]
		switch {
		case held == 0 && (ok || len(m) != 7):
			t.Errorf("no hold: keys %v, want the 7 usual ones", m)
		case held > 0 && (!ok || len(m) != 8):
			t.Errorf("held %d: keys %v, want num_held_blocks too", held, m)
		case held > 0:
			if n, _ := got.(uint16); int(n) != held {
				t.Errorf("num_held_blocks = %v (%T), want %d", got, got, held)
			}
		}
	}
}
