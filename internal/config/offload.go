package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/kv"
)

// gib is the unit of the offload sizes, as vLLM's --kv-offloading-size.
const gib = 1 << 30

// OffloadBandwidth is --offload-bandwidth: how fast blocks load back from
// each offload tier, in GB/s (10^9 bytes per second); 0 loads at once.
type OffloadBandwidth struct {
	CPU  float64 `json:"cpu"`
	Disk float64 `json:"disk"`
}

// OffloadingExtraConfig is the OffloadingConnector's
// kv_connector_extra_config.
type OffloadingExtraConfig struct {
	// CPUBytesToUse is the CPU tier's size in bytes (vLLM's key).
	CPUBytesToUse int64 `json:"cpu_bytes_to_use"`
	// BlockSize is the offloaded block size in tokens; it must equal the
	// GPU block size (0: the same).
	BlockSize int `json:"block_size"`
	// EvictionPolicy is the CPU tier's eviction policy: lru only.
	EvictionPolicy string `json:"eviction_policy"`
}

const offloadingConnector = "OffloadingConnector"

// Offloading reports whether the connector is vLLM's OffloadingConnector
// (a CPU tier) rather than a prefill/decode connector.
func (t *KVTransferConfig) Offloading() bool {
	return t != nil && t.KVConnector == offloadingConnector
}

// offloadingExtra reads kv_connector_extra_config as the
// OffloadingConnector's; an unknown key is an error.
func (t *KVTransferConfig) offloadingExtra() (OffloadingExtraConfig, error) {
	var x OffloadingExtraConfig
	raw, err := json.Marshal(t.KVConnectorExtraConfig)
	if err != nil {
		return x, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&x); err != nil {
		return x, fmt.Errorf("kv_connector_extra_config: %w", err)
	}
	return x, nil
}

// DefaultOffloadBandwidth is the load-back speed without
// --offload-bandwidth: 25 GB/s from host memory (a PCIe 4.0 x16 link in
// practice), 3 GB/s from disk (one NVMe drive).
func DefaultOffloadBandwidth() OffloadBandwidth { return OffloadBandwidth{CPU: 25, Disk: 3} }

// bandwidth is offload_bandwidth with its defaults.
func (c *Config) bandwidth() OffloadBandwidth {
	if c.OffloadBandwidth == nil {
		return DefaultOffloadBandwidth()
	}
	return *c.OffloadBandwidth
}

// cpuOffloadBytes is the CPU tier's size in bytes from whichever of
// --kv-offloading-size and the OffloadingConnector set it (0: none).
func (c *Config) cpuOffloadBytes() float64 {
	if c.KVOffloadingSize > 0 {
		return c.KVOffloadingSize * gib
	}
	if t := c.KVTransferConfig; t.Offloading() {
		if x, err := t.offloadingExtra(); err == nil {
			return float64(x.CPUBytesToUse)
		}
	}
	return 0
}

// offloadBlockBytes is the size of one KV block: kv_bytes_per_token
// (default 131072, a Llama-3-8B-sized model) times the block size.
func (c *Config) offloadBlockBytes() int64 {
	return c.KVBytesPerToken * int64(c.EffectiveBlockSize())
}

