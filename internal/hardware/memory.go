package hardware

import (
	"errors"
	"fmt"
	"math"
)

// ErrDoesNotFit is wrapped by the KV pool's refusals: the model leaves no
// memory for the cache, or not enough for one request of max_model_len.
var ErrDoesNotFit = errors.New("model does not fit")

// PoolSizing is how an engine divides a GPU's memory into its KV pool.
type PoolSizing int

const (
	// PoolVLLM: requested = total × gpu_memory_utilization; the pool is
	// what the weights, the profiling run's activations and the memory
	// outside PyTorch leave of it (vllm/v1/worker/gpu_worker.py,
	// determine_available_memory).
	PoolVLLM PoolSizing = iota
	// PoolTRTLLM: the pool is free_gpu_memory_fraction (default 0.9) of the
	// memory free once weights, activations and runtime are in place
	// (TensorRT-LLM KvCacheConfig.free_gpu_memory_fraction: "allocate 90%
	// of free GPU memory for KV cache"); GPUMemoryUtilization is that
	// fraction.
	PoolTRTLLM
	// PoolSGLang: the pool is what is available after loading the weights
	// minus total × (1 − mem_fraction_static) (sglang/srt/model_executor/
	// model_runner.py, profile_max_num_token); activations come out of the
	// remainder. GPUMemoryUtilization is mem_fraction_static; 0 takes
	// SGLang's default by TP (SGLangMemFractionStatic).
	PoolSGLang
)

// SGLangMemFractionStatic is SGLang's default mem_fraction_static by
// tensor-parallel size (sglang/srt/server_args.py, ServerArgs.__post_init__,
// v0.4: 0.88 at TP 1, 0.87 at 2, 0.85 at 4, 0.81 at 8, 0.79 at 16).
func SGLangMemFractionStatic(tp int) float64 {
	switch {
	case tp >= 16:
		return 0.79
	case tp >= 8:
		return 0.81
	case tp >= 4:
		return 0.85
	case tp >= 2:
		return 0.87
	}
	return 0.88
}

// MemoryOptions are the memory settings of one rank, as vLLM names them.
type MemoryOptions struct {
	// Sizing is the engine's way of sizing the pool (default vLLM's).
	Sizing PoolSizing
	// GPUMemoryUtilization is the fraction of the GPU's memory the engine
	// may use (vLLM's default 0.9); with PoolTRTLLM the fraction of the
	// free memory for the KV cache, with PoolSGLang mem_fraction_static (0:
	// SGLang's default).
	GPUMemoryUtilization float64
	// MaxModelLen is the longest sequence; one such request must fit.
	MaxModelLen int
	// MaxNumBatchedTokens and MaxNumSeqs size the profiling run whose peak
	// activations vLLM reserves.
	MaxNumBatchedTokens int
	MaxNumSeqs          int
	// BlockSize is tokens per KV block.
	BlockSize int
}

// Memory is one GPU's memory budget in bytes.
type Memory struct {
	Total       int64 // device memory
	Requested   int64 // Total × gpu_memory_utilization
	Weights     int64 // this GPU's share of the weights
	Activations int64 // peak activations of the profiling run
	NonTorch    int64 // CUDA context, graphs, NCCL buffers
	KVCache     int64 // what is left for the KV cache
	// KVBytesPerToken is the KV cache one token takes on this GPU.
	KVBytesPerToken int64
	// Blocks is KVCache ÷ (block size × KVBytesPerToken).
	Blocks int
}

// nonTorchBase is the CUDA context, cuBLAS workspaces and CUDA graphs
// outside PyTorch's allocator (vLLM logs it as non_torch_memory; 0.35 to
// about 1 GiB in its startup logs); nccl adds aiconfigurator's NCCL buffer
// sizes by TP (systems/<gpu>.yaml misc.nccl_mem).
const nonTorchBase = 1 << 30

var ncclMem = map[int]int64{1: 0, 2: 358612992, 4: 411041792, 8: 411041792}

// KVBytesPerToken is the KV cache per token on one GPU: layers × KV heads
// on this GPU × head_dim × 2 (K and V) × dtype bytes; for MLA, the latent
// (kv_lora_rank + rope dims), which every rank keeps whole.
func (m *Model) KVBytesPerToken() int64 {
	s := m.shape
	b := int64(2)
	if m.fp8KV {
		b = 1
	}
	if s.IsMLA() {
		return int64(s.Layers) * int64(s.KVElemsPerTokenLayer()) * b
	}
	kvHeads := max(1, s.KVHeads/m.tp)
	return int64(s.Layers) * int64(kvHeads) * int64(s.HeadDim) * 2 * b
}

// WeightBytes is one GPU's share of the weights: the linear layers in the
// weight precision (1 byte with FP8, half a byte with NVFP4), embeddings
// and LM head in 16 bits, all split by TP.
func (m *Model) WeightBytes() int64 {
	s := m.shape
	embed := int64(s.Vocab) * int64(s.Hidden)
	if !s.TiedEmbed {
		embed *= 2
	}
	linear := s.Params() - embed
	return int64((float64(linear)*m.wPrec.bytes() + float64(embed)*2) / float64(m.tp))
}

