package main

import (
	"strings"
	"testing"
)

// Bad speculative decoding and offload settings stop the server with one
// clear line and exit status 2.
func TestRun_BadSpeculativeAndOffloadSettingsExitWithStatus2(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"malformed speculative config", []string{"--speculative-config", `{"method":"eagle","num_speculative_tokens":3`},
			"speculative_config: "},
		{"k below 1", []string{"--speculative-config", `{"method":"eagle","num_speculative_tokens":0}`},
			"speculative_config.num_speculative_tokens must be >= 1, got 0"},
		{"acceptance rate above 1", []string{"--speculative-config", `{"method":"mtp","num_speculative_tokens":2,"acceptance_rate":1.5}`},
			"speculative_config.acceptance_rate must be in [0, 1], got 1.5"},
		{"negative per-position rate", []string{"--speculative-config", `{"method":"mtp","num_speculative_tokens":2,"acceptance_rate_per_position":[0.5,-0.1]}`},
			"speculative_config.acceptance_rate_per_position must be in [0, 1], got -0.1"},
		{"per-position rates of the wrong length", []string{"--speculative-config", `{"method":"mtp","num_speculative_tokens":3,"acceptance_rate_per_position":[0.5]}`},
			"speculative_config.acceptance_rate_per_position has 1 entries, want num_speculative_tokens (3)"},
		{"unknown method", []string{"--speculative-config", `{"method":"magic","num_speculative_tokens":3}`},
			`speculative_config.method "magic" is not one of`},
		{"unknown key", []string{"--speculative-config", `{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_maxx":4}`},
			`unknown field "speculative_config.prompt_lookup_maxx"`},
		{"offload size below one block", []string{"--kv-offloading-size", "0.000001"},
			"kv_offloading_size of 1074 bytes does not fit: a tier holds between 1 and 2147483647 blocks of 8388608 bytes"},
		{"offload size beyond 2^31 blocks", []string{"--kv-offloading-size", "1e9"},
			"kv_offloading_size of 1073741824000000000 bytes does not fit"},
		{"negative offload size", []string{"--kv-offloading-size", "-1"}, "kv_offloading_size must be a finite number >= 0, got -1"},
		{"disk tier without a CPU tier", []string{"--kv-offloading-disk-size", "4"}, "kv_offloading_disk_size needs a CPU tier (kv_offloading_size)"},
		{"offloading without prefix caching", []string{"--kv-offloading-size", "1", "--no-enable-prefix-caching"}, "KV offloading needs enable_prefix_caching"},
		{"lmcache backend", []string{"--kv-offloading-size", "1", "--kv-offloading-backend", "lmcache"},
			"not supported yet: --kv-offloading-backend lmcache (kv_offloading_backend; needs the LMCache offloading backend)"},
		{"offloading connector without a size", []string{"--kv-transfer-config", `{"kv_connector":"OffloadingConnector","kv_role":"kv_both"}`},
			"OffloadingConnector needs kv_connector_extra_config.cpu_bytes_to_use > 0"},
		{"offloading connector and size together", []string{"--kv-offloading-size", "1", "--kv-transfer-config",
			`{"kv_connector":"OffloadingConnector","kv_role":"kv_both","kv_connector_extra_config":{"cpu_bytes_to_use":1073741824}}`},
			"give kv_offloading_size or kv_transfer_config with OffloadingConnector, not both"},
		{"negative bandwidth", []string{"--kv-offloading-size", "1", "--offload-bandwidth", `{"cpu":-2}`},
			"offload_bandwidth.cpu must be a finite number >= 0, got -2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, err := runCLI(t, tt.args...)
			if code := exitCode(err); code != 2 {
				t.Errorf("exit code = %d (err %v), want 2", code, err)
			}
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], tt.want) {
				t.Errorf("stderr %q, want one line containing %q", stderr, tt.want)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want nothing", stdout)
			}
		})
	}
}

// The good forms load: --kv-offloading-size 1 alone is a 1 GiB CPU tier.
func TestRun_SpeculativeAndOffloadSettingsLoad(t *testing.T) {
	cfg := servedConfig(t, "--kv-offloading-size", "1", "--speculative-config", `{"method":"eagle","num_speculative_tokens":3}`)
	if cfg["kv_offloading_size"] != 1.0 || cfg["kv_offloading_backend"] != "native" {
		t.Errorf("offloading keys %v %v", cfg["kv_offloading_size"], cfg["kv_offloading_backend"])
	}
	spec, _ := cfg["speculative_config"].(map[string]any)
	if spec["method"] != "eagle" || spec["num_speculative_tokens"] != 3.0 {
		t.Errorf("speculative_config %v", cfg["speculative_config"])
	}
}