// validateOffload checks the offload keys: sizes that hold at least one
// block, one source for the CPU tier, a disk tier only below a CPU tier,
// and prefix caching on the vLLM engine.
func (v *validator) validateOffload(c *Config) {
	v.nonNegFinite("kv_offloading_size", c.KVOffloadingSize)
	v.nonNegFinite("kv_offloading_disk_size", c.KVOffloadingDiskSize)
	bw := c.bandwidth()
	v.nonNegFinite("offload_bandwidth.cpu", bw.CPU)
	v.nonNegFinite("offload_bandwidth.disk", bw.Disk)
	if t := c.KVTransferConfig; t.Offloading() {
		x, err := t.offloadingExtra()
		switch {
		case err != nil:
			v.errorf([]string{"kv_transfer_config.kv_connector_extra_config"}, "OffloadingConnector %v", err)
		case c.KVOffloadingSize > 0:
			v.errorf([]string{"kv_transfer_config", "kv_offloading_size"},
				"give kv_offloading_size or kv_transfer_config with OffloadingConnector, not both")
		case x.CPUBytesToUse <= 0:
			v.errorf([]string{"kv_transfer_config.kv_connector_extra_config.cpu_bytes_to_use"},
				"OffloadingConnector needs kv_connector_extra_config.cpu_bytes_to_use > 0")
		default:
			if x.BlockSize != 0 && x.BlockSize != c.EffectiveBlockSize() {
				v.errorf([]string{"kv_transfer_config.kv_connector_extra_config.block_size", "block_size"},
					"OffloadingConnector block_size %d must equal block_size %d", x.BlockSize, c.EffectiveBlockSize())
			}
			if x.EvictionPolicy != "" && x.EvictionPolicy != "lru" {
				v.errorf([]string{"kv_transfer_config.kv_connector_extra_config.eviction_policy"},
					"OffloadingConnector eviction_policy %q is not supported (lru)", x.EvictionPolicy)
			}
		}
		if t.KVRole != "" && t.KVRole != "kv_both" {
			v.errorf([]string{"kv_transfer_config.kv_role"}, "OffloadingConnector needs kv_role kv_both, got %q", t.KVRole)
		}
	}
	cpu := c.cpuOffloadBytes()
	if cpu == 0 {
		if c.KVOffloadingDiskSize > 0 {
			v.errorf([]string{"kv_offloading_disk_size", "kv_offloading_size"}, "kv_offloading_disk_size needs a CPU tier (kv_offloading_size)")
		}
		return
	}
	block := c.offloadBlockBytes()
	for _, tier := range []struct {
		key   string
		bytes float64
	}{{"kv_offloading_size", cpu}, {"kv_offloading_disk_size", c.KVOffloadingDiskSize * gib}} {
		if tier.bytes == 0 || block <= 0 {
			continue
		}
		if n := tier.bytes / float64(block); n < 1 || n > math.MaxInt32 {
			v.errorf([]string{tier.key}, "%s of %.0f bytes does not fit: a tier holds between 1 and %d blocks of %d bytes (kv_bytes_per_token %d x block_size %d), this one %.0f",
				tier.key, tier.bytes, math.MaxInt32, block, c.KVBytesPerToken, c.EffectiveBlockSize(), math.Floor(n))
		}
	}
	if !c.EnablePrefixCaching {
		v.errorf([]string{"kv_offloading_size", "enable_prefix_caching"}, "KV offloading needs enable_prefix_caching")
	}
	if c.EngineType != engine.EngineVLLM {
		v.errorf([]string{"kv_offloading_size", "engine_type"}, "KV offloading is supported with engine_type vllm only, got %s", c.EngineType)
	}
}

// engineOffload converts the offload keys for the engine: a CPU tier and
// optionally a disk tier below it; the zero value without offloading.
func (c *Config) engineOffload() engine.OffloadConfig {
	cpu := c.cpuOffloadBytes()
	if cpu == 0 {
		return engine.OffloadConfig{}
	}
	block := c.offloadBlockBytes()
	out := engine.OffloadConfig{BlockBytes: block, Tiers: []engine.OffloadTier{{
		Medium: kv.MediumCPU, NumBlocks: int(cpu / float64(block)), BandwidthGBps: c.bandwidth().CPU}}}
	if d := c.KVOffloadingDiskSize * gib; d > 0 {
		out.Tiers = append(out.Tiers, engine.OffloadTier{
			Medium: kv.MediumDisk, NumBlocks: int(d / float64(block)), BandwidthGBps: c.bandwidth().Disk})
	}
	return out
}
