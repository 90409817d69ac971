package config

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// ServedName returns the first served model name: the metrics model_name
// label and the default response "model". It falls back to Model when
// served_model_name is empty (before Load applied its default).
func (c *Config) ServedName() string {
	if len(c.ServedModelName) > 0 {
		return c.ServedModelName[0]
	}
	return c.Model
}

// ResolvedMetricsFamily returns the metrics family with MetricsAuto
// resolved: MetricsSGLang for engine type sglang, else MetricsVLLM. Other
// values are returned unchanged.
func (c *Config) ResolvedMetricsFamily() MetricsFamily {
	if c.MetricsFamily != MetricsAuto && c.MetricsFamily != "" {
		return c.MetricsFamily
	}
	if c.EngineType == engine.EngineSGLang {
		return MetricsSGLang
	}
	return MetricsVLLM
}

// KVEventsEnabled reports whether KV events are configured to be published:
// vLLM style (kv_events_config enabled with the zmq publisher) or Dynamo
// style (zmq_kv_events_port). It does not consider prefix caching or the
// worker type, which can make a configured stream silent
// (events.Options.Silent, set by worker.EventsOptions).
func (c *Config) KVEventsEnabled() bool {
	if c.ZMQKVEventsPort > 0 {
		return true
	}
	k := c.KVEventsConfig
	return k != nil && k.EnableKVCacheEvents && k.Publisher != PublisherNull
}

// configJSON has Config's fields without its methods (no recursion).
type configJSON Config

// MarshalJSON encodes the configuration with its JSON keys so that Load
// accepts the result back: infinite speedup ratios, which JSON numbers cannot
// express, are written as "inf", and nil lists as [] (not null).
func (c Config) MarshalJSON() ([]byte, error) {
	cj := configJSON(c)
	if cj.ServedModelName == nil {
		cj.ServedModelName = []string{}
	}
	if cj.APIKey == nil {
		cj.APIKey = []string{}
	}
	if cj.LoRAModules == nil {
		cj.LoRAModules = []string{}
	}
	if cj.FailureTypes == nil {
		cj.FailureTypes = []string{}
	}
	out := struct {
		configJSON
		// Shallower fields win over the embedded ones of the same key.
		SpeedupRatio       any `json:"speedup_ratio"`
		DecodeSpeedupRatio any `json:"decode_speedup_ratio"`
	}{
		configJSON:         cj,
		SpeedupRatio:       jsonFloat(c.SpeedupRatio),
		DecodeSpeedupRatio: jsonFloat(c.DecodeSpeedupRatio),
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return withoutNotYetKeys(b)
}

// withoutNotYetKeys drops the keys of capabilities not built yet from an
// encoded configuration: they have no effect, and Load refuses them.
func withoutNotYetKeys(b []byte) ([]byte, error) {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	for _, s := range flagTable {
		if s.notYet == "" {
			continue
		}
		parent, key := m, s.key
		if head, rest, nested := strings.Cut(s.key, "."); nested {
			sub, ok := m[head].(map[string]any)
			if !ok {
				continue
			}
			parent, key = sub, rest
			defer func() {
				if len(sub) == 0 {
					delete(m, head)
				}
			}()
		}
		delete(parent, key)
	}
	return json.Marshal(m)
}

func jsonFloat(f float64) any {
	if math.IsInf(f, 1) {
		return "inf"
	}
	return f
}
