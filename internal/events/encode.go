package events

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/kv"
)

// The msgpack encoders below are hand-written appends rather than
// vmihailenco/msgpack with UseCompactInts: the layout is fixed (field order,
// smallest integer forms, float64 always), the output is byte-exact with
// vLLM's msgspec encoder (the golden bytes in encode_test.go), and appending into a
// reused buffer does not allocate. Keys and constant values are
// pre-encoded byte strings.

// Encoding selects how events are written: vLLM's tagged maps or the older
// positional arrays some consumers still expect (docs/kv-events.md).
type Encoding uint8

const (
	// EncodingMap writes each event as a map keyed by field name (default).
	EncodingMap Encoding = iota
	// EncodingArray writes each event as the legacy positional array.
	EncodingArray
)

// ParseEncoding maps kv_events_encoding ("map", "array"; "" = map).
func ParseEncoding(s string) (Encoding, error) {
	switch s {
	case "", "map":
		return EncodingMap, nil
	case "array":
		return EncodingArray, nil
	}
	return 0, fmt.Errorf("unknown kv_events_encoding %q (want map or array)", s)
}

// String returns the configuration name of the encoding.
func (e Encoding) String() string {
	if e == EncodingArray {
		return "array"
	}
	return "map"
}

// UnixSeconds returns t as float64 Unix seconds, the batch ts.
func UnixSeconds(t time.Time) float64 {
	return float64(t.Unix()) + float64(t.Nanosecond())/1e9
}

// Pre-encoded msgpack fragments (fixstr header + bytes).
const (
	mpNil = 0xc0

	kType         = "\xa4type"
	kBlockHashes  = "\xacblock_hashes"
	kParent       = "\xb1parent_block_hash"
	kTokenIDs     = "\xa9token_ids"
	kBlockSize    = "\xaablock_size"
	kLoraID       = "\xa7lora_id"
	kMedium       = "\xa6medium"
	kLoraName     = "\xa9lora_name"
	kExtraKeys    = "\xaaextra_keys"
	kGroupIdx     = "\xa9group_idx"
	kSpecKind     = "\xb2kv_cache_spec_kind"
	vStored       = "\xabBlockStored"
	vRemoved      = "\xacBlockRemoved"
	vCleared      = "\xb0AllBlocksCleared"
	vGPU          = "\xa3GPU"
	vFullAttn     = "\xaefull_attention"
	storedMapHead = "\x8b" + kType + vStored  // map(11), type
	removedMapHd  = "\x84" + kType + vRemoved // map(4), type
	clearedMap    = "\x81" + kType + vCleared // map(1), type
	storedArrHead = "\x98" + vStored          // array(8), tag
	removedArrHd  = "\x93" + vRemoved         // array(3), tag
	clearedArr    = "\x91" + vCleared         // array(1), tag
	storedMapTail = kGroupIdx + "\x00" + kSpecKind + vFullAttn
	removedMapTl  = kGroupIdx + "\x00"
)

// EncodeBatch appends the msgpack batch [ts, events, rank] in the given
// encoding to dst and returns the extended slice.
func EncodeBatch(dst []byte, ts float64, events []kv.Event, rank int, enc Encoding) []byte {
	dst = append(dst, 0x93)
	dst = appendFloat64(dst, ts)
	dst = appendArrayHeader(dst, len(events))
	for i := range events {
		dst = EncodeEvent(dst, &events[i], enc)
	}
	return appendInt(dst, int64(rank))
}

