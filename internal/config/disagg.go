package config

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// Disaggregated prefill/decode settings (docs/disaggregation.md): the
// derived defaults, the checks and the engine's transfer link.

// kvDTypeBytes is the size of one KV element per dtype.
var kvDTypeBytes = map[KVDType]int64{KVFloat16: 2, KVBFloat16: 2, KVFloat32: 4, KVFP8: 1}

// knownConnectors are the vLLM connectors whose P/D request flow the mock
// imitates; any other is accepted with a warning and treated like these.
var knownConnectors = map[string]bool{"NixlConnector": true, "P2pNcclConnector": true, "MooncakeConnector": true}

// applyDisaggDefaults fills the connector defaults (kv_role kv_both,
// kv_load_failure_policy fail, engine_id = worker_id, and, unless set, the
// hold timeout from VLLM_NIXL_ABORT_REQUEST_TIMEOUT, 480 s) and computes
// kv_bytes_per_token from kv_model_shape as Dynamo does: layers × 2 (K and
// V) × KV heads × head size × dtype bytes. Setting both to different values
// is a problem.
func applyDisaggDefaults(cfg *Config, merged map[string]any, lookupEnv func(string) (string, bool)) []problem {
	var probs []problem
	if t := cfg.KVTransferConfig; t != nil {
		// vLLM's defaults, whichever the connector.
		if t.KVRole == "" {
			t.KVRole = "kv_both"
		}
		if t.KVLoadFailurePolicy == "" {
			t.KVLoadFailurePolicy = KVLoadFail
		}
	}
	if t := cfg.PDConnector(); t != nil {
		if _, set := merged["handoff_session_timeout_ms"]; !set {
			probs = append(probs, nixlAbortTimeout(cfg, lookupEnv)...)
		}
		if t.EngineID == "" {
			t.EngineID = cfg.WorkerID
		}
	}
	s := &cfg.KVModelShape
	if s.NumLayers <= 0 || s.NumKVHeads <= 0 || s.HeadDim <= 0 {
		return probs // unset, or incomplete (validateDisagg says which)
	}
	computed := int64(s.NumLayers) * 2 * int64(s.NumKVHeads) * int64(s.HeadDim) * kvDTypeBytes[s.DType]
	if _, set := merged["kv_bytes_per_token"]; set && cfg.KVBytesPerToken != computed {
		return append(probs, problem{keys: []string{"kv_bytes_per_token", "kv_model_shape"}, msg: fmt.Sprintf(
			"kv_bytes_per_token %d disagrees with kv_model_shape (%d); set one of them", cfg.KVBytesPerToken, computed)})
	}
	cfg.KVBytesPerToken = computed
	return probs
}

// vllmNIXLAbortTimeout is vLLM's default VLLM_NIXL_ABORT_REQUEST_TIMEOUT.
const vllmNIXLAbortTimeout = 480 * time.Second

// nixlAbortTimeout sets a connector worker's hold timeout as vLLM's does:
// VLLM_NIXL_ABORT_REQUEST_TIMEOUT seconds, 480 by default.
func nixlAbortTimeout(cfg *Config, lookupEnv func(string) (string, bool)) []problem {
	timeout := vllmNIXLAbortTimeout
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	if v, ok := lookupEnv("VLLM_NIXL_ABORT_REQUEST_TIMEOUT"); ok && strings.TrimSpace(v) != "" {
		secs, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || secs < 1 {
			return []problem{{keys: []string{"handoff_session_timeout_ms"},
				msg: fmt.Sprintf("VLLM_NIXL_ABORT_REQUEST_TIMEOUT must be a whole number of seconds >= 1, got %q", v)}}
		}
		timeout = time.Duration(secs) * time.Second
	}
	cfg.HandoffSessionTimeoutMs = timeout.Milliseconds()
	return nil
}

