package testcfg

import (
	"math"
	"testing"
)

// The overlay reaches the configuration with numbers, nested objects and
// the test defaults; the machine's environment and host name do not.
func TestLoadAppliesTheOverlayOverTheTestDefaults(t *testing.T) {
	t.Setenv("VLLM_API_KEY", "from-the-environment")
	cfg := Load(t, map[string]any{"port": 0, "max_num_seqs": 7, "kv_events_config": map[string]any{"enable_kv_cache_events": true}})
	if cfg.MaxNumSeqs != 7 || cfg.Port != 0 || !math.IsInf(cfg.SpeedupRatio, 1) {
		t.Errorf("max_num_seqs %d, port %d, speedup %v", cfg.MaxNumSeqs, cfg.Port, cfg.SpeedupRatio)
	}
	if len(cfg.APIKey) != 0 {
		t.Errorf("the environment's API key reached the configuration: %v", cfg.APIKey)
	}
	if cfg.WorkerID != Hostname+":0" {
		t.Errorf("worker_id %q, want %s:0", cfg.WorkerID, Hostname)
	}
	if cfg := Load(t, map[string]any{"speedup_ratio": 2}); cfg.SpeedupRatio != 2 {
		t.Errorf("an overlay's speedup_ratio: %v", cfg.SpeedupRatio)
	}
}