// EncodeEvent appends one event, with the fields in vLLM's order.
func EncodeEvent(dst []byte, e *kv.Event, enc Encoding) []byte {
	switch e.Kind {
	case kv.Stored:
		if enc == EncodingArray {
			dst = append(dst, storedArrHead...)
			dst = appendHashes(dst, e.BlockHashes, e.SignedHashes)
			dst = appendParent(dst, e)
			dst = appendTokens(dst, e.TokenIDs)
			dst = appendInt(dst, int64(e.BlockSize))
			dst = appendLoRAID(dst, e)
			dst = appendMedium(dst, e)
			return appendLoRAName(dst, e)
		}
		dst = append(dst, storedMapHead...)
		dst = append(dst, kBlockHashes...)
		dst = appendHashes(dst, e.BlockHashes, e.SignedHashes)
		dst = append(dst, kParent...)
		dst = appendParent(dst, e)
		dst = append(dst, kTokenIDs...)
		dst = appendTokens(dst, e.TokenIDs)
		dst = append(dst, kBlockSize...)
		dst = appendInt(dst, int64(e.BlockSize))
		dst = append(dst, kLoraID...)
		dst = appendLoRAID(dst, e)
		dst = append(dst, kMedium...)
		dst = appendMedium(dst, e)
		dst = append(dst, kLoraName...)
		dst = appendLoRAName(dst, e)
		dst = append(dst, kExtraKeys...)
		dst = appendExtraKeys(dst, e)
		return append(dst, storedMapTail...)
	case kv.Removed:
		if enc == EncodingArray {
			dst = append(dst, removedArrHd...)
			dst = appendHashes(dst, e.BlockHashes, e.SignedHashes)
			return appendMedium(dst, e)
		}
		dst = append(dst, removedMapHd...)
		dst = append(dst, kBlockHashes...)
		dst = appendHashes(dst, e.BlockHashes, e.SignedHashes)
		dst = append(dst, kMedium...)
		dst = appendMedium(dst, e)
		return append(dst, removedMapTl...)
	case kv.AllCleared:
		if enc == EncodingArray {
			return append(dst, clearedArr...)
		}
		return append(dst, clearedMap...)
	}
	panic(fmt.Sprintf("events: unknown kv event kind %d", e.Kind))
}

// appendMedium writes the event's medium: "GPU" for the pool's own events,
// the tier's medium for an offload tier's.
func appendMedium(dst []byte, e *kv.Event) []byte {
	if e.Medium == "" {
		return append(dst, vGPU...)
	}
	return appendString(dst, string(e.Medium))
}

// appendLoRAID writes the event's adapter id, nil for the base model.
func appendLoRAID(dst []byte, e *kv.Event) []byte {
	if e.Adapter.ID == 0 {
		return append(dst, mpNil)
	}
	return appendInt(dst, int64(e.Adapter.ID))
}

// appendLoRAName writes the event's adapter name, nil for the base model.
func appendLoRAName(dst []byte, e *kv.Event) []byte {
	if e.Adapter.Name == "" {
		return append(dst, mpNil)
	}
	return appendString(dst, e.Adapter.Name)
}

func appendParent(dst []byte, e *kv.Event) []byte {
	if !e.HasParent {
		return append(dst, mpNil)
	}
	return appendHash(dst, e.ParentBlockHash, e.SignedHashes)
}

func appendHashes(dst []byte, hs []uint64, signed bool) []byte {
	dst = appendArrayHeader(dst, len(hs))
	for _, h := range hs {
		dst = appendHash(dst, h, signed)
	}
	return dst
}

// appendHash writes a block hash as vLLM does (unsigned) or, for SGLang's
// page hashes, as the signed int64 it sends.
func appendHash(dst []byte, h uint64, signed bool) []byte {
	if signed {
		return appendInt(dst, int64(h))
	}
	return appendUint(dst, h)
}

func appendTokens(dst []byte, ts []uint32) []byte {
	dst = appendArrayHeader(dst, len(ts))
	// One capacity check for the worst case (5 bytes per id), then plain
	// indexed writes: token ids dominate the payload.
	dst = slices.Grow(dst, 5*len(ts))
	n := len(dst)
	buf := dst[:n+5*len(ts)]
	for _, t := range ts {
		switch {
		case t <= 0x7f:
			buf[n] = byte(t)
			n++
		case t <= math.MaxUint8:
			buf[n], buf[n+1] = 0xcc, byte(t)
			n += 2
		case t <= math.MaxUint16:
			buf[n], buf[n+1], buf[n+2] = 0xcd, byte(t>>8), byte(t)
			n += 3
		default:
			buf[n] = 0xce
			binary.BigEndian.PutUint32(buf[n+1:], t)
			n += 5
		}
	}
	return buf[:n]
}

