package config

import (
	"slices"
	"strings"
)

// DefaultToolCallProbability is the share of tool_choice "auto" answers
// that call tools: even odds, so a client sees both outcomes early.
const DefaultToolCallProbability = 0.5

// DefaultToolCallAfterResultProbability is the share of tool_choice "auto"
// answers right after a tool result that call tools again: a model that
// asked for a tool mostly answers once it has the result, so an agent loop
// ends in a turn or two; after k consecutive tool rounds an answer calls
// again with this probability to the power k.
const DefaultToolCallAfterResultProbability = 0.1

// ToolCallParsers are the --tool-call-parser names vLLM registers; the
// mock accepts the same set and refuses others with vLLM's message.
var ToolCallParsers = []string{
	"deepseek_v3", "deepseek_v31", "deepseek_v32", "ernie45", "gigachat3", "glm45", "glm47",
	"granite", "granite-20b-fc", "hermes", "hunyuan_a13b", "internlm", "jamba", "kimi_k2",
	"llama3_json", "llama4_json", "llama4_pythonic", "longcat", "minimax", "minimax_m2",
	"mistral", "olmo3", "openai", "phi4_mini_json", "pythonic", "qwen3_coder", "qwen3_xml",
	"seed_oss", "step3", "xlam",
}

// validateTools applies vLLM's startup checks of the tool-calling flags.
func (v *validator) validateTools(c *Config) {
	if c.ToolCallParser == "None" { // vLLM's optional_type spelling of unset
		c.ToolCallParser = ""
	}
	if c.ToolCallParser != "" && !slices.Contains(ToolCallParsers, c.ToolCallParser) {
		v.errorf([]string{"tool_call_parser"}, "invalid tool call parser: %s (chose from { %s })",
			c.ToolCallParser, strings.Join(ToolCallParsers, ","))
	}
	if c.EnableAutoToolChoice && c.ToolCallParser == "" {
		v.errorf([]string{"enable_auto_tool_choice", "tool_call_parser"},
			"--enable-auto-tool-choice requires --tool-call-parser")
	}
	if !(c.ToolCallProbability >= 0 && c.ToolCallProbability <= 1) {
		v.errorf([]string{"tool_call_probability"}, "tool_call_probability must be in [0, 1], got %s", fmtFloat(c.ToolCallProbability))
	}
	if !(c.ToolCallAfterResultProbability >= 0 && c.ToolCallAfterResultProbability <= 1) {
		v.errorf([]string{"tool_call_after_result_probability"}, "tool_call_after_result_probability must be in [0, 1], got %s",
			fmtFloat(c.ToolCallAfterResultProbability))
	}
}
