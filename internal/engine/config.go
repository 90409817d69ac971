package engine

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/mocker-server/mocker-server/internal/kv"
)

// EngineType names the inference engine whose scheduler a Core imitates.
type EngineType string

// Engine types.
const (
	EngineVLLM   EngineType = "vllm"
	EngineSGLang EngineType = "sglang"
	EngineTRTLLM EngineType = "trtllm"
)

// DefaultBlockSize is the engine's own KV block size when none is set:
// vLLM 64 tokens, TensorRT-LLM 32, SGLang 1 (its page size).
func (t EngineType) DefaultBlockSize() int {
	switch t {
	case EngineSGLang:
		return 1
	case EngineTRTLLM:
		return 32
	default:
		return 64
	}
}

// PreemptionMode chooses the running request a vLLM pass preempts when the
// pool runs out.
type PreemptionMode string

// Preemption modes.
const (
	// PreemptLIFO preempts the most recently admitted request (vLLM's choice).
	PreemptLIFO PreemptionMode = "lifo"
	// PreemptFIFO preempts the oldest running request.
	PreemptFIFO PreemptionMode = "fifo"
)

// SchedulingPolicy orders the waiting queue.
type SchedulingPolicy string

// Scheduling policies.
const (
	// ScheduleFCFS admits in arrival order.
	ScheduleFCFS SchedulingPolicy = "fcfs"
	// SchedulePriority admits by (priority, arrival), lower priority first,
	// and preempts the lowest-priority, latest-arrived request.
	SchedulePriority SchedulingPolicy = "priority"
)

// CapacityPolicy is TensorRT-LLM's capacity scheduler policy: how a trtllm
// engine claims KV blocks for the requests it runs (Config.Capacity).
type CapacityPolicy string

// Capacity scheduler policies (TensorRT-LLM's CapacitySchedulerPolicy,
// lowercased).
const (
	// CapacityGuaranteedNoEvict reserves blocks for a request's prompt and
	// whole output at admission, so running requests never run short and
	// nothing is preempted (TensorRT-LLM's default).
	CapacityGuaranteedNoEvict CapacityPolicy = "guaranteed_no_evict"
	// CapacityMaxUtilization admits a request when its prompt fits and
	// pauses (preempts, freeing its blocks) a running request when
	// decoding runs short, as vLLM does.
	CapacityMaxUtilization CapacityPolicy = "max_utilization"
	// CapacityStaticBatch claims like CapacityGuaranteedNoEvict but admits
	// requests only when nothing is running: no request joins a batch in
	// progress.
	CapacityStaticBatch CapacityPolicy = "static_batch"
)

// TimingModelKind names a pass timing model.
type TimingModelKind string

// Timing models.
const (
	TimingPolynomial   TimingModelKind = "polynomial"
	TimingFixed        TimingModelKind = "fixed"
	TimingInterpolated TimingModelKind = "interpolated"
)

// FinishReason says why a sequence ended; the values are the OpenAI
// finish_reason strings.
type FinishReason string

// Finish reasons.
const (
	FinishStop   FinishReason = "stop"
	FinishLength FinishReason = "length"
	FinishAbort  FinishReason = "abort"
)

// Config is everything one rank's engine needs, and nothing else: the
// process configuration (HTTP, ZMQ, file paths) is converted into it once at
// startup. The zero value is not valid; start from DefaultConfig.
type Config struct {
	Type EngineType

	// NumBlocks is the KV pool size of one rank, BlockSize its block size in
	// tokens; 0 means the engine type's default (DefaultBlockSize).
	NumBlocks int
	BlockSize int

	MaxModelLen          int
	MaxNumSeqs           int
	MaxNumBatchedTokens  int
	EnablePrefixCaching  bool
	EnableChunkedPrefill bool
	Preemption           PreemptionMode
	Scheduling           SchedulingPolicy

	// HashAlgo and HashSeed select the block hash (see kv.NewHasher).
	HashAlgo string
	HashSeed string

	// Timing builds the pass timing model; TimingModel, when non-nil,
	// overrides it (tests).
	Timing      TimingConfig
	TimingModel TimingModel

	// SpeedupRatio divides every modeled duration and DecodeSpeedupRatio
	// divides decode durations again; 0 and +Inf mean "no delay".
	SpeedupRatio       float64
	DecodeSpeedupRatio float64

	// LoRA bounds the adapters of a pass; its zero value serves the base
	// model only.
	LoRA LoRAConfig

	// SGLang configures the SGLang scheduler (Type EngineSGLang only).
	SGLang SGLangConfig

	// Capacity is the TensorRT-LLM capacity scheduler policy (Type
	// EngineTRTLLM only; other types ignore it); "" means
	// CapacityGuaranteedNoEvict.
	Capacity CapacityPolicy

	// Eviction picks the vllm/trtllm pool's eviction backend; "" is lru.
	Eviction EvictionBackend

	// Speculative turns on speculative decoding (speculative.go); its zero
	// value leaves every pass as without it.
	Speculative SpeculativeConfig
	// Offload adds host-memory and disk tiers below the block pool
	// (offload.go); its zero value has none.
	Offload OffloadConfig

	// Transfer is the link disaggregated decode requests pull KV over.
	Transfer TransferConfig

	// Sleep enables vLLM's sleep mode and prices waking up (sleep.go).
	Sleep SleepConfig

	// MM prices and schedules the encoder of multimodal items (encoder.go).
	MM MMConfig
}

