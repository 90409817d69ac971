package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// loraRanks are the adapter ranks vLLM accepts for max_lora_rank.
var loraRanks = []int{1, 8, 16, 32, 64, 128, 256, 320, 512}

// LoRAModule is one adapter served from startup.
type LoRAModule struct {
	Name string `json:"name"`
	Path string `json:"path"`
	// BaseModelName, when it is one of the served model names, becomes the
	// adapter's parent in /v1/models (else the first served name).
	BaseModelName string `json:"base_model_name,omitempty"`
}

// ParseLoRAModule parses one --lora-modules value the way vLLM does: text
// with "=" and no "," is name=path, anything else a JSON object.
func ParseLoRAModule(text string) (LoRAModule, error) {
	if strings.Contains(text, "=") && !strings.Contains(text, ",") {
		name, path, _ := strings.Cut(text, "=")
		if strings.Contains(path, "=") {
			return LoRAModule{}, fmt.Errorf("invalid format for --lora-modules: %s (want name=path or a JSON object)", text)
		}
		return LoRAModule{Name: name, Path: path}, nil
	}
	var m LoRAModule
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return LoRAModule{}, fmt.Errorf("invalid JSON format for --lora-modules: %s (%v)", text, err)
	}
	return m, nil
}

// LoRAModuleList returns the parsed lora_modules; Load has validated them.
func (c *Config) LoRAModuleList() []LoRAModule {
	out := make([]LoRAModule, 0, len(c.LoRAModules))
	for _, t := range c.LoRAModules {
		if m, err := ParseLoRAModule(t); err == nil {
			out = append(out, m)
		}
	}
	return out
}

// validateLoRA checks the LoRA keys. They take effect only with
// enable_lora, as in vLLM; adapters listed without it are an error rather
// than ignored.
func (v *validator) validateLoRA(c *Config) {
	if !c.EnableLoRA {
		if len(c.LoRAModules) > 0 {
			v.errorf([]string{"lora_modules", "enable_lora"}, "lora_modules needs enable_lora")
		}
		return
	}
	if c.EngineType != engine.EngineVLLM {
		v.errorf([]string{"enable_lora", "engine_type"}, "enable_lora is supported with engine_type vllm only, got %s", c.EngineType)
	}
	if c.DPSize > 1 {
		// vLLM's metrics refuse it ("LoRA in DP mode is not supported yet").
		v.errorf([]string{"enable_lora", "dp_size"}, "enable_lora is not supported with dp_size > 1, got %d", c.DPSize)
	}
	v.intMin("max_loras", int64(c.MaxLoRAs), 1)
	if c.MaxCPULoRAs != 0 && c.MaxCPULoRAs < c.MaxLoRAs {
		v.errorf([]string{"max_cpu_loras", "max_loras"}, "max_cpu_loras (%d) must be >= max_loras (%d)", c.MaxCPULoRAs, c.MaxLoRAs)
	}
	if c.MaxCPULoRAs < 0 {
		v.errorf([]string{"max_cpu_loras"}, "max_cpu_loras must be >= 0 (0 = max_loras), got %d", c.MaxCPULoRAs)
	}
	if !slices.Contains(loraRanks, c.MaxLoRARank) {
		v.errorf([]string{"max_lora_rank"}, "max_lora_rank must be one of 1, 8, 16, 32, 64, 128, 256, 320, 512, got %d", c.MaxLoRARank)
	}
	v.nonNegFinite("lora_load_time_ms", c.LoRALoadTimeMs)
	seen := map[string]bool{}
	for _, text := range c.LoRAModules {
		m, err := ParseLoRAModule(text)
		switch {
		case err != nil:
			v.errorf([]string{"lora_modules"}, "%v", err)
		case m.Name == "" || m.Path == "":
			v.errorf([]string{"lora_modules"}, "lora_modules entry %q needs a name and a path", text)
		case slices.Contains(c.ServedModelName, m.Name):
			v.errorf([]string{"lora_modules"}, "lora_modules: adapter name %q is a served model name", m.Name)
		case seen[m.Name]:
			v.errorf([]string{"lora_modules"}, "lora_modules: adapter %q is listed more than once", m.Name)
		case m.BaseModelName != "" && !slices.Contains(c.ServedModelName, m.BaseModelName):
			v.warns = append(v.warns, fmt.Sprintf("lora_modules: base_model_name %q of adapter %q is not a served model name; its parent is %q",
				m.BaseModelName, m.Name, c.ServedModelName[0]))
		}
		seen[m.Name] = true
	}
}

// engineLoRA is the engine's share of the LoRA keys (zero: LoRA off).
func (c *Config) engineLoRA() engine.LoRAConfig {
	if !c.EnableLoRA {
		return engine.LoRAConfig{}
	}
	return engine.LoRAConfig{
		MaxLoRAs:    c.MaxLoRAs,
		MaxCPULoRAs: c.MaxCPULoRAs,
		LoadTime:    time.Duration(math.Round(c.LoRALoadTimeMs * float64(time.Millisecond))),
	}
}
