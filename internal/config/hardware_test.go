package config

import (
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/hardware"
)

// With --hardware the pool and max_model_len follow the model and GPU as in
// vLLM, and every rank gets the hardware model as its timing model.
func TestHardware_SizesPoolAndSetsTiming(t *testing.T) {
	cfg, warns := mustLoad(t, noEnv(flagOptions(t, "--hardware", "h100_sxm", "--model", "meta-llama/Llama-3.1-8B-Instruct")))
	if len(warns) != 0 {
		t.Errorf("warnings %q", warns)
	}
	if cfg.HardwareTiming == nil || cfg.EngineConfig(nil).TimingModel == nil {
		t.Fatal("no hardware timing model")
	}
	if cfg.MaxModelLen != 131072 || cfg.TensorParallelSize != 1 || cfg.GPUMemoryUtilization != 0.9 {
		t.Errorf("max_model_len %d, tp %d, utilization %v", cfg.MaxModelLen, cfg.TensorParallelSize, cfg.GPUMemoryUtilization)
	}
	mem, err := cfg.HardwareTiming.Memory(hwMemoryOptions(cfg))
	if err != nil || cfg.NumGPUBlocks != mem.Blocks || cfg.NumGPUBlocks < 5000 {
		t.Errorf("num_gpu_blocks %d, memory %+v, %v", cfg.NumGPUBlocks, mem, err)
	}
	// Lower utilization, a shorter max_model_len, an explicit pool.
	low, _ := mustLoad(t, noEnv(flagOptions(t, "--hardware", "h100_sxm", "--model", "meta-llama/Llama-3.1-8B-Instruct",
		"--gpu-memory-utilization", "0.5", "--max-model-len", "4096")))
	if low.NumGPUBlocks >= cfg.NumGPUBlocks || low.MaxModelLen != 4096 {
		t.Errorf("utilization 0.5: %d blocks (0.9: %d), max_model_len %d", low.NumGPUBlocks, cfg.NumGPUBlocks, low.MaxModelLen)
	}
	over, _ := mustLoad(t, noEnv(flagOptions(t, "--hardware", "h100_sxm", "--model", "meta-llama/Llama-3.1-8B-Instruct",
		"--num-gpu-blocks-override", "100")))
	if over.NumGPUBlocks != 100 || over.HardwareTiming == nil {
		t.Errorf("override: %d blocks", over.NumGPUBlocks)
	}
}

func hwMemoryOptions(cfg *Config) hardware.MemoryOptions {
	return hardware.MemoryOptions{GPUMemoryUtilization: cfg.GPUMemoryUtilization, MaxModelLen: cfg.MaxModelLen,
		MaxNumBatchedTokens: cfg.MaxNumBatchedTokens, MaxNumSeqs: cfg.MaxNumSeqs, BlockSize: cfg.EffectiveBlockSize()}
}

// Without --hardware the vLLM settings it uses change nothing, and startup
// says so once; the polynomial model stays.
// With --hardware, a wake-up from sleep reloads the model's weights (one
// GPU's share) unless sleep_weights_gb says otherwise.
func TestHardware_SleepReloadsTheModelsWeights(t *testing.T) {
	args := []string{"--hardware", "h100_sxm", "--model", "meta-llama/Llama-3.1-70B-Instruct", "--enable-sleep-mode"}
	for _, c := range []struct {
		extra []string
		want  float64 // GB
	}{
		{[]string{"--tensor-parallel-size", "4"}, -1}, // the model's share: about 141 GB / 4
		{[]string{"--tensor-parallel-size", "4", "--sleep-weights-gb", "3"}, 3},
	} {
		cfg, _ := mustLoad(t, noEnv(flagOptions(t, append(append([]string{}, args...), c.extra...)...)))
		got := cfg.EngineConfig(nil).Sleep.WeightBytes
		want := c.want * 1e9
		if c.want < 0 {
			want = float64(cfg.HardwareTiming.WeightBytes())
			if want < 30e9 || want > 40e9 {
				t.Errorf("70B bf16 at TP 4: %v weight bytes per GPU, want 30–40 GB", want)
			}
		}
		if float64(got) != want {
			t.Errorf("%v: sleep weight bytes %d, want %v", c.extra, got, want)
		}
	}
}

