package config

import (
	"fmt"
	"strings"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/kv"
)

// engineMismatchWarnings reports keys set by a source that the chosen
// engine type does not use, so none is silently ignored: the sglang.* keys
// outside --engine-type sglang, the trtllm.* keys outside --engine-type
// trtllm, and eviction_backend under sglang (its radix cache always evicts
// least recently used leaves).
func engineMismatchWarnings(c *Config, merged map[string]any) []string {
	var warns []string
	for _, own := range []engine.EngineType{engine.EngineSGLang, engine.EngineTRTLLM} {
		if c.EngineType == own {
			continue
		}
		prefix := string(own) + "."
		for _, s := range flagTable {
			if strings.HasPrefix(s.key, prefix) && len(s.key) > len(prefix) && hasPath(merged, s.key) {
				warns = append(warns, fmt.Sprintf("%s applies only to --engine-type %s; ignored for %s", s.key, own, c.EngineType))
			}
		}
	}
	if c.EngineType == engine.EngineSGLang && hasPath(merged, "eviction_backend") && c.EvictionBackend != kv.EvictLRU {
		warns = append(warns, fmt.Sprintf("eviction_backend %s applies to the vllm and trtllm block pools; sglang's radix cache evicts least recently used leaves", c.EvictionBackend))
	}
	return warns
}
