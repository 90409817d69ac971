package config

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/schemagen"
)

// TestBudgetDefaultsMatchSchemagen keeps the schema budgets' defaults equal
// to what schemagen applies when it is given none.
func TestBudgetDefaultsMatchSchemagen(t *testing.T) {
	d, c := schemagen.DefaultLimits(), Default()
	if c.MaxSchemaBytes != d.MaxSchemaBytes || c.MaxSchemaEnum != d.MaxEnum || c.MaxSchemaSteps != d.MaxSteps {
		t.Errorf("config schema budgets %d/%d/%d, schemagen defaults %+v", c.MaxSchemaBytes, c.MaxSchemaEnum, c.MaxSchemaSteps, d)
	}
}

// TestBudgetsAreValidated loads budgets from flags as the command line
// does: positive values are taken, zero and negative ones are refused with
// the flag's name, and prompts may not exceed sequences.
func TestBudgetsAreValidated(t *testing.T) {
	opts := LoadOptions{Overlay: map[string]any{"max_embedding_inputs": json.Number("16"), "max_sequences_per_request": json.Number("64"),
		"max_prompts_per_request": json.Number("8"), "max_schema_steps": json.Number("1000")}}
	cfg, _, err := Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MaxEmbeddingInputs != 16 || cfg.MaxSequencesPerRequest != 64 || cfg.MaxPromptsPerRequest != 8 ||
		cfg.MaxSchemaSteps != 1000 || cfg.MaxLoRAAdapters != DefaultMaxLoRAAdapters {
		t.Errorf("loaded budgets %+v", cfg)
	}
	for key, val := range map[string]any{"max_embedding_inputs": json.Number("0"), "max_schema_bytes": json.Number("-1"), "max_lora_adapters": json.Number("0"),
		"max_responses_store_bytes": json.Number("0"), "max_schema_enum": json.Number("0"), "max_prompts_per_request": json.Number("5000")} {
		_, _, err := Load(LoadOptions{Overlay: map[string]any{key: val}})
		// Given as flags (the overlay), the problem names the flag.
		if flag := "--" + strings.ReplaceAll(key, "_", "-"); err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("%s=%v: error %v, want one naming %s", key, val, err, flag)
		}
	}
	_, _, err = Load(LoadOptions{Overlay: map[string]any{"max_lora_adapters": json.Number("1"), "enable_lora": true,
		"lora_modules": []any{"a=/x", "b=/y"}}})
	if err == nil || !strings.Contains(err.Error(), "--max-lora-adapters") {
		t.Errorf("2 lora_modules over max_lora_adapters 1: %v", err)
	}
}
