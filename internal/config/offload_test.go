package config

import (
	"slices"
	"testing"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/kv"
)

// The offload keys become the engine's tiers: sizes in blocks of
// kv_bytes_per_token (131072) × block_size, bandwidths with their defaults.
func TestEngineOffloadTiers(t *testing.T) {
	mib8 := int64(131072 * 64) // one 64-token block
	tests := []struct {
		name string
		args []string
		want engine.OffloadConfig
	}{
		{"no offloading", nil, engine.OffloadConfig{}},
		{"--kv-offloading-size 1 alone is a 1 GiB CPU tier", []string{"--kv-offloading-size", "1"},
			engine.OffloadConfig{BlockBytes: mib8, Tiers: []engine.OffloadTier{{Medium: kv.MediumCPU, NumBlocks: 128, BandwidthGBps: 25}}}},
		{"the OffloadingConnector sizes the CPU tier in bytes", []string{"--kv-transfer-config",
			`{"kv_connector":"OffloadingConnector","kv_role":"kv_both","kv_connector_extra_config":{"cpu_bytes_to_use":83886080,"block_size":64,"eviction_policy":"lru"}}`},
			engine.OffloadConfig{BlockBytes: mib8, Tiers: []engine.OffloadTier{{Medium: kv.MediumCPU, NumBlocks: 10, BandwidthGBps: 25}}}},
		{"a disk tier and one bandwidth overridden", []string{"--kv-offloading-size", "0.5", "--kv-offloading-disk-size", "2",
			"--offload-bandwidth", `{"cpu":10}`},
			engine.OffloadConfig{BlockBytes: mib8, Tiers: []engine.OffloadTier{
				{Medium: kv.MediumCPU, NumBlocks: 64, BandwidthGBps: 10}, {Medium: kv.MediumDisk, NumBlocks: 256, BandwidthGBps: 3}}}},
		{"block size 16", []string{"--kv-offloading-size", "1", "--block-size", "16"},
			engine.OffloadConfig{BlockBytes: 131072 * 16, Tiers: []engine.OffloadTier{{Medium: kv.MediumCPU, NumBlocks: 512, BandwidthGBps: 25}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := loadArgs(t, tt.args...)
			got := cfg.EngineConfig(nil).Offload
			if got.BlockBytes != tt.want.BlockBytes || !slices.Equal(got.Tiers, tt.want.Tiers) {
				t.Errorf("offload %+v, want %+v", got, tt.want)
			}
		})
	}
}

// speculative_config becomes the engine's: rates per position, the draft
// cost by method, the seed from --seed.
func TestEngineSpeculative(t *testing.T) {
	cfg := loadArgs(t, "--seed", "9", "--speculative-config", `{"model":"small-draft","num_speculative_tokens":2}`)
	got := cfg.EngineConfig(nil).Speculative
	want := engine.SpeculativeConfig{Method: "draft_model", NumSpeculativeTokens: 2, AcceptanceRates: []float64{0.7, 0.7},
		DraftCostRatio: 0.2, Seed: 9}
	if got.Method != want.Method || got.NumSpeculativeTokens != 2 || !slices.Equal(got.AcceptanceRates, want.AcceptanceRates) ||
		got.DraftCostRatio != want.DraftCostRatio || got.Seed != 9 {
		t.Errorf("speculative %+v, want %+v", got, want)
	}
	cfg = loadArgs(t, "--speculative-config", `{"method":"ngram","num_speculative_tokens":3,"acceptance_rate_per_position":[1,0.5,0]}`)
	if got := cfg.EngineConfig(nil).Speculative; !slices.Equal(got.AcceptanceRates, []float64{1, 0.5, 0}) || got.DraftCostRatio != 0 {
		t.Errorf("ngram speculative %+v", got)
	}
}

// loadArgs loads a command line the way serve does, failing on any problem.
func loadArgs(t *testing.T, args ...string) *Config {
	t.Helper()
	cfg, _ := mustLoad(t, flagOptions(t, args...))
	return cfg
}
