package config

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// Validate checks every field's range and the cross-field rules (SGLang
// page and chunk sizes, the budget without chunked prefill, reasoning ids,
// the interpolated model's profile, the two KV-event configuration styles,
// per-rank endpoints). It returns warnings (configurations that run but
// probably not as intended) and, when anything is wrong, an *Error with one
// line per problem.
//
// The interpolated model's profile is checked for presence only: loading
// and validating the file is done once at startup, before the engines are
// built (engine.LoadProfile).
//
// Validate accepts a configuration before or after Load's derived defaults
// (block_size 0 means "per engine type").
func (c *Config) Validate() (warnings []string, err error) {
	probs, warns := c.validate()
	if len(probs) > 0 {
		return warns, &Error{Problems: messages(probs)}
	}
	return warns, nil
}

// messages returns the problem texts, each flattened to one line (YAML
// parser errors span several lines).
func messages(probs []problem) []string {
	out := make([]string, len(probs))
	for i, p := range probs {
		lines := strings.Split(p.msg, "\n")
		for j := range lines {
			lines[j] = strings.TrimSpace(lines[j])
		}
		out[i] = strings.Join(lines, " ")
	}
	return out
}

type validator struct {
	probs []problem
	warns []string
}

func (v *validator) errorf(keys []string, format string, args ...any) {
	v.probs = append(v.probs, problem{msg: fmt.Sprintf(format, args...), keys: keys})
}

func (v *validator) intRange(key string, val, lo, hi int64) {
	if val < lo || val > hi {
		v.errorf([]string{key}, "%s must be between %d and %d, got %d", key, lo, hi, val)
	}
}

func (v *validator) intMin(key string, val, lo int64) {
	if val < lo {
		v.errorf([]string{key}, "%s must be >= %d, got %d", key, lo, val)
	}
}

// nonNegFinite checks a float that must be finite and >= 0.
func (v *validator) nonNegFinite(key string, f float64) {
	if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		v.errorf([]string{key}, "%s must be a finite number >= 0, got %s", key, fmtFloat(f))
	}
}

// speedup checks a ratio that must be >= 0 or +Inf.
func (v *validator) speedup(key string, f float64) {
	if math.IsNaN(f) || f < 0 {
		v.errorf([]string{key}, "%s must be >= 0 or inf, got %s", key, fmtFloat(f))
	}
}