// appendExtraKeys writes one entry per block: null, or the block's keys in
// vLLM's order: the adapter name, the multimodal (identifier, offset)
// pairs, then the salt.
func appendExtraKeys(dst []byte, e *kv.Event) []byte {
	if e.Medium != "" {
		// An offload tier's BlockStored leaves extra_keys at vLLM's
		// default, None, as its offloading connector does.
		return append(dst, mpNil)
	}
	n := len(e.BlockHashes)
	dst = appendArrayHeader(dst, n)
	for i := range n {
		var strs []string
		var mm []kv.MMKey
		if i < len(e.ExtraKeys) {
			strs = e.ExtraKeys[i]
		}
		if i < len(e.MMKeys) {
			mm = e.MMKeys[i]
		}
		if strs == nil && len(mm) == 0 {
			dst = append(dst, mpNil)
			continue
		}
		dst = appendArrayHeader(dst, len(strs)+len(mm))
		if len(mm) > 0 && e.Adapter.Name != "" && len(strs) > 0 {
			dst = appendString(dst, strs[0])
			strs = strs[1:]
		}
		for _, k := range mm {
			dst = appendArrayHeader(dst, 2)
			dst = appendString(dst, k.Identifier)
			dst = appendInt(dst, int64(k.Offset))
		}
		for _, s := range strs {
			dst = appendString(dst, s)
		}
	}
	return dst
}

// FPM keys, pre-encoded; docs/metrics.md lists them in order.
const (
	fpmHead       = "\x87\xa7version\x01\xa9worker_id"
	kDPRank       = "\xa7dp_rank"
	kCounterID    = "\xaacounter_id"
	kWallTime     = "\xa9wall_time"
	kScheduled    = "\xb2scheduled_requests\x87"
	kQueued       = "\xafqueued_requests\x86"
	kNumPrefill   = "\xb4num_prefill_requests"
	kSumPrefill   = "\xb2sum_prefill_tokens"
	kVarPrefill   = "\xb2var_prefill_length"
	kSumPrefillKV = "\xb5sum_prefill_kv_tokens"
	kNumDecode    = "\xb3num_decode_requests"
	kSumDecodeKV  = "\xb4sum_decode_kv_tokens"
	kVarDecodeKV  = "\xb4var_decode_kv_tokens"
	// With speculative decoding the map gains a key, spec_decode; a rank
	// holding blocks for disaggregated handoffs gains num_held_blocks
	// (docs/disaggregation.md). The header's fixmap size counts them.
	kSpecDecode   = "\xabspec_decode\x83"
	kNumDrafts    = "\xaanum_drafts"
	kDraftTokens  = "\xb0num_draft_tokens"
	kAcceptTokens = "\xb3num_accepted_tokens"
	kHeldBlocks   = "\xafnum_held_blocks"
)

// EncodeFPM appends the msgpack FPM payload (a map of the snapshot's fields,
// see docs/metrics.md) to dst.
func EncodeFPM(dst []byte, workerID string, s engine.ForwardPassSnapshot) []byte {
	return encodeFPM(dst, workerID, s, nil)
}

// EncodeFPMSpec is EncodeFPM with an eighth key, spec_decode, holding a
// pass's speculative decoding figures (docs/speculative-and-offload.md).
func EncodeFPMSpec(dst []byte, workerID string, s engine.ForwardPassSnapshot, spec engine.FPMSpecDecode) []byte {
	return encodeFPM(dst, workerID, s, &spec)
}

