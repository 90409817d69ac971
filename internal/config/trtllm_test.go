package config

import (
	"testing"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// TestLoad_TRTLLMCapacityPolicy checks that --trtllm-capacity-scheduler-policy
// reaches the trtllm engine's configuration in every spelling TensorRT-LLM
// uses, that the default is GUARANTEED_NO_EVICT, and that another engine
// type gets no capacity policy (the key is warned about, not applied).
func TestLoad_TRTLLMCapacityPolicy(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want engine.CapacityPolicy
	}{
		{[]string{"--engine-type", "trtllm"}, engine.CapacityGuaranteedNoEvict},
		{[]string{"--engine-type", "trtllm", "--trtllm-capacity-scheduler-policy", "GUARANTEED_NO_EVICT"}, engine.CapacityGuaranteedNoEvict},
		{[]string{"--engine-type", "trtllm", "--trtllm-capacity-scheduler-policy", "MAX_UTILIZATION"}, engine.CapacityMaxUtilization},
		{[]string{"--engine-type", "trtllm", "--trtllm-capacity-scheduler-policy", "static-batch"}, engine.CapacityStaticBatch},
		{[]string{"--extra-engine-args", `{"engine_type": "trtllm", "trtllm": {"capacity_scheduler_policy": "max_utilization"}}`}, engine.CapacityMaxUtilization},
		{[]string{"--trtllm-capacity-scheduler-policy", "max_utilization"}, ""},
		{[]string{"--engine-type", "sglang", "--max-model-len", "8192"}, ""},
	} {
		cfg, _ := mustLoad(t, flagOptions(t, tc.args...))
		ec := cfg.EngineConfig(nil)
		if ec.Capacity != tc.want {
			t.Errorf("%q: engine capacity policy %q, want %q", tc.args, ec.Capacity, tc.want)
		}
		if _, err := engine.NewCore(ec, engine.CoreOptions{}); err != nil {
			t.Errorf("%q: NewCore: %v", tc.args, err)
		}
	}
}
