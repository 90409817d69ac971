package worker

import (
	"sync/atomic"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// A killed worker publishes nothing: its engines' sinks are gated by the
// worker's publishing switch, which Kill turns off before the engines stop
// (so the aborts of their last requests are not announced either) and
// Restart turns back on. The publishers themselves stay open, which is
// what lets a restarted worker continue its KV-event sequence numbers and
// keep answering replay requests for what it published before.

type gatedKVSink struct {
	sink engine.KVEventSink
	on   *atomic.Bool
}

func (g gatedKVSink) PublishKVEvents(b engine.KVEventBatch) {
	if g.on.Load() {
		g.sink.PublishKVEvents(b)
	}
}

type gatedFPMSink struct {
	sink engine.FPMSink
	on   *atomic.Bool
}

func (g gatedFPMSink) PublishFPM(s engine.ForwardPassSnapshot) {
	if g.on.Load() {
		g.sink.PublishFPM(s)
	}
}
