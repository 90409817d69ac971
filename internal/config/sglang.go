package config

import (
	"fmt"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// engineMismatchWarnings reports keys set by a source that the chosen
// engine type does not use, so none is silently ignored: the sglang.* keys
// outside --engine-type sglang, and eviction_backend under sglang (its
// radix cache always evicts least recently used leaves).
func engineMismatchWarnings(c *Config, merged map[string]any) []string {
	var warns []string
	if c.EngineType != engine.EngineSGLang {
		for _, s := range flagTable {
			if len(s.key) > len("sglang.") && s.key[:len("sglang.")] == "sglang." && hasPath(merged, s.key) {
				warns = append(warns, fmt.Sprintf("%s applies only to --engine-type sglang; ignored for %s", s.key, c.EngineType))
			}
		}
	}
	if c.EngineType == engine.EngineSGLang && hasPath(merged, "eviction_backend") && c.EvictionBackend != "lru" {
		warns = append(warns, fmt.Sprintf("eviction_backend %s applies to the vllm and trtllm block pools; sglang's radix cache evicts least recently used leaves", c.EvictionBackend))
	}
	return warns
}
