package config

import (
	"slices"
	"strings"
	"testing"
)

func TestLoad_KVTransferConfigDefaultsAndRoles(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		args                  []string
		prefill, decode       bool
		engineID, policy      string
		wantWarning           string
		wantDisaggregatedWork bool
	}{
		{"NixlConnector kv_both", []string{"--kv-transfer-config", `{"kv_connector":"NixlConnector","kv_role":"kv_both"}`, "--worker-id", "w1"},
			true, true, "w1", "fail", "", true},
		{"producer only", []string{"--kv-transfer-config", `{"kv_connector":"NixlConnector","kv_role":"kv_producer","engine_id":"e9"}`},
			true, false, "e9", "fail", "", true},
		{"consumer recomputes", []string{"--kv-transfer-config", `{"kv_connector":"NixlConnector","kv_role":"kv_consumer","kv_load_failure_policy":"recompute"}`},
			false, true, "", "recompute", "", true},
		{"other connector warns", []string{"--kv-transfer-config", `{"kv_connector":"LMCacheConnectorV1"}`},
			true, true, "", "fail", `"LMCacheConnectorV1" is simulated like NixlConnector`, true},
		{"transport keys warn", []string{"--kv-transfer-config", `{"kv_connector":"NixlConnector","kv_buffer_device":"cuda","kv_rank":0}`},
			true, true, "", "fail", "accepted, no effect in a simulation: kv_buffer_device, kv_rank", true},
		{"Dynamo prefill", []string{"--disaggregation-mode", "prefill"}, true, false, "", "", "", true},
		{"Dynamo decode", []string{"--disaggregation-mode", "decode"}, false, true, "", "", "", true},
		{"aggregated", nil, false, false, "", "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, warns := mustLoad(t, noEnv(flagOptions(t, tc.args...)))
			if cfg.ServesPrefill() != tc.prefill || cfg.ServesDecode() != tc.decode || cfg.Disaggregated() != tc.wantDisaggregatedWork {
				t.Errorf("prefill %v decode %v disaggregated %v", cfg.ServesPrefill(), cfg.ServesDecode(), cfg.Disaggregated())
			}
			if tc.engineID != "" && cfg.KVEngineID() != tc.engineID {
				t.Errorf("engine id %q, want %q", cfg.KVEngineID(), tc.engineID)
			}
			if tc.policy != "" && string(cfg.KVTransferConfig.KVLoadFailurePolicy) != tc.policy {
				t.Errorf("policy %q, want %q", cfg.KVTransferConfig.KVLoadFailurePolicy, tc.policy)
			}
			if tc.wantWarning != "" && !slices.ContainsFunc(warns, func(w string) bool { return strings.Contains(w, tc.wantWarning) }) {
				t.Errorf("warnings %q, want one containing %q", warns, tc.wantWarning)
			}
		})
	}
}

func TestLoad_KVBytesPerTokenFromTheModelShape(t *testing.T) {
	// Llama 3 8B: 32 layers, 8 KV heads of 128, bfloat16 = 128 KiB a token.
	cfg, _ := mustLoad(t, noEnv(flagOptions(t, "--kv-num-layers", "32", "--kv-num-heads", "8", "--kv-head-dim", "128")))
	if cfg.KVBytesPerToken != 131072 {
		t.Errorf("kv_bytes_per_token = %d, want 131072", cfg.KVBytesPerToken)
	}
	cfg, _ = mustLoad(t, noEnv(flagOptions(t, "--kv-num-layers", "61", "--kv-num-heads", "1", "--kv-head-dim", "576", "--kv-dtype", "fp8")))
	if cfg.KVBytesPerToken != 61*2*576 {
		t.Errorf("kv_bytes_per_token = %d, want %d", cfg.KVBytesPerToken, 61*2*576)
	}
}

func TestLoad_DisaggregationProblems(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"connector missing", []string{"--kv-transfer-config", `{"kv_role":"kv_both"}`}, "kv_transfer_config.kv_connector is required"},
		{"bad role", []string{"--kv-transfer-config", `{"kv_connector":"NixlConnector","kv_role":"kv_everything"}`}, "kv_transfer_config.kv_role"},
		{"bad policy", []string{"--kv-transfer-config", `{"kv_connector":"NixlConnector","kv_load_failure_policy":"retry"}`}, "kv_transfer_config.kv_load_failure_policy"},
		{"not JSON", []string{"--kv-transfer-config", `{kv_connector`}, "--kv-transfer-config: invalid JSON: invalid character 'k'"},
		{"shape and bytes disagree", []string{"--kv-num-layers", "32", "--kv-num-heads", "8", "--kv-head-dim", "128", "--kv-bytes-per-token", "5"},
			"--kv-bytes-per-token 5 disagrees with kv_model_shape (131072); set one of them"},
		{"incomplete shape", []string{"--kv-num-layers", "32"}, "kv_model_shape.num_kv_heads must be >= 1, got 0"},
		{"bootstrap port on an aggregated worker", []string{"--bootstrap-port", "7000"}, "--bootstrap-port needs a prefill worker (--disaggregation-mode prefill or --kv-transfer-config)"},
		{"bad worker type", []string{"--disaggregation-mode", "both"}, "Invalid --disaggregation-mode 'both'. Must be 'aggregated', 'prefill', or 'decode'."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			probs := problemsOf(t, noEnv(flagOptions(t, tc.args...)))
			if !slices.ContainsFunc(probs, func(p string) bool { return strings.Contains(p, tc.want) }) {
				t.Errorf("problems %q, want one containing %q", probs, tc.want)
			}
		})
	}
}

func TestLoad_ConnectorHoldTimeoutFollowsVLLM(t *testing.T) {
	conn := []string{"--kv-transfer-config", `{"kv_connector":"NixlConnector"}`}
	cfg, _ := mustLoad(t, noEnv(flagOptions(t, conn...)))
	if cfg.HandoffSessionTimeoutMs != 480000 {
		t.Errorf("connector default timeout %d ms, want vLLM's 480 s", cfg.HandoffSessionTimeoutMs)
	}
	opts := flagOptions(t, conn...)
	opts.LookupEnv = func(k string) (string, bool) { return "30", k == "VLLM_NIXL_ABORT_REQUEST_TIMEOUT" }
	if cfg, _ := mustLoad(t, opts); cfg.HandoffSessionTimeoutMs != 30000 {
		t.Errorf("timeout %d ms, want VLLM_NIXL_ABORT_REQUEST_TIMEOUT=30 s", cfg.HandoffSessionTimeoutMs)
	}
	opts.LookupEnv = func(k string) (string, bool) { return "soon", k == "VLLM_NIXL_ABORT_REQUEST_TIMEOUT" }
	if probs := problemsOf(t, opts); !slices.ContainsFunc(probs, func(p string) bool { return strings.Contains(p, "VLLM_NIXL_ABORT_REQUEST_TIMEOUT") }) {
		t.Errorf("problems %q, want the bad environment value named", probs)
	}
	if cfg, _ := mustLoad(t, noEnv(flagOptions(t, append(conn, "--handoff-session-timeout-ms", "5")...))); cfg.HandoffSessionTimeoutMs != 5 {
		t.Errorf("explicit timeout %d ms, want 5", cfg.HandoffSessionTimeoutMs)
	}
	if cfg, _ := mustLoad(t, noEnv(flagOptions(t, "--disaggregation-mode", "prefill"))); cfg.HandoffSessionTimeoutMs != 300000 {
		t.Errorf("Dynamo prefill timeout %d ms, want Dynamo's 300 s", cfg.HandoffSessionTimeoutMs)
	}
}
