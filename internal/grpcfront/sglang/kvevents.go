package sglang

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	zmq "github.com/pebbe/zmq4"
	"github.com/vmihailenco/msgpack/v5"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/mocker-server/mocker-server/internal/grpcfront/sglang/sglangpb"
)

// kvPoll is how often the subscriber checks whether the call ended while
// no batch arrives.
const kvPoll = 100 * time.Millisecond

// SubscribeKvEvents bridges the worker's KV events of DP rank 0 to a
// server stream, as SGLang's servicer does: it subscribes to the ZMQ PUB
// socket the events already go to and converts every batch, numbered with
// the publisher's own sequence numbers. Like SGLang's, it streams live
// events only (start_sequence_number does not replay; the ZMQ replay
// socket does), and without KV events it answers UNIMPLEMENTED.
func (sv *Service) SubscribeKvEvents(_ *pb.SubscribeKvEventsRequest, stream pb.SglangScheduler_SubscribeKvEventsServer) error {
	if sv.opts.KVEndpoint == "" {
		return status.Error(codes.Unimplemented, `KV cache events not enabled. Start the server with --kv-events-config '{"enable_kv_cache_events":true,"publisher":"zmq"}'`)
	}
	ctx := stream.Context()
	sub, err := zmq.NewSocket(zmq.SUB)
	if err != nil {
		return status.Errorf(codes.Internal, "KV events subscriber: %v", err)
	}
	defer sub.Close()
	_ = sub.SetLinger(0)
	if err := sub.SetSubscribe(sv.opts.KVTopic); err != nil {
		return status.Errorf(codes.Internal, "KV events subscriber: %v", err)
	}
	if err := sub.Connect(connectable(sv.opts.KVEndpoint)); err != nil {
		return status.Errorf(codes.Internal, "KV events subscriber: connect %s: %v", sv.opts.KVEndpoint, err)
	}
	// Headers now, so the client's call returns before the first batch.
	if err := stream.SendHeader(metadata.MD{}); err != nil {
		return err
	}
	poller := zmq.NewPoller()
	poller.Add(sub, zmq.POLLIN)
	var nextID uint64
	for ctx.Err() == nil {
		ready, err := poller.Poll(kvPoll)
		if err != nil {
			return status.Errorf(codes.Internal, "KV events subscriber: %v", err)
		}
		if len(ready) == 0 {
			continue
		}
		frames, err := sub.RecvMessageBytes(zmq.DONTWAIT)
		if err != nil || len(frames) < 2 {
			continue
		}
		seqFrame, payload := frames[len(frames)-2], frames[len(frames)-1]
		if len(seqFrame) != 8 {
			continue
		}
		batch, err := decodeKVBatch(payload, &nextID)
		if err != nil {
			sv.log.Warn("SubscribeKvEvents: undecodable batch", "err", err)
			continue
		}
		batch.SequenceNumber = binary.BigEndian.Uint64(seqFrame)
		if err := stream.Send(batch); err != nil {
			return err
		}
	}
	return nil
}

// connectable turns a bound endpoint's wildcard host into loopback.
func connectable(ep string) string {
	return strings.NewReplacer("*", "127.0.0.1", "0.0.0.0", "127.0.0.1", "[::]", "[::1]").Replace(ep)
}

// decodeKVBatch converts one msgpack batch [ts, events, dp_rank] (array-
// or map-encoded events) into a KvEventBatch; event ids continue from
// *nextID.
func decodeKVBatch(payload []byte, nextID *uint64) (*pb.KvEventBatch, error) {
	// Walk the payload first: a declared length the bytes cannot hold
	// fails here, before the decoder allocates for it, so memory stays
	// bounded by the payload's size.
	if err := msgpack.NewDecoder(bytes.NewReader(payload)).Skip(); err != nil {
		return nil, err
	}
	var raw []any
	if err := msgpack.Unmarshal(payload, &raw); err != nil {
		return nil, err
	}
	if len(raw) < 2 {
		return nil, fmt.Errorf("batch has %d fields", len(raw))
	}
	b := &pb.KvEventBatch{}
	b.Timestamp, _ = toFloat(raw[0])
	if len(raw) > 2 && raw[2] != nil {
		if r, ok := toInt(raw[2]); ok {
			rank := int32(r)
			b.DpRank = &rank
		}
	}
	events, _ := raw[1].([]any)
	for _, ev := range events {
		e, err := decodeKVEvent(ev)
		if err != nil {
			return nil, err
		}
		*nextID++
		e.EventId = *nextID
		b.Events = append(b.Events, e)
	}
	return b, nil
}