// port checks an optional port: 0 means none, else 1–65535.
func (v *validator) port(key string, p int) {
	if p < 0 || p > 65535 {
		v.errorf([]string{key}, "%s must be between 1 and 65535, got %d", key, p)
	}
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// validateEnums checks every enum field of fieldOpts against its canonical
// values (Load already normalised them; this catches programmatic configs).
func (v *validator) validateEnums(c *Config) {
	for _, path := range slices.Sorted(maps.Keys(fieldOpts)) {
		e := fieldOpts[path].enum
		if e == nil {
			continue
		}
		val, ok := stringAt(c, path)
		if !ok {
			continue
		}
		if _, valid := e.lookup(val); valid {
			continue
		}
		if e.fallback != "" {
			v.warns = append(v.warns, fmt.Sprintf("unknown %s '%s', using '%s'", path, val, e.fallback))
			continue
		}
		v.errorf([]string{path}, "%s", e.invalidMsg(path, val))
	}
}

// stringAt returns the string field at a dotted JSON path; false when the
// path does not exist or crosses a nil pointer.
func stringAt(c *Config, path string) (string, bool) {
	rv, ok := fieldAt(reflect.ValueOf(c).Elem(), path)
	if !ok || rv.Kind() != reflect.String {
		return "", false
	}
	return rv.String(), true
}

// fieldAt returns the field at a dotted JSON path below the struct rv.
func fieldAt(rv reflect.Value, path string) (reflect.Value, bool) {
	for _, key := range strings.Split(path, ".") {
		for rv.Kind() == reflect.Pointer {
			if rv.IsNil() {
				return reflect.Value{}, false
			}
			rv = rv.Elem()
		}
		if rv.Kind() != reflect.Struct {
			return reflect.Value{}, false
		}
		found := false
		for _, f := range structFields(rv.Type()) {
			if f.key == key {
				rv = rv.Field(f.index)
				found = true
				break
			}
		}
		if !found {
			return reflect.Value{}, false
		}
	}
	return rv, true
}

func (c *Config) validate() ([]problem, []string) {
	v := &validator{}
	v.validateEnums(c)
	v.validateTools(c)

	// Server and API fields.
	if c.Model == "" {
		v.errorf([]string{"model"}, "model must not be empty")
	}
	seen := map[string]bool{}
	for _, n := range c.ServedModelName {
		switch {
		case n == "":
			v.errorf([]string{"served_model_name"}, "served_model_name entries must not be empty")
		case len(n) > 256:
			v.errorf([]string{"served_model_name"}, "served_model_name %q is longer than 256 bytes", n[:32]+"...")
		case seen[n]:
			v.errorf([]string{"served_model_name"}, "served_model_name %q is listed more than once", n)
		}
		seen[n] = true
	}
	v.intRange("port", int64(c.Port), 0, 65535)
	v.intRange("grpc_port", int64(c.GRPCPort), -1, 65535)
	for _, k := range c.APIKey {
		if k == "" {
			v.errorf([]string{"api_key"}, "api_key entries must not be empty")
			break
		}
	}
	v.intRange("natural_output_len", int64(c.NaturalOutputLen), 1, 1<<20)
	if s := c.NaturalOutputLenSigma; !(s > 0 && s <= 4) {
		v.errorf([]string{"natural_output_len_sigma"}, "natural_output_len_sigma must be > 0 and <= 4, got %s", fmtFloat(s))
	} else if s != defaultNaturalSigma && c.OutputLenMode == "random" {
		// random draws uniformly: σ shapes only the log-normal.
		v.warns = append(v.warns, "natural_output_len_sigma has no effect with output_len_mode random (uniform lengths)")
	}
	v.intRange("embedding_dim", int64(c.EmbeddingDim), 1, 65536)
	v.intRange("num_labels", int64(c.NumLabels), 1, 1024)
	c.validatePooling(v)
	v.intMin("max_request_body_bytes", c.MaxRequestBodyBytes, 1024)
	v.nonNegFinite("startup_time", c.StartupTime)

	// Engine and scheduler fields.
	v.intRange("num_gpu_blocks", int64(c.NumGPUBlocks), 1, 1<<24)
	if c.BlockSize < 0 {
		v.errorf([]string{"block_size"}, "block_size must be between 1 and 1024 (0 = per engine type), got %d", c.BlockSize)
	}
	if c.SGLang.PageSize < 0 || c.SGLang.PageSize > 1024 {
		v.errorf([]string{"sglang.page_size"}, "sglang.page_size must be between 1 and 1024 (0 = block_size), got %d", c.SGLang.PageSize)
	}
	bs := c.EffectiveBlockSize()
	if c.BlockSize >= 0 && (bs < 1 || bs > 1024) {
		v.errorf([]string{"block_size", "sglang.page_size"}, "block_size must be between 1 and 1024, got %d", bs)
	}
	v.intRange("max_model_len", int64(c.MaxModelLen), 1, 1<<24)
	v.intRange("max_num_seqs", int64(c.MaxNumSeqs), 1, 65536)
	v.intMin("max_num_batched_tokens", int64(c.MaxNumBatchedTokens), 1)

	// SGLang and TensorRT-LLM fields (value ranges apply to every engine
	// type; the block-size relations only to sglang).
	v.intMin("sglang.max_prefill_tokens", int64(c.SGLang.MaxPrefillTokens), 1)
	v.intMin("sglang.clip_max_new_tokens", int64(c.SGLang.ClipMaxNewTokens), 1)
	v.intRange("sglang.max_running_requests", int64(c.SGLang.MaxRunningRequests), 0, 65536)
	if x := c.SGLang.ScheduleConservativeness; math.IsNaN(x) || x <= 0 || x > 10 {
		v.errorf([]string{"sglang.schedule_conservativeness"},
			"sglang.schedule_conservativeness must be > 0 and <= 10, got %s", fmtFloat(x))
	}
	if c.EngineType == engine.EngineSGLang {
		// SGLang pages are blocks: one size, and chunks of whole pages.
		if c.BlockSize > 0 && c.SGLang.PageSize > 0 && c.BlockSize != c.SGLang.PageSize {
			v.errorf([]string{"block_size", "sglang.page_size"},
				"block_size (%d) and sglang.page_size (%d) must be equal", c.BlockSize, c.SGLang.PageSize)
		} else if bs >= 1 {
			cps := c.SGLang.ChunkedPrefillSize
			if cps < bs || cps%bs != 0 {
				v.errorf([]string{"sglang.chunked_prefill_size", "block_size", "sglang.page_size"},
					"sglang.chunked_prefill_size (%d) must be a positive multiple of the page size (%d)", cps, bs)
			}
		}
	}

	// Without chunked prefill a whole prompt must fit one pass's budget.
	if !c.EnableChunkedPrefill && c.MaxNumBatchedTokens < c.MaxModelLen {
		v.errorf([]string{"enable_chunked_prefill", "max_num_batched_tokens", "max_model_len"},
			"enable_chunked_prefill=false requires max_num_batched_tokens (%d) >= max_model_len (%d)",
			c.MaxNumBatchedTokens, c.MaxModelLen)
	}
	// trtllm.capacity_scheduler_policy is checked as an enum; a value set
	// for another engine type gets engineMismatchWarnings' warning.

	// Timing fields.
	v.nonNegFinite("fixed_prefill_ms", c.FixedPrefillMs)
	v.nonNegFinite("fixed_decode_ms", c.FixedDecodeMs)
	v.fixedJitter(c)
	v.speedup("speedup_ratio", c.SpeedupRatio)
	v.speedup("decode_speedup_ratio", c.DecodeSpeedupRatio)
	// Presence only; the profile is loaded and validated at startup.
	if c.TimingModel == engine.TimingInterpolated && c.PlannerProfileData == "" {
		v.errorf([]string{"timing_model", "planner_profile_data"},
			"timing_model 'interpolated' requires planner_profile_data")
	}

	// Reasoning: the ratio is a fraction and the two ids must differ.
	if r := c.Reasoning; r != nil {
		if x := r.ThinkingRatio; math.IsNaN(x) || x < 0 || x > 1 {
			v.errorf([]string{"reasoning.thinking_ratio"},
				"reasoning.thinking_ratio must be between 0 and 1, got %s", fmtFloat(x))
		}
		if r.StartThinkingTokenID == r.EndThinkingTokenID {
			v.errorf([]string{"reasoning.start_thinking_token_id", "reasoning.end_thinking_token_id"},
				"reasoning.start_thinking_token_id and reasoning.end_thinking_token_id must differ (both %d)",
				r.StartThinkingTokenID)
		}
	}

	// Data parallelism.
	v.intRange("dp_size", int64(c.DPSize), 1, 256)

	// Disaggregation.
	v.port("bootstrap_port", c.BootstrapPort)
	v.intMin("kv_bytes_per_token", c.KVBytesPerToken, 0)
	v.nonNegFinite("kv_transfer_bandwidth", c.KVTransferBandwidth)
	v.nonNegFinite("kv_transfer_latency_ms", c.KVTransferLatencyMs)
	v.intMin("handoff_session_timeout_ms", c.HandoffSessionTimeoutMs, 1)

	// KV events and FPM.
	kvEnabled := false
	if k := c.KVEventsConfig; k != nil {
		v.intMin("kv_events_config.buffer_steps", int64(k.BufferSteps), 1)
		if k.HWM < 1 {
			v.errorf([]string{"kv_events_config.hwm"}, "kv_events_config.hwm must be >= 1 (0 would mean unlimited), got %d", k.HWM)
		}
		v.intMin("kv_events_config.max_queue_size", int64(k.MaxQueueSize), 1)
		kvEnabled = k.EnableKVCacheEvents && k.Publisher != PublisherNull
		if kvEnabled && k.Endpoint == "" {
			v.errorf([]string{"kv_events_config.endpoint"}, "kv_events_config.endpoint must not be empty")
		}
		if k.ReplayEndpoint != nil && *k.ReplayEndpoint == "" {
			v.errorf([]string{"kv_events_config.replay_endpoint"},
				"kv_events_config.replay_endpoint must not be empty (null = no replay)")
		}
	}
	v.port("zmq_kv_events_port", c.ZMQKVEventsPort)
	v.port("zmq_replay_port", c.ZMQReplayPort)
	// One KV-event configuration style at a time (vLLM's or Dynamo's).
	if c.KVEventsConfig != nil && c.KVEventsConfig.EnableKVCacheEvents && c.ZMQKVEventsPort > 0 {
		v.errorf([]string{"kv_events_config.enable_kv_cache_events", "zmq_kv_events_port"},
			"kv_events_config with enable_kv_cache_events=true and zmq_kv_events_port cannot be combined")
	}
	if c.ZMQReplayPort > 0 && c.ZMQKVEventsPort <= 0 {
		v.errorf([]string{"zmq_replay_port", "zmq_kv_events_port"}, "zmq_replay_port requires zmq_kv_events_port")
	}
	// Per-rank ports P + dp_rank must stay valid and must not overlap.
	if c.DPSize >= 1 && c.DPSize <= 256 {
		last := c.DPSize - 1
		for _, p := range []struct {
			key  string
			port int
		}{{"zmq_kv_events_port", c.ZMQKVEventsPort}, {"zmq_replay_port", c.ZMQReplayPort}} {
			if p.port > 0 && p.port <= 65535 && p.port+last > 65535 {
				v.errorf([]string{p.key, "dp_size"}, "%s + dp_size - 1 (%d) exceeds 65535", p.key, p.port+last)
			}
		}
		if e, r := c.ZMQKVEventsPort, c.ZMQReplayPort; e > 0 && r > 0 && e <= r+last && r <= e+last {
			v.errorf([]string{"zmq_kv_events_port", "zmq_replay_port", "dp_size"},
				"zmq_kv_events_port and zmq_replay_port ranges overlap (dp_size %d)", c.DPSize)
		}
	}
	// Endpoints must be offsettable per DP rank.
	if c.DPSize > 1 {
		if kvEnabled {
			v.dpEndpoint("kv_events_config.endpoint", c.KVEventsConfig.Endpoint, c.DPSize)
			if re := c.KVEventsConfig.ReplayEndpoint; re != nil && *re != "" {
				v.dpEndpoint("kv_events_config.replay_endpoint", *re, c.DPSize)
			}
		}
		if c.FPMEndpoint != "" {
			v.dpEndpoint("fpm_endpoint", c.FPMEndpoint, c.DPSize)
		}
	}

	v.validateRobustness(c)

	// Warnings: configurations that run, but not as the user probably means.
	// With hardware the pool is sized later and a too-small one refused
	// (hardware.go), unless num_gpu_blocks is set.
	sized := c.Hardware == "" || c.NumGPUBlocksOverridden
	if capTokens := int64(c.NumGPUBlocks) * int64(bs); sized && c.NumGPUBlocks > 0 && bs > 0 && int64(c.MaxModelLen) > capTokens {
		v.warns = append(v.warns, fmt.Sprintf(
			"max_model_len (%d) is larger than the KV cache (num_gpu_blocks %d x block_size %d = %d tokens); longer requests will be rejected",
			c.MaxModelLen, c.NumGPUBlocks, bs, capTokens))
	}
	v.validateLoRA(c)
	v.validateSpeculative(c)
	v.validateOffload(c)
	v.validateMultimodal(c)
	v.validateDisagg(c)
	v.validateSleep(c)
	if c.KVEventsEnabled() {
		if !c.EnablePrefixCaching {
			v.warns = append(v.warns, "KV events are configured but prefix caching is disabled: no KV events will be published")
		}
		if c.WorkerType == WorkerDecode {
			v.warns = append(v.warns, "KV events are configured on a decode worker: no KV events will be published")
		}
	}
	return v.probs, v.warns
}

// dpEndpoint checks that an endpoint can be offset per DP rank
// (docs/kv-events.md): tcp://host:port (with port + dp_size - 1 <= 65535)
// or inproc://name.
func (v *validator) dpEndpoint(key, ep string, dpSize int) {
	switch {
	case strings.HasPrefix(ep, "inproc://"):
	case strings.HasPrefix(ep, "tcp://"):
		i := strings.LastIndex(ep, ":")
		p, err := strconv.Atoi(ep[i+1:])
		switch {
		case i < len("tcp://") || err != nil || p < 0 || p > 65535:
			v.errorf([]string{key, "dp_size"}, "%s %q must end in :<port> when dp_size > 1", key, ep)
		case p+dpSize-1 > 65535:
			v.errorf([]string{key, "dp_size"}, "%s %q: port + dp_size - 1 (%d) exceeds 65535", key, ep, p+dpSize-1)
		}
	default:
		v.errorf([]string{key, "dp_size"}, "%s %q must use tcp:// or inproc:// when dp_size > 1", key, ep)
	}
}