// validateDisagg checks the disaggregation keys and warns about settings
// that are accepted but change nothing.
func (v *validator) validateDisagg(c *Config) {
	if s := c.KVModelShape; s.NumLayers != 0 || s.NumKVHeads != 0 || s.HeadDim != 0 {
		v.intMin("kv_model_shape.num_layers", int64(s.NumLayers), 1)
		v.intMin("kv_model_shape.num_kv_heads", int64(s.NumKVHeads), 1)
		v.intMin("kv_model_shape.head_dim", int64(s.HeadDim), 1)
	}
	t := c.PDConnector()
	if t == nil {
		if c.BootstrapPort > 0 && c.BootstrapPort <= 65535 && c.WorkerType != WorkerPrefill {
			v.errorf([]string{"bootstrap_port"}, "bootstrap_port needs a prefill worker (--disaggregation-mode prefill or --kv-transfer-config)")
		}
		return
	}
	if t.KVConnector == "" {
		v.errorf([]string{"kv_transfer_config.kv_connector"}, "kv_transfer_config.kv_connector is required")
	} else if !knownConnectors[t.KVConnector] {
		v.warns = append(v.warns, fmt.Sprintf("kv_transfer_config.kv_connector %q is simulated like NixlConnector", t.KVConnector))
	}
	var noEffect []string
	for _, f := range []struct {
		key string
		set bool
	}{
		{"kv_buffer_device", t.KVBufferDevice != ""}, {"kv_buffer_size", t.KVBufferSize != 0},
		{"kv_rank", t.KVRank != nil}, {"kv_parallel_size", t.KVParallelSize != 0},
		{"kv_ip", t.KVIP != ""}, {"kv_port", t.KVPort != 0},
		{"kv_connector_extra_config", len(t.KVConnectorExtraConfig) > 0},
		{"kv_connector_module_path", t.KVConnectorModulePath != ""},
		{"enable_permute_local_kv", t.EnablePermuteLocalKV},
	} {
		if f.set {
			noEffect = append(noEffect, f.key)
		}
	}
	if len(noEffect) > 0 {
		v.warns = append(v.warns, "kv_transfer_config: accepted, no effect in a simulation: "+strings.Join(noEffect, ", "))
	}
}

// PDConnector is kv_transfer_config when it names a prefill/decode
// connector; nil without one or with the OffloadingConnector.
func (c *Config) PDConnector() *KVTransferConfig {
	if t := c.KVTransferConfig; t != nil && !t.Offloading() {
		return t
	}
	return nil
}

// Disaggregated reports whether the worker serves disaggregated requests:
// it has a connector or a prefill/decode worker type.
func (c *Config) Disaggregated() bool {
	return c.PDConnector() != nil || c.WorkerType == WorkerPrefill || c.WorkerType == WorkerDecode
}

// ServesPrefill and ServesDecode say which halves of a handoff the worker
// accepts: a connector's kv_role decides (kv_both: either), else the
// Dynamo worker type.
func (c *Config) ServesPrefill() bool { return c.servesRole("kv_producer", WorkerPrefill) }

// ServesDecode reports whether the worker accepts decode requests of a
// handoff (see ServesPrefill).
func (c *Config) ServesDecode() bool { return c.servesRole("kv_consumer", WorkerDecode) }

func (c *Config) servesRole(role string, worker WorkerType) bool {
	if t := c.PDConnector(); t != nil {
		return t.KVRole == "kv_both" || t.KVRole == role
	}
	return c.WorkerType == worker
}

// KVEngineID is the remote_engine_id a prefill worker announces.
func (c *Config) KVEngineID() string {
	if t := c.PDConnector(); t != nil && t.EngineID != "" {
		return t.EngineID
	}
	return c.WorkerID
}

// RecomputeOnKVLoadFailure reports whether a decode whose KV cannot be
// pulled computes its prompt locally instead of failing.
func (c *Config) RecomputeOnKVLoadFailure() bool {
	return c.PDConnector() != nil && c.KVTransferConfig.KVLoadFailurePolicy == KVLoadRecompute
}

// HandoffTimeout is the longest a prefill holds its blocks.
func (c *Config) HandoffTimeout() time.Duration {
	return time.Duration(c.HandoffSessionTimeoutMs) * time.Millisecond
}

// TransferDelay is the modeled time to move tokens of KV at the configured
// bandwidth on an otherwise idle link, at least the transfer latency, after
// the speedup ratio (0 when they mean "no delay").
func (c *Config) TransferDelay(tokens int) time.Duration {
	if engine.NoDelay(c.SpeedupRatio) {
		return 0
	}
	latency := time.Duration(c.KVTransferLatencyMs / c.SpeedupRatio * float64(time.Millisecond))
	if c.KVBytesPerToken <= 0 || c.KVTransferBandwidth <= 0 {
		return latency
	}
	secs := float64(tokens) * float64(c.KVBytesPerToken) / (c.KVTransferBandwidth * 1e9) / c.SpeedupRatio
	return max(time.Duration(secs*float64(time.Second)), latency)
}

// engineTransfer is the engine's transfer link configuration.
func (c *Config) engineTransfer() engine.TransferConfig {
	return engine.TransferConfig{BytesPerToken: c.KVBytesPerToken, BandwidthGBps: c.KVTransferBandwidth,
		Mode: engine.TransferTimingMode(c.KVTransferTimingMode), Latency: time.Duration(c.KVTransferLatencyMs * float64(time.Millisecond))}
}
