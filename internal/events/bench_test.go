package events

import (
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/kv"
)

// benchEvents is one pass with 8 Stored events of 4 blocks × 64 tokens.
func benchEvents() []kv.Event {
	events := make([]kv.Event, 8)
	for i := range events {
		e := kv.Event{Kind: kv.Stored, BlockSize: 64, HasParent: i%2 == 1,
			ParentBlockHash: 0x9e3779b97f4a7c15 + uint64(i), ExtraKeys: make([][]string, 4)}
		for b := range 4 {
			e.BlockHashes = append(e.BlockHashes, 0xcb38e4d7fb2dca5c^uint64(i*4+b)<<7)
		}
		for k := range 4 * 64 {
			e.TokenIDs = append(e.TokenIDs, uint32(1000+i*4096+k*37))
		}
		events[i] = e
	}
	return events
}

func BenchmarkEncodeBatchMap(b *testing.B) {
	events := benchEvents()
	buf := EncodeBatch(nil, goldenTS, events, 0, EncodingMap)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = EncodeBatch(buf[:0], goldenTS, events, 0, EncodingMap)
	}
}

func BenchmarkEncodeBatchArray(b *testing.B) {
	events := benchEvents()
	buf := EncodeBatch(nil, goldenTS, events, 0, EncodingArray)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = EncodeBatch(buf[:0], goldenTS, events, 0, EncodingArray)
	}
}

func BenchmarkEncodeFPM(b *testing.B) {
	s := engine.ForwardPassSnapshot{NumPrefillRequests: 3, SumPrefillTokens: 3000, VarPrefillLength: 12.5,
		NumDecodeRequests: 120, SumDecodeKVTokens: 250000, WallTimeSecs: 0.031, CounterID: 123456}
	buf := EncodeFPM(nil, "worker-0:8000", s)
	b.ReportAllocs()
	for b.Loop() {
		buf = EncodeFPM(buf[:0], "worker-0:8000", s)
	}
}

// BenchmarkPublishKVEvents measures the engine-side cost of handing a
// batch to the publisher (no subscriber; the goroutine drains the queue).
func BenchmarkPublishKVEvents(b *testing.B) {
	p, err := NewKVPublisher(KVPublisherOptions{KVSettings: KVSettings{Endpoint: "inproc://bench",
		Bind: true, BufferSteps: 16, HWM: 1000, MaxQueueSize: 1 << 16, Publish: true}})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	batch := engine.KVEventBatch{Time: time.Unix(1760000000, 0), Events: benchEvents()}
	b.ReportAllocs()
	for b.Loop() {
		p.PublishKVEvents(batch)
	}
	b.ReportMetric(float64(p.Dropped()), "dropped")
}
