package config

import (
	"fmt"
	"strings"
)

// notYetValue is an enum value whose capability is not built yet.
type notYetValue struct {
	key, flag, value, capability string
}

var notYetValues = []notYetValue{
	{"kv_offloading_backend", "kv-offloading-backend", string(OffloadLMCache), "the LMCache offloading backend"},
	{"runner", "runner", string(RunnerDraft), "a speculative-decoding draft model served on its own"},
}

// notYetProblems reports every key set by any source (merged) and every
// enum value (cfg) whose capability is not built yet, one line each.
func notYetProblems(cfg *Config, merged map[string]any) []problem {
	var probs []problem
	for _, s := range flagTable {
		if s.notYet != "" && hasPath(merged, s.key) {
			probs = append(probs, problem{keys: []string{s.key},
				msg: fmt.Sprintf("not supported yet: --%s (needs %s)", s.name, s.notYet)})
		}
	}
	for _, v := range notYetValues {
		if got, ok := stringAt(cfg, v.key); ok && got == v.value {
			probs = append(probs, problem{keys: []string{v.key},
				msg: fmt.Sprintf("not supported yet: --%s %s (needs %s)", v.flag, v.value, v.capability)})
		}
	}
	return probs
}

// hasPath reports whether the dotted JSON path is present in a merged
// source map.
func hasPath(m map[string]any, path string) bool {
	head, rest, nested := strings.Cut(path, ".")
	v, ok := m[head]
	if !ok || !nested {
		return ok
	}
	sub, ok := v.(map[string]any)
	return ok && hasPath(sub, rest)
}