func TestHardware_SettingsWithoutHardwareWarn(t *testing.T) {
	cfg, warns := mustLoad(t, noEnv(flagOptions(t, "--tensor-parallel-size", "4", "--kv-cache-dtype", "fp8")))
	want := "accepted, no effect without --hardware: --tensor-parallel-size, --kv-cache-dtype (docs/hardware.md)"
	if len(warns) != 1 || warns[0] != want {
		t.Errorf("warnings %q, want %q", warns, want)
	}
	if cfg.HardwareTiming != nil || cfg.EngineConfig(nil).TimingModel != nil || cfg.NumGPUBlocks != 16384 {
		t.Errorf("without hardware: timing %v, %d blocks", cfg.HardwareTiming, cfg.NumGPUBlocks)
	}
}

func TestHardware_Problems(t *testing.T) {
	llama := []string{"--model", "meta-llama/Llama-3.1-8B-Instruct"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{append([]string{"--hardware", "h100_sxm", "--timing-model", "fixed"}, llama...), "hardware h100_sxm conflicts with timing_model fixed"},
		{append([]string{"--hardware", "h100_sxm", "--planner-profile-data", "x.npz"}, llama...), "hardware h100_sxm conflicts with planner_profile_data"},
		{append([]string{"--hardware", "h100_sxm", "--tensor-parallel-size", "0"}, llama...), "tensor_parallel_size must be >= 1, got 0"},
		{append([]string{"--hardware", "h100_sxm", "--gpu-memory-utilization", "1.2"}, llama...), "gpu_memory_utilization must be in (0, 1], got 1.2"},
		{append([]string{"--hardware", "h100_sxm", "--dtype", "float32"}, llama...), "hardware h100_sxm: dtype float32: no operator tables for it"},
		{[]string{"--hardware", "h100_sxm"}, `hardware h100_sxm: --model model shape: "mocker-model" is neither a directory with config.json nor a known model id`},
		{append([]string{"--hardware", "h100_sxm", "--max-num-batched-tokens", "65536", "--no-enable-chunked-prefill"}, llama...),
			"requires max_num_batched_tokens (65536) >= max_model_len (131072, meta-llama/Llama-3.1-8B-Instruct's max_position_embeddings; set --max-model-len)"},
	} {
		probs := problemsOf(t, noEnv(flagOptions(t, c.args...)))
		if len(probs) != 1 || !strings.Contains(probs[0], c.want) {
			t.Errorf("%q: problems %q, want one containing %q", c.args, probs, c.want)
		}
	}
}