// EvictionBackend names the block pool's eviction backend (kv.EvictLRU,
// kv.EvictLineage, kv.EvictMultiLRU), so that callers need not import kv.
type EvictionBackend = kv.EvictionBackend

// LoRAConfig is vLLM's LoRA scheduling configuration as the engine uses it.
type LoRAConfig struct {
	// MaxLoRAs is the number of GPU adapter slots: at most this many
	// distinct adapters run in one pass. 0 disables LoRA.
	MaxLoRAs int
	// MaxCPULoRAs is the size of the CPU adapter cache (≥ MaxLoRAs); 0
	// means MaxLoRAs.
	MaxCPULoRAs int
	// LoadTime is the simulated time to move an adapter into a GPU slot,
	// added to the pass that first runs it there; an adapter that also left
	// the CPU cache costs it twice (read from disk, then copied in).
	LoadTime time.Duration
}

// Enabled reports whether LoRA adapters are served.
func (c LoRAConfig) Enabled() bool { return c.MaxLoRAs > 0 }

// cpuSlots is MaxCPULoRAs with 0 replaced by MaxLoRAs.
func (c LoRAConfig) cpuSlots() int { return max(c.MaxCPULoRAs, c.MaxLoRAs) }

// TimingConfig selects and parameterises the timing model.
type TimingConfig struct {
	// Model is the model kind; "" means interpolated when Profile is set,
	// else polynomial.
	Model TimingModelKind
	// FixedPrefillMs and FixedDecodeMs are the fixed model's constants.
	FixedPrefillMs float64
	FixedDecodeMs  float64
	// Jitter adds per-token prefill cost, seeded jitter and a load factor
	// to the fixed model (JitteredFixedTiming); zero adds nothing.
	Jitter FixedJitter
	// Profile is the interpolated model's measured data, loaded once by
	// the caller and shared read-only by every rank.
	Profile *Profile
}

// DefaultConfig returns vLLM's defaults as the mock uses them.
func DefaultConfig() Config {
	return Config{
		Type:                 EngineVLLM,
		NumBlocks:            16384,
		MaxModelLen:          32768,
		MaxNumSeqs:           256,
		MaxNumBatchedTokens:  8192,
		EnablePrefixCaching:  true,
		EnableChunkedPrefill: true,
		Preemption:           PreemptLIFO,
		Scheduling:           ScheduleFCFS,
		HashAlgo:             "xxh3",
		Timing:               TimingConfig{Model: TimingPolynomial, FixedPrefillMs: 20, FixedDecodeMs: 10},
		SpeedupRatio:         1,
		DecodeSpeedupRatio:   1,
	}
}

// resolvedBlockSize is BlockSize with 0 replaced by the engine's default.
func (c *Config) resolvedBlockSize() int {
	if c.BlockSize > 0 {
		return c.BlockSize
	}
	return c.Type.DefaultBlockSize()
}

// validate checks the fields the engine relies on; the process
// configuration has already reported user-facing problems, so these are
// programming errors.
func (c *Config) validate() error {
	var errs []error
	if c.NumBlocks < 1 || c.BlockSize < 0 {
		errs = append(errs, fmt.Errorf("num blocks %d and block size %d must be >= 1", c.NumBlocks, c.BlockSize))
	}
	if c.MaxModelLen < 1 || c.MaxNumSeqs < 1 || c.MaxNumBatchedTokens < 1 {
		errs = append(errs, fmt.Errorf("max_model_len %d, max_num_seqs %d and max_num_batched_tokens %d must be >= 1",
			c.MaxModelLen, c.MaxNumSeqs, c.MaxNumBatchedTokens))
	}
	switch c.Type {
	case EngineVLLM, EngineTRTLLM, EngineSGLang:
	default:
		errs = append(errs, fmt.Errorf("unknown engine type %q", c.Type))
	}
	if c.LoRA.MaxLoRAs < 0 || (c.LoRA.MaxCPULoRAs != 0 && c.LoRA.MaxCPULoRAs < c.LoRA.MaxLoRAs) || c.LoRA.LoadTime < 0 {
		errs = append(errs, fmt.Errorf("max_loras %d, max_cpu_loras %d (>= max_loras) and LoRA load time %v must not be negative",
			c.LoRA.MaxLoRAs, c.LoRA.MaxCPULoRAs, c.LoRA.LoadTime))
	}
	switch c.Preemption {
	case PreemptLIFO, PreemptFIFO:
	default:
		errs = append(errs, fmt.Errorf("unknown preemption mode %q", c.Preemption))
	}
	switch c.Scheduling {
	case ScheduleFCFS, SchedulePriority:
	default:
		errs = append(errs, fmt.Errorf("unknown scheduling policy %q", c.Scheduling))
	}
	switch c.Capacity {
	case "", CapacityGuaranteedNoEvict, CapacityMaxUtilization, CapacityStaticBatch:
	default:
		errs = append(errs, fmt.Errorf("unknown capacity scheduler policy %q", c.Capacity))
	}
	if err := c.SGLang.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Speculative.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Offload.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Sleep.validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// NoDelay reports whether a speedup ratio means "no simulated delay"
// (0 and +Inf both do).
func NoDelay(ratio float64) bool { return ratio == 0 || math.IsInf(ratio, 1) }
