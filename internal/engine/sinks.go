package engine

import (
	"time"

	"github.com/mocker-server/mocker-server/internal/kv"
)

// KVEventBatch is every KV event one pass of one DP rank produced, in
// production order. A pass without events produces no batch.
type KVEventBatch struct {
	// Rank is the DP rank that produced the batch.
	Rank int
	// Time is the engine clock reading when the batch was built: the pass
	// start (events go out before the pass's tokens, as in vLLM), or the
	// time of a prefix-cache reset.
	Time time.Time
	// Events are the engine-neutral records produced by internal/kv.
	Events []kv.Event
}

// KVEventSink receives KV event batches. PublishKVEvents is called on the
// engine goroutine and must not block on I/O: implementations queue the batch
// (dropping and counting it when their queue is full) and return.
type KVEventSink interface {
	PublishKVEvents(batch KVEventBatch)
}

// ForwardPassSnapshot is the per-pass forward-pass metrics record; the
// fields and their wire keys are described in docs/metrics.md.
type ForwardPassSnapshot struct {
	Rank                    int
	NumPrefillRequests      int
	SumPrefillTokens        int
	VarPrefillLength        float64
	SumPrefillKVTokens      int
	NumDecodeRequests       int
	SumDecodeKVTokens       int
	VarDecodeKVTokens       float64
	NumQueuedPrefill        int
	SumQueuedPrefillTokens  int
	VarQueuedPrefillLength  float64
	NumQueuedDecode         int
	SumQueuedDecodeKVTokens int
	VarQueuedDecodeKVTokens float64
	// WallTimeSecs is the modeled pass duration after speedup (0 for heartbeats).
	WallTimeSecs float64
	// NumHeldBlocks is the blocks finished prefills hold for their decode
	// side (disaggregated serving; 0 otherwise).
	NumHeldBlocks int
	// CounterID counts messages per rank: 1 for the first, +1 per snapshot
	// including heartbeats.
	CounterID uint64
	// Heartbeat marks an idle heartbeat rather than a pass.
	Heartbeat bool
}

// FPMSpecDecode is a pass's speculative decoding figures for FPM
// consumers: sequences that verified drafts, drafts proposed and accepted.
type FPMSpecDecode struct {
	NumDrafts                   int
	NumDraftTokens, NumAccepted int
}

// FPMSpecSink is an FPMSink that also publishes the speculative decoding
// figures of a pass. With speculative decoding on, the Core calls
// PublishFPMSpec instead of PublishFPM on sinks that implement it; the
// snapshot itself keeps its fields, so consumers without speculative
// decoding see exactly what they saw before.
type FPMSpecSink interface {
	FPMSink
	PublishFPMSpec(s ForwardPassSnapshot, spec FPMSpecDecode)
}

// FPMSink receives forward-pass snapshots. PublishFPM is called on the engine
// goroutine and must not block.
type FPMSink interface {
	PublishFPM(s ForwardPassSnapshot)
}