// kvEvent is one event's fields, from either encoding.
type kvEvent struct {
	kind      string
	hashes    []any
	parent    any
	tokens    []any
	blockSize int64
	loraID    any
}

func decodeKVEvent(v any) (*pb.KvCacheEvent, error) {
	var e kvEvent
	switch x := v.(type) {
	case []any: // ["BlockStored", hashes, parent, tokens, block_size, lora_id, medium, lora_name]
		if len(x) == 0 {
			return nil, fmt.Errorf("empty event")
		}
		e.kind, _ = x[0].(string)
		if e.kind == "BlockStored" && len(x) >= 6 {
			e.hashes, _ = x[1].([]any)
			e.parent = x[2]
			e.tokens, _ = x[3].([]any)
			e.blockSize, _ = toInt(x[4])
			e.loraID = x[5]
		} else if e.kind == "BlockRemoved" && len(x) >= 2 {
			e.hashes, _ = x[1].([]any)
		}
	case map[string]any:
		e.kind, _ = x["type"].(string)
		e.hashes, _ = x["block_hashes"].([]any)
		e.parent = x["parent_block_hash"]
		e.tokens, _ = x["token_ids"].([]any)
		e.blockSize, _ = toInt(x["block_size"])
		e.loraID = x["lora_id"]
	default:
		return nil, fmt.Errorf("event of type %T", v)
	}
	switch e.kind {
	case "BlockStored":
		return storedEvent(&e), nil
	case "BlockRemoved":
		rm := &pb.KvBlocksRemoved{}
		for _, h := range e.hashes {
			v, _ := toInt(h)
			rm.BlockHashes = append(rm.BlockHashes, v)
		}
		return &pb.KvCacheEvent{Data: &pb.KvCacheEvent_Removed{Removed: rm}}, nil
	case "AllBlocksCleared":
		return &pb.KvCacheEvent{Data: &pb.KvCacheEvent_Cleared{Cleared: &pb.KvCacheCleared{}}}, nil
	}
	return nil, fmt.Errorf("unknown event type %q", e.kind)
}

// storedEvent splits a BlockStored's tokens over its blocks, as SGLang's
// servicer does (one KvBlock per hash with that block's tokens).
func storedEvent(e *kvEvent) *pb.KvCacheEvent {
	st := &pb.KvBlocksStored{}
	if p, ok := toInt(e.parent); ok {
		st.ParentBlockHash = &p
	}
	var lora *int64
	if l, ok := toInt(e.loraID); ok {
		lora = &l
	}
	bs := int(e.blockSize)
	for i, h := range e.hashes {
		v, _ := toInt(h)
		blk := &pb.KvBlock{BlockHash: v, BlockSize: int32(bs), LoraId: lora}
		for j := i * bs; j < (i+1)*bs && j < len(e.tokens); j++ {
			t, _ := toInt(e.tokens[j])
			blk.TokenIds = append(blk.TokenIds, uint32(t))
		}
		st.Blocks = append(st.Blocks, blk)
	}
	return &pb.KvCacheEvent{Data: &pb.KvCacheEvent_Stored{Stored: st}}
}

// toInt reads a msgpack integer of any width as int64 (uint64 hashes keep
// their bits, as SGLang's signed page hashes do).
func toInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		return int64(x), true
	}
	return 0, false
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	}
	if i, ok := toInt(v); ok {
		return float64(i), true
	}
	return 0, false
}