// Memory computes the KV pool as the engine sizes it (o.Sizing; vLLM's by
// default: requested memory, total × gpu_memory_utilization, minus
// weights, the profiling run's peak activations and the memory outside
// PyTorch), divided into blocks. It refuses, in the engine's wording, a
// model that leaves nothing for the cache, and with vLLM's one that
// cannot hold one max_model_len request.
func (m *Model) Memory(o MemoryOptions) (Memory, error) {
	s := m.shape
	mem := Memory{Total: m.gpu.MemBytes, KVBytesPerToken: m.KVBytesPerToken()}
	mem.Requested = int64(float64(mem.Total) * o.GPUMemoryUtilization)
	mem.Weights = m.WeightBytes()
	// The profiling run's peak: a max_num_batched_tokens forward pass
	// (hidden states and residual, q/k/v, the MLP's two halves and its
	// output, in 16 bits), then the sampler over max_num_seqs rows (float32
	// logits and their softmax) while the pass's hidden states are still
	// held. The two run one after the other (vLLM's profile_run: _dummy_run,
	// then _dummy_sampler_run), so the peak is the larger, not the sum.
	heads, kvHeads := s.Heads/m.tp, max(1, s.KVHeads/m.tp)
	width := s.Intermediate / m.tp
	if s.IsMoE() {
		width = max(width, s.MoE.TopK*s.MoE.Intermediate/m.tp)
	}
	perToken := 2 * (4*int64(s.Hidden) + int64((heads+2*kvHeads)*s.HeadDim) + 3*int64(width))
	forward := int64(o.MaxNumBatchedTokens) * perToken
	sampler := int64(o.MaxNumBatchedTokens)*2*int64(s.Hidden) + 2*int64(o.MaxNumSeqs)*int64(s.Vocab/m.tp)*4
	mem.Activations = max(forward, sampler)
	mem.NonTorch = nonTorchBase + ncclMem[min(m.tp, 8)]
	gib := func(b int64) float64 { return float64(b) / (1 << 30) }
	switch o.Sizing {
	case PoolTRTLLM:
		mem.Requested = mem.Total
		free := mem.Total - mem.Weights - mem.Activations - mem.NonTorch
		mem.KVCache = int64(float64(free) * o.GPUMemoryUtilization)
		if mem.KVCache <= 0 {
			return mem, fmt.Errorf("%w: no free GPU memory for the KV cache (%s on %s, TP %d: %.2f GiB total; weights %.2f GiB, activations %.2f GiB, runtime %.2f GiB)",
				ErrDoesNotFit, s.Name, m.gpu.Name, m.tp, gib(mem.Total), gib(mem.Weights), gib(mem.Activations), gib(mem.NonTorch))
		}
	case PoolSGLang:
		f := o.GPUMemoryUtilization
		if f <= 0 {
			f = SGLangMemFractionStatic(m.tp)
		}
		mem.Requested = int64(float64(mem.Total) * f)
		mem.KVCache = mem.Requested - mem.Weights - mem.NonTorch
		if mem.KVCache <= 0 {
			// sglang/srt/model_executor/model_runner.py, init_memory_pool.
			return mem, fmt.Errorf("%w: RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "+
				"(%s on %s, TP %d: %.2f GiB static = %.2f GiB × %.2f; weights %.2f GiB, runtime %.2f GiB)",
				ErrDoesNotFit, s.Name, m.gpu.Name, m.tp, gib(mem.Requested), gib(mem.Total), f, gib(mem.Weights), gib(mem.NonTorch))
		}
	default:
		mem.KVCache = mem.Requested - mem.Weights - mem.Activations - mem.NonTorch
	}
	if mem.KVCache <= 0 {
		// vLLM v1, vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory.
		return mem, fmt.Errorf("%w: ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine. "+
			"(%s on %s, TP %d: %.2f GiB requested = %.2f GiB × %.2f; weights %.2f GiB, activations %.2f GiB, non-torch %.2f GiB)",
			ErrDoesNotFit, s.Name, m.gpu.Name, m.tp, gib(mem.Requested), gib(mem.Total), o.GPUMemoryUtilization,
			gib(mem.Weights), gib(mem.Activations), gib(mem.NonTorch))
	}
	bs := int64(max(o.BlockSize, 1))
	mem.Blocks = int(mem.KVCache / (bs * mem.KVBytesPerToken))
	need := int64(o.MaxModelLen) * mem.KVBytesPerToken
	if int64(mem.Blocks)*bs < int64(o.MaxModelLen) {
		est := int64(mem.Blocks) * bs
		return mem, fmt.Errorf("%w: ValueError: To serve at least one request with the models's max seq len (%d), (%.2f GiB KV cache is needed, which is larger than the available KV cache memory (%.2f GiB). "+
			"Based on the available memory, the estimated maximum model length is %d. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
			ErrDoesNotFit, o.MaxModelLen, gib(need), gib(mem.KVCache), est)
	}
	if mem.Blocks > math.MaxInt32 {
		mem.Blocks = math.MaxInt32
	}
	return mem, nil
}