// Under --engine-type sglang with --hardware, the running-batch limit is
// the one SGLang derives from the pool, not vLLM's max_num_seqs of 256;
// an explicit --max-running-requests or --max-num-seqs still wins.
func TestHardware_SGLangRunningLimitFollowsPool(t *testing.T) {
	base := []string{"--hardware", "h200_sxm", "--model", "meta-llama/Llama-3.3-70B-Instruct", "--tensor-parallel-size", "4",
		"--engine-type", "sglang"}
	cfg, _ := mustLoad(t, noEnv(flagOptions(t, base...)))
	pool := int64(cfg.NumGPUBlocks) * int64(cfg.EffectiveBlockSize())
	// 70B on 4 × H200 in BF16 keeps about a million tokens per rank:
	// pool × 512 / 131072 ≈ 4000 requests, within [2048, 4096].
	want := int(min(pool/2, min(max(pool*512/131072, 2048), 4096)))
	if got := cfg.SGLang.MaxRunningRequests; got != want || got < 2048 || got > 4096 {
		t.Errorf("max_running_requests %d, want %d (pool %d tokens, max_model_len %d)", got, want, pool, cfg.MaxModelLen)
	}
	for _, extra := range [][]string{{"--max-running-requests", "64"}, {"--max-num-seqs", "128"}} {
		c, _ := mustLoad(t, noEnv(flagOptions(t, append(append([]string(nil), base...), extra...)...)))
		if extra[0] == "--max-running-requests" && c.SGLang.MaxRunningRequests != 64 {
			t.Errorf("%v: max_running_requests %d", extra, c.SGLang.MaxRunningRequests)
		}
		if extra[0] == "--max-num-seqs" && c.SGLang.MaxRunningRequests != 0 {
			t.Errorf("%v: max_running_requests %d, want 0 (max_num_seqs applies)", extra, c.SGLang.MaxRunningRequests)
		}
	}
	v, _ := mustLoad(t, noEnv(flagOptions(t, "--hardware", "h200_sxm", "--model", "meta-llama/Llama-3.3-70B-Instruct", "--tensor-parallel-size", "4")))
	if v.SGLang.MaxRunningRequests != 0 {
		t.Errorf("vllm: sglang max_running_requests %d", v.SGLang.MaxRunningRequests)
	}
}

// Under --engine-type vllm with --hardware, max_num_seqs and
// max_num_batched_tokens default to what `vllm serve` picks on that GPU:
// 1024 and 8192 on 70 GiB or more unless it is an A100, else 256 and 2048.
// Explicit values win, the sequence limit stays within the token budget,
// and other engines and runs without --hardware keep the mock's 256 / 8192.
func TestHardware_VLLMBatchDefaultsFollowGPU(t *testing.T) {
	for _, c := range []struct {
		args         []string
		seqs, tokens int
	}{
		{[]string{"--hardware", "h100_sxm"}, 1024, 8192},
		{[]string{"--hardware", "h200_sxm"}, 1024, 8192},
		{[]string{"--hardware", "a100_sxm"}, 256, 2048},
		{[]string{"--hardware", "l40s"}, 256, 2048},
		{[]string{"--hardware", "h100_sxm", "--max-num-seqs", "64"}, 64, 8192},
		{[]string{"--hardware", "a100_sxm", "--max-num-batched-tokens", "16384"}, 256, 16384},
		{[]string{"--hardware", "h100_sxm", "--max-num-batched-tokens", "512"}, 512, 512},
		{[]string{"--hardware", "h100_sxm", "--engine-type", "trtllm"}, 256, 8192},
		{nil, 256, 8192},
	} {
		args := append([]string{"--model", "meta-llama/Llama-3.1-8B-Instruct"}, c.args...)
		cfg, _ := mustLoad(t, noEnv(flagOptions(t, args...)))
		if cfg.MaxNumSeqs != c.seqs || cfg.MaxNumBatchedTokens != c.tokens {
			t.Errorf("%v: max_num_seqs %d, max_num_batched_tokens %d; want %d, %d",
				c.args, cfg.MaxNumSeqs, cfg.MaxNumBatchedTokens, c.seqs, c.tokens)
		}
	}
}

func TestSGLangMaxRunningRequests(t *testing.T) {
	for _, c := range []struct {
		pool int64
		ctx  int
		want int
	}{
		{1_000_000, 131072, 3906}, // 1e6 × 512 / 131072 = 3906
		{300_000, 131072, 2048},   // 1171 → the 2048 floor
		{100_000_000, 4096, 4096}, // the 4096 cap
		{3000, 131072, 1500},      // half the pool's tokens is smaller
	} {
		if got := sglangMaxRunningRequests(c.pool, c.ctx); got != c.want {
			t.Errorf("pool %d, context %d: %d, want %d", c.pool, c.ctx, got, c.want)
		}
	}
}