func encodeFPM(dst []byte, workerID string, s engine.ForwardPassSnapshot, spec *engine.FPMSpecDecode) []byte {
	// fpmHead starts with the fixmap header of the seven fixed keys; the
	// optional keys raise its size.
	dst = append(dst, fpmHead...)
	dst[len(dst)-len(fpmHead)] = 0x80 | byte(7+boolInt(spec != nil)+boolInt(s.NumHeldBlocks > 0))
	dst = appendString(dst, workerID)
	dst = append(dst, kDPRank...)
	dst = appendInt(dst, int64(s.Rank))
	dst = append(dst, kCounterID...)
	dst = appendUint(dst, s.CounterID)
	dst = append(dst, kWallTime...)
	dst = appendFloat64(dst, s.WallTimeSecs)

	dst = append(dst, kScheduled...)
	dst = append(dst, kNumPrefill...)
	dst = appendInt(dst, int64(s.NumPrefillRequests))
	dst = append(dst, kSumPrefill...)
	dst = appendInt(dst, int64(s.SumPrefillTokens))
	dst = append(dst, kVarPrefill...)
	dst = appendFloat64(dst, s.VarPrefillLength)
	dst = append(dst, kSumPrefillKV...)
	dst = appendInt(dst, int64(s.SumPrefillKVTokens))
	dst = append(dst, kNumDecode...)
	dst = appendInt(dst, int64(s.NumDecodeRequests))
	dst = append(dst, kSumDecodeKV...)
	dst = appendInt(dst, int64(s.SumDecodeKVTokens))
	dst = append(dst, kVarDecodeKV...)
	dst = appendFloat64(dst, s.VarDecodeKVTokens)

	dst = append(dst, kQueued...)
	dst = append(dst, kNumPrefill...)
	dst = appendInt(dst, int64(s.NumQueuedPrefill))
	dst = append(dst, kSumPrefill...)
	dst = appendInt(dst, int64(s.SumQueuedPrefillTokens))
	dst = append(dst, kVarPrefill...)
	dst = appendFloat64(dst, s.VarQueuedPrefillLength)
	dst = append(dst, kNumDecode...)
	dst = appendInt(dst, int64(s.NumQueuedDecode))
	dst = append(dst, kSumDecodeKV...)
	dst = appendInt(dst, int64(s.SumQueuedDecodeKVTokens))
	dst = append(dst, kVarDecodeKV...)
	dst = appendFloat64(dst, s.VarQueuedDecodeKVTokens)
	if spec != nil {
		// Consumers that decode FPM into a fixed struct (msgspec's default)
		// skip the unknown key.
		dst = append(dst, kSpecDecode...)
		dst = append(dst, kNumDrafts...)
		dst = appendInt(dst, int64(spec.NumDrafts))
		dst = append(dst, kDraftTokens...)
		dst = appendInt(dst, int64(spec.NumDraftTokens))
		dst = append(dst, kAcceptTokens...)
		dst = appendInt(dst, int64(spec.NumAccepted))
	}
	if s.NumHeldBlocks > 0 {
		dst = append(dst, kHeldBlocks...)
		dst = appendInt(dst, int64(s.NumHeldBlocks))
	}
	return dst
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// msgpack primitives in msgspec's smallest forms, so the bytes equal what a
// vLLM publisher would send.

func appendUint(dst []byte, v uint64) []byte {
	switch {
	case v <= 0x7f:
		return append(dst, byte(v))
	case v <= math.MaxUint8:
		return append(dst, 0xcc, byte(v))
	case v <= math.MaxUint16:
		return append(dst, 0xcd, byte(v>>8), byte(v))
	case v <= math.MaxUint32:
		return append(dst, 0xce, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
	return binary.BigEndian.AppendUint64(append(dst, 0xcf), v)
}

func appendInt(dst []byte, v int64) []byte {
	switch {
	case v >= 0:
		return appendUint(dst, uint64(v))
	case v >= -32:
		return append(dst, byte(v))
	case v >= math.MinInt8:
		return append(dst, 0xd0, byte(v))
	case v >= math.MinInt16:
		return append(dst, 0xd1, byte(v>>8), byte(v))
	case v >= math.MinInt32:
		return append(dst, 0xd2, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
	return binary.BigEndian.AppendUint64(append(dst, 0xd3), uint64(v))
}

func appendFloat64(dst []byte, f float64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, 0xcb), math.Float64bits(f))
}

func appendString(dst []byte, s string) []byte {
	n := len(s)
	switch {
	case n <= 31:
		dst = append(dst, 0xa0|byte(n))
	case n <= math.MaxUint8:
		dst = append(dst, 0xd9, byte(n))
	case n <= math.MaxUint16:
		dst = append(dst, 0xda, byte(n>>8), byte(n))
	default:
		dst = append(dst, 0xdb, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
	return append(dst, s...)
}

func appendArrayHeader(dst []byte, n int) []byte {
	switch {
	case n <= 15:
		return append(dst, 0x90|byte(n))
	case n <= math.MaxUint16:
		return append(dst, 0xdc, byte(n>>8), byte(n))
	}
	return append(dst, 0xdd, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}
