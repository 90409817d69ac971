package config

import (
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// LoadOptions names the configuration sources of one process, lowest
// precedence first after the built-in defaults: defaults < --config <
// --extra-engine-args < explicitly set flags.
type LoadOptions struct {
	// ConfigPath is the --config file (YAML or JSON); empty = none.
	ConfigPath string
	// ExtraEngineArgs is the --extra-engine-args value: an inline JSON
	// object, or a path to a JSON/YAML file; empty = none.
	ExtraEngineArgs string
	// Overlay holds the explicitly set CLI flags as a generic map keyed by
	// JSON keys (see FlagOverlay). It goes through the same decoding and
	// validation as files.
	Overlay map[string]any

	// LookupEnv reads VLLM_API_KEY, VLLM_SERVER_DEV_MODE and PYTHONHASHSEED;
	// nil = os.LookupEnv.
	LookupEnv func(key string) (string, bool)
	// Hostname provides the host name of the default worker_id; nil = os.Hostname.
	Hostname func() (string, error)

	// parseNotYet accepts the keys of capabilities that are not built yet
	// instead of refusing them, so that the unit tests keep exercising
	// their parsing and validation until the capability lands.
	parseNotYet bool
	// refusedFlags are the "not supported yet" problems of vLLM flags set
	// on the command line (OptionsFromFlags).
	refusedFlags []string
}

// Load merges defaults < --config < --extra-engine-args < explicitly set
// flags, decodes the result strictly onto Config, applies the derived
// defaults, and validates it. It returns the startup warnings and, on any
// problem, an *Error listing every problem found, one line each.
//
// Derived defaults: served_model_name = [model]; worker_id =
// "<hostname>:<port>"; timing_model = interpolated when planner_profile_data
// is set and timing_model is not; api_key from VLLM_API_KEY when no source
// set it; hash_seed from PYTHONHASHSEED, else "0"; advertise_host = host (or
// 127.0.0.1 for a wildcard host); kv_events_config.publisher = "zmq" when
// enabled, else "null"; NumGPUBlocksOverridden when any source set
// num_gpu_blocks. After validation BlockSize holds the effective block size
// and sglang.page_size defaults to it.
func Load(opts LoadOptions) (*Config, []string, error) {
	var probs []problem
	bad := map[string]bool{}

	// Each source is read and checked on its own (so that its problems name
	// it), in precedence order, then merged.
	type layer struct {
		label string // prefix of error lines; empty for flags
		path  string // the file read, for the line of a key; "" = none
		read  func() (map[string]any, error)
		// vllm: the file may be a vLLM config (keys are vllm serve
		// argument names; vllmconfig.go).
		vllm bool
	}
	var layers []layer
	if opts.ConfigPath != "" {
		layers = append(layers, layer{"--config " + opts.ConfigPath, opts.ConfigPath, func() (map[string]any, error) {
			return readConfigFile(opts.ConfigPath)
		}, true})
	}
	if v := strings.TrimSpace(opts.ExtraEngineArgs); v != "" {
		if strings.HasPrefix(v, "{") {
			layers = append(layers, layer{"--extra-engine-args", "", func() (map[string]any, error) {
				return parseJSONObject([]byte(v))
			}, false})
		} else {
			layers = append(layers, layer{"--extra-engine-args " + v, v, func() (map[string]any, error) {
				return readConfigFile(v)
			}, false})
		}
	}
	if opts.Overlay != nil {
		layers = append(layers, layer{"", "", func() (map[string]any, error) { return opts.Overlay, nil }, false})
	}

	merged := map[string]any{}
	var sourceWarns []string
	// origins says, per key, which source set it last and how it was spelled.
	origins := map[string]origin{}
	for _, l := range layers {
		raw, err := l.read()
		if err != nil {
			probs = append(probs, problem{msg: l.label + ": " + err.Error()})
			continue
		}
		var layerOrigins map[string]origin
		if l.vllm && isVLLMConfig(raw) {
			var ps []problem
			var ws []string
			raw, layerOrigins, ps, ws = vllmConfigLayer(raw, l.label, l.path)
			probs = append(probs, ps...)
			sourceWarns = append(sourceWarns, ws...)
		} else if l.label == "" {
			layerOrigins = map[string]origin{}
			for k := range spellings(raw, "", "", nil) {
				layerOrigins[k] = origin{flag: true}
			}
		} else {
			layerOrigins = fileOrigins(raw, l.label, l.path)
		}
		m, ps := prepareLayer(raw, bad)
		for _, p := range ps {
			msg, where := userTerms(p, layerOrigins)
			if where == "" {
				where = l.label
			}
			p.msg = msg
			if where != "" {
				p.msg = where + ": " + msg
			}
			probs = append(probs, p)
		}
		maps.Copy(origins, layerOrigins)
		mergeMaps(merged, m)
	}
	layerProbs := len(probs)

	cfg := Default()
	d := newDecoder()
	d.decodeStruct(reflect.ValueOf(&cfg).Elem(), merged, "")
	// d.probs repeats what the layers reported; keep its bad paths and warnings.
	for p := range d.bad {
		bad[p] = true
	}
	warns := append(sourceWarns, d.warns...)

	probs = append(probs, checkMerged(&cfg, merged, bad)...)
	if !opts.parseNotYet {
		probs = append(probs, notYetProblems(&cfg, merged)...)
		for _, msg := range opts.refusedFlags {
			probs = append(probs, problem{msg: msg})
		}
	}
	applyDerivedDefaults(&cfg, merged, opts)
	probs = append(probs, applyDisaggDefaults(&cfg, merged, opts.LookupEnv)...)

	vprobs, vwarns := cfg.validate()
	warns = append(warns, vwarns...)
	warns = append(warns, engineMismatchWarnings(&cfg, merged)...)
	warns = append(warns, sleepWarnings(&cfg, merged)...)
	for _, p := range vprobs {
		if !involvesBad(p.keys, bad) {
			probs = append(probs, p)
		}
	}
	// The problems of the merged configuration name what the user wrote.
	for i := layerProbs; i < len(probs); i++ {
		msg, where := userTerms(probs[i], origins)
		probs[i].msg = msg
		if where != "" {
			probs[i].msg = where + ": " + msg
		}
	}
	if len(probs) > 0 {
		return nil, warns, &Error{Problems: messages(probs)}
	}
	// The hardware model reads the model's config.json and sizes the KV
	// pool from the validated settings, so it comes last (hardware.go).
	hprobs, hwarns := resolveHardware(&cfg, merged)
	warns = append(warns, hwarns...)
	if len(hprobs) > 0 {
		return nil, warns, &Error{Problems: messages(hprobs)}
	}
	cfg.BlockSize = cfg.EffectiveBlockSize()
	if cfg.SGLang.PageSize == 0 {
		cfg.SGLang.PageSize = cfg.BlockSize
	}
	return &cfg, warns, nil
}

// prepareLayer normalises the keys of one source, expands string-form JSON
// objects (--kv-events-config '<json>'), and type-checks it by decoding it
// onto a scratch configuration.
func prepareLayer(raw map[string]any, bad map[string]bool) (map[string]any, []problem) {
	var probs []problem
	m, _ := normalizeKeys(raw, "", &probs).(map[string]any)
	for _, k := range slices.Sorted(maps.Keys(jsonStringObjects)) {
		s, ok := m[k].(string)
		if !ok {
			continue
		}
		if t := strings.TrimSpace(s); t == "null" || (t == "None" && noneUnsets[k]) {
			m[k] = nil // --reasoning null: unset
			continue
		}
		obj, err := parseJSONObject([]byte(s))
		if err != nil {
			probs = append(probs, problem{msg: fmt.Sprintf("%s: %v", k, err), keys: []string{k}})
			bad[k] = true
			delete(m, k)
			continue
		}
		m[k] = normalizeKeys(obj, k, &probs)
	}
	for _, p := range probs {
		for _, k := range p.keys {
			bad[k] = true
		}
	}
	scratch := Default()
	d := newDecoder()
	d.decodeStruct(reflect.ValueOf(&scratch).Elem(), m, "")
	for p := range d.bad {
		bad[p] = true
	}
	return m, append(probs, d.probs...)
}

// checkMerged applies the rules that need all layers together: the legacy
// is_prefill / is_decode keys and the required reasoning.thinking_ratio.
func checkMerged(cfg *Config, merged map[string]any, bad map[string]bool) []problem {
	var probs []problem
	if _, ok := merged["worker_type"]; !ok {
		isPrefill, _ := merged["is_prefill"].(bool)
		isDecode, _ := merged["is_decode"].(bool)
		switch {
		case isPrefill && isDecode:
			probs = append(probs, problem{msg: "is_prefill and is_decode must not both be true", keys: []string{"worker_type"}})
			bad["worker_type"] = true
		case isPrefill:
			cfg.WorkerType = WorkerPrefill
		case isDecode:
			cfg.WorkerType = WorkerDecode
		}
	}
	if r, ok := merged["reasoning"].(map[string]any); ok && !bad["reasoning"] {
		if _, has := r["thinking_ratio"]; !has {
			probs = append(probs, problem{msg: "reasoning.thinking_ratio is required", keys: []string{"reasoning.thinking_ratio"}})
			bad["reasoning.thinking_ratio"] = true
		}
	}
	return probs
}

// applyDerivedDefaults fills the defaults that depend on other fields, on
// whether a key was set by any source, or on the environment.
func applyDerivedDefaults(cfg *Config, merged map[string]any, opts LoadOptions) {
	lookupEnv := opts.LookupEnv
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	hostname := opts.Hostname
	if hostname == nil {
		hostname = os.Hostname
	}
	set := func(key string) bool { _, ok := merged[key]; return ok }

	cfg.NumGPUBlocksOverridden = set("num_gpu_blocks")
	if !cfg.NumGPUBlocksOverridden && cfg.EngineType == engine.EngineSGLang {
		// SGLang sizes its pool in tokens. The default pool holds as many
		// tokens as vllm's default one (16,384 blocks of 16), so a default
		// start fits max_model_len whatever the page size.
		cfg.NumGPUBlocks = max(1, defaultPoolTokens/cfg.EffectiveBlockSize())
	}
	if len(cfg.ServedModelName) == 0 && cfg.Model != "" {
		cfg.ServedModelName = []string{cfg.Model}
	}
	if !set("api_key") {
		if k, ok := lookupEnv("VLLM_API_KEY"); ok && k != "" {
			cfg.APIKey = []string{k}
		}
	}
	if len(cfg.LoRAModules) == 0 {
		cfg.LoRAModules = nil // one spelling of "none", so configurations compare equal
	}
	if !set("allow_runtime_lora_updating") {
		// vLLM's rule: "1" or "true", any case, surrounding spaces ignored.
		v, _ := lookupEnv("VLLM_ALLOW_RUNTIME_LORA_UPDATING")
		v = strings.ToLower(strings.TrimSpace(v))
		cfg.AllowRuntimeLoRAUpdating = v == "1" || v == "true"
	}
	if len(cfg.FailureTypes) == 0 {
		cfg.FailureTypes = nil // [] and absent mean the same
	}
	if !set("dev_mode") {
		if v, ok := lookupEnv("VLLM_SERVER_DEV_MODE"); ok && v == "1" {
			cfg.DevMode = true
		}
	}
	if cfg.HashSeed == "" {
		if s, ok := lookupEnv("PYTHONHASHSEED"); ok && s != "" {
			cfg.HashSeed = s
		} else {
			cfg.HashSeed = "0"
		}
	}
	if !set("timing_model") && cfg.PlannerProfileData != "" {
		cfg.TimingModel = engine.TimingInterpolated
	}
	if cfg.WorkerID == "" {
		h, err := hostname()
		if err != nil || h == "" {
			h = "localhost"
		}
		cfg.WorkerID = fmt.Sprintf("%s:%d", h, cfg.Port)
	}
	if cfg.AdvertiseHost == "" {
		switch cfg.Host {
		case "", "0.0.0.0", "::", "[::]":
			cfg.AdvertiseHost = "127.0.0.1"
		default:
			cfg.AdvertiseHost = cfg.Host
		}
	}
	if k := cfg.KVEventsConfig; k != nil && k.Publisher == "" {
		if k.EnableKVCacheEvents {
			k.Publisher = PublisherZMQ
		} else {
			k.Publisher = PublisherNull
		}
	}
}

// involvesBad reports whether any key, or an ancestor of it, failed to parse.
func involvesBad(keys []string, bad map[string]bool) bool {
	for _, k := range keys {
		for p := k; ; {
			if bad[p] {
				return true
			}
			i := strings.LastIndex(p, ".")
			if i < 0 {
				break
			}
			p = p[:i]
		}
	}
	return false
}
