package events

import (
	"testing"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// The encoders append into a reused buffer without allocating: the
// publisher goroutine encodes every batch and snapshot with them.
func TestEncodersAllocationFree(t *testing.T) {
	events := benchEvents()
	snapshot := engine.ForwardPassSnapshot{NumPrefillRequests: 3, SumPrefillTokens: 3000, VarPrefillLength: 12.5,
		NumDecodeRequests: 120, SumDecodeKVTokens: 250000, WallTimeSecs: 0.031, CounterID: 123456}
	for _, tc := range []struct {
		name   string
		encode func(dst []byte) []byte
	}{
		{"KV batch, map encoding", func(dst []byte) []byte { return EncodeBatch(dst, goldenTS, events, 1, EncodingMap) }},
		{"KV batch, array encoding", func(dst []byte) []byte { return EncodeBatch(dst, goldenTS, events, 1, EncodingArray) }},
		{"FPM snapshot", func(dst []byte) []byte { return EncodeFPM(dst, "worker-0:8000", snapshot) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			buf := tc.encode(nil) // grown once
			if allocs := testing.AllocsPerRun(200, func() { buf = tc.encode(buf[:0]) }); allocs != 0 {
				t.Errorf("%v allocations per encode into a reused buffer, want 0", allocs)
			}
		})
	}
}
