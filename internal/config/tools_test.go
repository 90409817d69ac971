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
		{"after-result probability below 0", []string{"--tool-call-after-result-probability", "-0.1"},
			"--tool-call-after-result-probability must be in [0, 1], got -0.1"},
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
	cfg, _ := mustLoad(t, flagOptions(t, "--enable-auto-tool-choice", "--tool-call-parser", "mistral", "--tool-call-probability", "0.25",
		"--tool-call-after-result-probability", "0.75"))
	if !cfg.EnableAutoToolChoice || cfg.ToolCallParser != "mistral" || cfg.ToolCallProbability != 0.25 || cfg.ToolCallAfterResultProbability != 0.75 {
		t.Fatalf("config = %v %q %v %v", cfg.EnableAutoToolChoice, cfg.ToolCallParser, cfg.ToolCallProbability, cfg.ToolCallAfterResultProbability)
	}
	if def := Default(); def.ToolCallProbability != DefaultToolCallProbability ||
		def.ToolCallAfterResultProbability != DefaultToolCallAfterResultProbability {
		t.Fatalf("default probabilities %v %v", def.ToolCallProbability, def.ToolCallAfterResultProbability)
	}
}
