package config

import (
	"slices"
	"testing"

	"github.com/mocker-server/mocker-server/internal/engine"
)

func TestEngineConfig_SGLangKeysReachTheEngine(t *testing.T) {
	cfg, warns := mustLoad(t, flagOptions(t, "--engine-type", "sglang", "--max-model-len", "8192", "--schedule-policy", "dfs-weight",
		"--max-running-requests", "7", "--sglang-max-prefill-tokens", "512", "--chunked-prefill-size", "256",
		"--schedule-conservativeness", "0.5", "--sglang-clip-max-new-tokens", "99", "--seed", "42"))
	if len(warns) != 0 {
		t.Errorf("warnings %q", warns)
	}
	got := cfg.EngineConfig(nil)
	want := engine.SGLangConfig{Policy: engine.SGLangDFSWeight, MaxPrefillTokens: 512, ChunkedPrefillSize: 256,
		MaxRunningRequests: 7, ClipMaxNewTokens: 99, ScheduleConservativeness: 0.5, RandomSeed: 42}
	if got.Type != engine.EngineSGLang || got.BlockSize != 1 || got.SGLang != want {
		t.Errorf("engine config %+v, want type sglang, block size 1, %+v", got, want)
	}
	if _, err := engine.NewCore(got, engine.CoreOptions{}); err != nil {
		t.Errorf("NewCore: %v", err)
	}
}

func TestEngineConfig_SchedulePolicyNames(t *testing.T) {
	for _, tc := range []struct {
		flag string
		want engine.SGLangPolicy
	}{
		{"fifo", engine.SGLangFCFS}, {"fcfs", engine.SGLangFCFS}, {"lpm", engine.SGLangLPM},
		{"dfs-weight", engine.SGLangDFSWeight}, {"lof", engine.SGLangLOF}, {"random", engine.SGLangRandom},
	} {
		cfg, _ := mustLoad(t, flagOptions(t, "--engine-type", "sglang", "--max-model-len", "8192", "--sglang-schedule-policy", tc.flag))
		if got := cfg.EngineConfig(nil).SGLang.Policy; got != tc.want {
			t.Errorf("--sglang-schedule-policy %s gives %q, want %q", tc.flag, got, tc.want)
		}
	}
}

func TestLoad_EvictionBackend(t *testing.T) {
	for _, b := range []string{"lru", "lineage", "multi_lru", "multi-lru"} {
		cfg, _ := mustLoad(t, flagOptions(t, "--eviction-backend", b))
		if _, err := engine.NewCore(cfg.EngineConfig(nil), engine.CoreOptions{}); err != nil {
			t.Errorf("%s: NewCore: %v", b, err)
		}
	}
	probs := problemsOf(t, noEnv(flagOptions(t, "--eviction-backend", "fifo")))
	if !slices.ContainsFunc(probs, func(p string) bool {
		return p == "Invalid --eviction-backend 'fifo'. Must be 'lru', 'lineage', or 'multi_lru'."
	}) {
		t.Errorf("problems %q", probs)
	}
}

func TestLoad_WarnsAboutKeysTheEngineDoesNotUse(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"sglang keys under vllm", []string{"--sglang-max-prefill-tokens", "100"},
			[]string{"sglang.max_prefill_tokens applies only to --engine-type sglang; ignored for vllm"}},
		{"eviction backend under sglang", []string{"--engine-type", "sglang", "--max-model-len", "8192", "--eviction-backend", "lineage"},
			[]string{"eviction_backend lineage applies to the vllm and trtllm block pools; sglang's radix cache evicts least recently used leaves"}},
		{"nothing to say", []string{"--engine-type", "sglang", "--max-model-len", "8192", "--sglang-max-prefill-tokens", "100"}, nil},
		{"trtllm keys under vllm", []string{"--trtllm-capacity-scheduler-policy", "max_utilization"},
			[]string{"trtllm.capacity_scheduler_policy applies only to --engine-type trtllm; ignored for vllm"}},
		{"trtllm keys under trtllm", []string{"--engine-type", "trtllm", "--trtllm-capacity-scheduler-policy", "static_batch"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, warns := mustLoad(t, flagOptions(t, tc.args...))
			if !slices.Equal(warns, tc.want) {
				t.Errorf("warnings %q, want %q", warns, tc.want)
			}
		})
	}
}

// A default sglang start does not warn that max_model_len exceeds the pool:
// the default pool holds vllm's default number of tokens whatever the page
// size, and a pool size the user gave is kept.
func TestLoad_SGLangDefaultPoolFitsMaxModelLen(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		wantBlocks int
	}{
		{[]string{"--engine-type", "sglang"}, 262144},
		{[]string{"--engine-type", "sglang", "--sglang-page-size", "64"}, 4096},
		{[]string{"--engine-type", "sglang", "--num-gpu-blocks-override", "100000"}, 100000},
		{[]string{"--engine-type", "vllm"}, 16384},
	} {
		cfg, warns := mustLoad(t, flagOptions(t, tc.args...))
		if len(warns) != 0 {
			t.Errorf("%q: warnings %q", tc.args, warns)
		}
		if cfg.NumGPUBlocks != tc.wantBlocks {
			t.Errorf("%q: num_gpu_blocks = %d, want %d", tc.args, cfg.NumGPUBlocks, tc.wantBlocks)
		}
	}
	cfg, warns := mustLoad(t, flagOptions(t, "--engine-type", "sglang", "--num-gpu-blocks-override", "1000"))
	if len(warns) != 1 || cfg.NumGPUBlocks != 1000 {
		t.Errorf("a small pool the user gave: %d blocks, warnings %q", cfg.NumGPUBlocks, warns)
	}
}
