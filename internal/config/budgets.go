package config

import (
	"net"
	"strings"
)

// Defaults of the resource budgets (docs/SECURITY.md, "Budgets"): each
// bounds what one request may make a worker hold or compute, so that a small
// hostile request cannot stall an engine or grow the process. Where OpenAI
// documents a limit the default is OpenAI's; vLLM itself has none of these.
const (
	// DefaultMaxPromptsPerRequest bounds a /v1/completions prompt list
	// (OpenAI's limit on an embeddings input list, the closest published
	// one).
	DefaultMaxPromptsPerRequest = 2048
	// DefaultMaxSequencesPerRequest bounds prompts × n: the engine
	// sequences one request queues. 2,000 prompts × n=128 (256,000
	// sequences from 17 KB of JSON) wedged an engine.
	DefaultMaxSequencesPerRequest = 4096
	// DefaultMaxEmbeddingInputs is OpenAI's limit on /v1/embeddings input.
	DefaultMaxEmbeddingInputs = 2048
	// DefaultMaxSchemaBytes, DefaultMaxSchemaEnum and DefaultMaxSchemaSteps
	// are schemagen.DefaultLimits (a test keeps them equal); the enum limit
	// is OpenAI's structured-outputs limit.
	DefaultMaxSchemaBytes = 64 << 10
	DefaultMaxSchemaEnum  = 1000
	DefaultMaxSchemaSteps = 400_000
	// DefaultMaxLoRAAdapters bounds the adapters registered at once.
	DefaultMaxLoRAAdapters = 1024
	// DefaultMaxResponsesStoreBytes bounds the stored Responses.
	DefaultMaxResponsesStoreBytes = 256 << 20
)

// validateBudgets checks the budget keys: each is a positive bound (a
// budget cannot be switched off; a large value is the way to loosen it).
func (v *validator) validateBudgets(c *Config) {
	v.intRange("max_prompts_per_request", int64(c.MaxPromptsPerRequest), 1, 1<<20)
	v.intRange("max_sequences_per_request", int64(c.MaxSequencesPerRequest), 1, 1<<24)
	v.intRange("max_embedding_inputs", int64(c.MaxEmbeddingInputs), 1, 1<<20)
	v.intRange("max_schema_bytes", int64(c.MaxSchemaBytes), 1, 1<<30)
	v.intRange("max_schema_enum", int64(c.MaxSchemaEnum), 1, 1<<24)
	v.intRange("max_schema_steps", int64(c.MaxSchemaSteps), 1, 1<<40)
	v.intRange("max_lora_adapters", int64(c.MaxLoRAAdapters), 1, 1<<20)
	v.intRange("max_responses_store_bytes", int64(c.MaxResponsesStoreBytes), 1, 1<<40)
	if c.MaxSequencesPerRequest > 0 && c.MaxPromptsPerRequest > c.MaxSequencesPerRequest {
		v.errorf([]string{"max_prompts_per_request", "max_sequences_per_request"},
			"max_prompts_per_request (%d) must not exceed max_sequences_per_request (%d): every prompt is at least one sequence",
			c.MaxPromptsPerRequest, c.MaxSequencesPerRequest)
	}
	v.validateAllowedHosts(c)
	if len(c.LoRAModules) > c.MaxLoRAAdapters && c.MaxLoRAAdapters > 0 {
		v.errorf([]string{"lora_modules", "max_lora_adapters"},
			"%d lora_modules but max_lora_adapters is %d", len(c.LoRAModules), c.MaxLoRAAdapters)
	}
}

// validateAllowedHosts checks kv_transfer_allowed_hosts: "*", an IP, a CIDR
// or a host name each.
func (v *validator) validateAllowedHosts(c *Config) {
	for _, e := range c.KVTransferAllowedHosts {
		e = strings.Trim(strings.TrimSpace(e), "[]")
		switch {
		case e == "*" || net.ParseIP(e) != nil:
		case strings.Contains(e, "/"):
			if _, _, err := net.ParseCIDR(e); err != nil {
				v.errorf([]string{"kv_transfer_allowed_hosts"}, "kv_transfer_allowed_hosts: %q is not a CIDR", e)
			}
		case e == "" || strings.ContainsAny(e, " \t:/@"):
			v.errorf([]string{"kv_transfer_allowed_hosts"}, "kv_transfer_allowed_hosts: %q is not a host name, IP, CIDR or *", e)
		}
	}
}
