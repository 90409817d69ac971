package config

import (
	"fmt"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// Sleep mode (docs/sleep-mode.md): --enable-sleep-mode turns it on, and with
// --dev-mode (VLLM_SERVER_DEV_MODE=1) the worker serves vLLM's /sleep,
// /wake_up and /is_sleeping. A wake-up reloads sleep_weights_gb of weights
// from host memory (level 1) or disk (level 2) at these rates.
const (
	// DefaultSleepWeightsGB is an 8B-parameter model in bf16.
	DefaultSleepWeightsGB = 16.0
	// DefaultSleepHostBandwidth is a PCIe Gen4 x16 link's effective
	// host-to-device rate, the CPU tier's rate of offload_bandwidth.
	DefaultSleepHostBandwidth = 25.0
	// DefaultSleepDiskBandwidth is an NVMe read rate, the disk tier's
	// rate of offload_bandwidth.
	DefaultSleepDiskBandwidth = 3.0
)

// sleepKeys are the keys that price a wake-up: they need enable_sleep_mode.
var sleepKeys = []string{"sleep_weights_gb", "sleep_host_bandwidth", "sleep_disk_bandwidth"}

// validateSleep checks the sleep-mode keys.
func (v *validator) validateSleep(c *Config) {
	v.nonNegFinite("sleep_weights_gb", c.SleepWeightsGB)
	v.nonNegFinite("sleep_host_bandwidth", c.SleepHostBandwidth)
	v.nonNegFinite("sleep_disk_bandwidth", c.SleepDiskBandwidth)
}

// sleepWarnings reports the wake-up keys given without enable_sleep_mode,
// which then have no effect.
func sleepWarnings(c *Config, merged map[string]any) []string {
	if c.EnableSleepMode {
		return nil
	}
	var warns []string
	for _, k := range sleepKeys {
		if hasPath(merged, k) {
			warns = append(warns, fmt.Sprintf("%s applies only with --enable-sleep-mode; ignored", k))
		}
	}
	return warns
}

// engineSleep converts the sleep-mode keys (GB and GB/s are 10^9 bytes).
func (c *Config) engineSleep() engine.SleepConfig {
	if !c.EnableSleepMode {
		return engine.SleepConfig{}
	}
	return engine.SleepConfig{
		Enabled:       true,
		WeightBytes:   int64(c.SleepWeightsGB * 1e9),
		HostBandwidth: c.SleepHostBandwidth * 1e9,
		DiskBandwidth: c.SleepDiskBandwidth * 1e9,
	}
}
