package kv

// EventKind says which KV cache event an Event records.
type EventKind uint8

// The three KV cache events; docs/kv-events.md says when each is produced
// and how it is encoded.
const (
	// Stored announces blocks whose hash became resident with its first copy.
	Stored EventKind = iota + 1
	// Removed announces that the last resident copy of a hash was evicted.
	Removed
	// AllCleared announces a successful prefix-cache reset.
	AllCleared
)

// NumEventKinds is the length of an array indexed by EventKind.
const NumEventKinds = int(AllCleared) + 1

// String returns vLLM's tag for the event kind.
func (k EventKind) String() string {
	switch k {
	case Stored:
		return "BlockStored"
	case Removed:
		return "BlockRemoved"
	case AllCleared:
		return "AllBlocksCleared"
	}
	return "Unknown"
}

// Event is an engine-neutral KV cache event record. It is produced by the
// block pool and encoded by internal/events.
type Event struct {
	Kind EventKind
	// BlockHashes are sequence hashes in block order (Stored, Removed).
	BlockHashes []uint64
	// ParentBlockHash is the sequence hash of the block before the first
	// stored block; valid only when HasParent is true (Stored).
	ParentBlockHash uint64
	HasParent       bool
	// TokenIDs are the stored blocks' tokens, len(BlockHashes)*BlockSize ids (Stored).
	TokenIDs []uint32
	// BlockSize is the engine block size (Stored).
	BlockSize int
	// ExtraKeys has one entry per stored block: nil, or the block's extra
	// keys in vLLM's order: the LoRA adapter's name on every block of an
	// adapter's request, then the cache salt on block 0 of a salted one
	// (Stored).
	ExtraKeys [][]string
	// MMKeys has, when the blocks' request had multimodal items, one entry
	// per stored block: the block's (identifier, offset) keys, which go on
	// the wire between the adapter name and the salt of ExtraKeys (Stored).
	MMKeys [][]MMKey
	// Adapter is the LoRA adapter the blocks were computed under; the zero
	// value (base model) is encoded as nil lora_id and lora_name (Stored).
	Adapter Adapter
	// SignedHashes says the hashes go on the wire as signed 64-bit
	// integers, as SGLang sends its page hashes (the radix cache's events);
	// the bits are the same.
	SignedHashes bool
	// Medium is where the blocks are stored or removed; empty means the
	// GPU pool. Offload tiers record their own medium (Stored, Removed).
	Medium Medium
}

// MediumOrGPU returns the event's medium, MediumGPU when it is empty.
func (e *Event) MediumOrGPU() Medium {
	if e.Medium == "" {
		return MediumGPU
	}
	return e.Medium
}
