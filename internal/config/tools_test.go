package config

import (
	"slices"
	"strings"
	"testing"
)

func TestToolFlags_StartupChecksAsVLLM(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		problem string // "" = loads
	}{
		{"auto choice with a parser", []string{"--enable-auto-tool-choice", "--tool-call-parser", "hermes"}, ""},
		{"parser alone", []string{"--tool-call-parser", "llama3_json"}, ""},
		{"auto choice without a parser", []string{"--enable-auto-tool-choice"}, "--enable-auto-tool-choice requires --tool-call-parser"},
		{"parser None is unset", []string{"--enable-auto-tool-choice", "--tool-call-parser", "None"}, "requires --tool-call-parser"},
		{"unknown parser", []string{"--tool-call-parser", "hermez"}, "invalid tool call parser: hermez (chose from {"},
		{"probability above 1", []string{"--tool-call-probability", "1.5"}, "--tool-call-probability must be in [0, 1], got 1.5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := flagOptions(t, tt.args...)
			if tt.problem == "" {
				mustLoad(t, opts)
				return
			}
			problems := refusals(t, opts)
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tt.problem) }) {
				t.Fatalf("problems %q do not mention %q", problems, tt.problem)
			}
		})
	}
	cfg, _ := mustLoad(t, flagOptions(t, "--enable-auto-tool-choice", "--tool-call-parser", "mistral", "--tool-call-probability", "0.25"))
	if !cfg.EnableAutoToolChoice || cfg.ToolCallParser != "mistral" || cfg.ToolCallProbability != 0.25 {
		t.Fatalf("config = %v %q %v", cfg.EnableAutoToolChoice, cfg.ToolCallParser, cfg.ToolCallProbability)
	}
	if def := Default(); def.ToolCallProbability != DefaultToolCallProbability {
		t.Fatalf("default probability %v", def.ToolCallProbability)
	}
}
