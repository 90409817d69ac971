package modelshape

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The catalogue's shapes give the parameter counts the model cards
// publish (independent of the config values the shapes were taken from).
func TestKnown_ParameterCountsMatchModelCards(t *testing.T) {
	for _, c := range []struct {
		id      string
		billion float64 // as the model card states it
		tol     float64
	}{
		{"meta-llama/Llama-3.1-8B-Instruct", 8.03, 0.01},
		{"meta-llama/Llama-3.1-70B-Instruct", 70.6, 0.01},
		{"meta-llama/Llama-3.1-405B-Instruct", 405.9, 0.01},
		{"meta-llama/Llama-3.3-70B-Instruct", 70.6, 0.01},
		{"Qwen/Qwen2.5-7B-Instruct", 7.61, 0.01},
		{"Qwen/Qwen2.5-72B-Instruct", 72.7, 0.01},
		{"Qwen/Qwen3-8B", 8.2, 0.01},
		{"Qwen/Qwen3-14B", 14.8, 0.01},
		{"Qwen/Qwen3-32B", 32.8, 0.01},
		{"Qwen/Qwen3-30B-A3B", 30.5, 0.01},
		{"Qwen/Qwen3-235B-A22B", 235, 0.01},
		{"mistralai/Mistral-7B-Instruct-v0.3", 7.25, 0.01},
		{"mistralai/Mixtral-8x7B-Instruct-v0.1", 46.7, 0.01},
		{"mistralai/Mistral-7B-v0.1", 7.24, 0.01},
		{"mistralai/Mixtral-8x22B-v0.1", 141, 0.01},
		{"meta-llama/Meta-Llama-3-8B-Instruct", 8.03, 0.01},
		{"meta-llama/Meta-Llama-3-70B-Instruct", 70.6, 0.01},
		{"google/gemma-2-9b-it", 9.24, 0.01},
		{"google/gemma-2-27b-it", 27.2, 0.01},
		{"google/gemma-3-27b-it", 27.0, 0.03}, // the card's 27B includes the 0.4B vision tower
		{"deepseek-ai/DeepSeek-V3", 671, 0.01},
	} {
		s, ok := Known(c.id)
		if !ok {
			t.Errorf("%s: not in the catalogue", c.id)
			continue
		}
		if err := s.Validate(); err != nil {
			t.Errorf("%s: %v", c.id, err)
		}
		got := float64(s.Params()) / 1e9
		if math.Abs(got-c.billion)/c.billion > c.tol {
			t.Errorf("%s: %.2fB parameters, model card %.2fB", c.id, got, c.billion)
		}
	}
}

func TestKnown_CaseAndAliases(t *testing.T) {
	for id, want := range map[string]string{
		"META-LLAMA/llama-3.1-8b-instruct":       "meta-llama/Llama-3.1-8B-Instruct",
		"meta-llama/Meta-Llama-3.1-70B-Instruct": "meta-llama/Llama-3.1-70B-Instruct",
		"deepseek-ai/DeepSeek-R1":                "deepseek-ai/DeepSeek-R1",
	} {
		s, ok := Known(id)
		if !ok || s.Name != want {
			t.Errorf("Known(%q) = %v, %v; want %s", id, s, ok, want)
		}
	}
	fp8, ok := Known("qwen/qwen3-30b-a3b-fp8")
	if base, _ := Known("Qwen/Qwen3-30B-A3B"); !ok || !fp8.FP8Weights || !fp8.FP8Block || fp8.Name != "Qwen/Qwen3-30B-A3B-FP8" ||
		fp8.Params() != base.Params() || base.FP8Weights {
		t.Errorf("FP8 checkpoint: %+v", fp8)
	}
	if _, ok := Known("acme/unknown-7b"); ok {
		t.Error("an unknown id resolved")
	}
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A config.json reads to the same shape as the catalogue entry with the
// same published values, for each family's field names.
func TestLoad_FamiliesMatchCatalogue(t *testing.T) {
	for _, c := range []struct {
		id   string
		json string
	}{
		{"meta-llama/Llama-3.1-8B-Instruct", `{"architectures":["LlamaForCausalLM"],"hidden_size":4096,"intermediate_size":14336,
			"max_position_embeddings":131072,"num_attention_heads":32,"num_hidden_layers":32,"num_key_value_heads":8,
			"tie_word_embeddings":false,"torch_dtype":"bfloat16","vocab_size":128256,"rope_scaling":{"rope_type":"llama3"}}`},
		{"Qwen/Qwen2.5-7B-Instruct", `{"architectures":["Qwen2ForCausalLM"],"hidden_size":3584,"intermediate_size":18944,
			"max_position_embeddings":32768,"max_window_layers":28,"num_attention_heads":28,"num_hidden_layers":28,
			"num_key_value_heads":4,"sliding_window":131072,"tie_word_embeddings":false,"torch_dtype":"bfloat16",
			"use_sliding_window":false,"vocab_size":152064}`},
		{"google/gemma-2-9b-it", `{"architectures":["Gemma2ForCausalLM"],"head_dim":256,"hidden_size":3584,"intermediate_size":14336,
			"max_position_embeddings":8192,"num_attention_heads":16,"num_hidden_layers":42,"num_key_value_heads":8,
			"sliding_window":4096,"torch_dtype":"float32","vocab_size":256000}`},
		{"google/gemma-3-27b-it", `{"architectures":["Gemma3ForConditionalGeneration"],"torch_dtype":"bfloat16",
			"text_config":{"head_dim":128,"hidden_size":5376,"intermediate_size":21504,"max_position_embeddings":131072,
			"num_attention_heads":32,"num_hidden_layers":62,"num_key_value_heads":16,"sliding_window":1024,
			"sliding_window_pattern":6,"vocab_size":262208},"vision_config":{"hidden_size":1152}}`},
		{"mistralai/Mixtral-8x7B-Instruct-v0.1", `{"architectures":["MixtralForCausalLM"],"hidden_size":4096,"intermediate_size":14336,
			"max_position_embeddings":32768,"num_attention_heads":32,"num_experts_per_tok":2,"num_hidden_layers":32,
			"num_key_value_heads":8,"num_local_experts":8,"sliding_window":null,"vocab_size":32000}`},
		{"Qwen/Qwen3-30B-A3B", `{"architectures":["Qwen3MoeForCausalLM"],"head_dim":128,"hidden_size":2048,"intermediate_size":6144,
			"max_position_embeddings":40960,"mlp_only_layers":[],"moe_intermediate_size":768,"num_attention_heads":32,
			"num_experts":128,"num_experts_per_tok":8,"num_hidden_layers":48,"num_key_value_heads":4,"vocab_size":151936}`},
		{"deepseek-ai/DeepSeek-V3", `{"architectures":["DeepseekV3ForCausalLM"],"first_k_dense_replace":3,"hidden_size":7168,
			"intermediate_size":18432,"kv_lora_rank":512,"max_position_embeddings":163840,"moe_intermediate_size":2048,
			"n_routed_experts":256,"n_shared_experts":1,"num_attention_heads":128,"num_experts_per_tok":8,"num_hidden_layers":61,
			"num_key_value_heads":128,"q_lora_rank":1536,"qk_nope_head_dim":128,"qk_rope_head_dim":64,"v_head_dim":128,
			"quantization_config":{"quant_method":"fp8","weight_block_size":[128,128]},"vocab_size":129280}`},
	} {
		dir := writeConfig(t, c.json)
		got, err := Resolve(dir)
		if err != nil {
			t.Errorf("%s: %v", c.id, err)
			continue
		}
		want, _ := Known(c.id)
		got.Name, want.Name = "", ""
		got.WeightDtype, want.WeightDtype = "", ""
		if *got != *want {
			t.Errorf("%s:\n config.json %+v\n catalogue   %+v", c.id, *got, *want)
		}
	}
}

func TestLoad_BadInput(t *testing.T) {
	for _, c := range []struct {
		name, json, want string
	}{
		{"unknown architecture", `{"architectures":["PhiForCausalLM"],"hidden_size":1}`,
			`unsupported architecture "PhiForCausalLM" (supported: DeepseekV3ForCausalLM, Gemma2ForCausalLM,`},
		{"missing field", `{"architectures":["LlamaForCausalLM"],"hidden_size":4096,"num_hidden_layers":32,"num_attention_heads":32,
			"intermediate_size":14336,"max_position_embeddings":8192,"vocab_size":128256}`, `missing field "num_key_value_heads"`},
		{"missing MoE field", `{"architectures":["MixtralForCausalLM"],"hidden_size":4096,"num_hidden_layers":32,"num_attention_heads":32,
			"num_key_value_heads":8,"intermediate_size":14336,"max_position_embeddings":8192,"vocab_size":32000,"num_experts_per_tok":2}`,
			`missing field "num_local_experts"`},
		{"wrong type", `{"architectures":["LlamaForCausalLM"],"hidden_size":"4096"}`, `field "hidden_size": want an integer, got "4096"`},
		{"no architectures", `{"hidden_size":4096}`, `missing field "architectures"`},
		{"not an object", `[1]`, "config.json is not a JSON object"},
		{"heads not a multiple", `{"architectures":["LlamaForCausalLM"],"hidden_size":4096,"num_hidden_layers":32,"num_attention_heads":32,
			"num_key_value_heads":6,"intermediate_size":14336,"max_position_embeddings":8192,"vocab_size":128256}`,
			"num_attention_heads 32 is not a multiple of num_key_value_heads 6"},
	} {
		dir := writeConfig(t, c.json)
		_, err := Load(dir)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
		if err != nil && !strings.Contains(err.Error(), filepath.Join(dir, "config.json")) {
			t.Errorf("%s: %v does not name the file", c.name, err)
		}
	}
	// A ModelOpt checkpoint declares FP8 in hf_quant_config.json.
	dir := writeConfig(t, `{"architectures":["LlamaForCausalLM"],"hidden_size":4096,"num_hidden_layers":32,"num_attention_heads":32,
		"num_key_value_heads":8,"intermediate_size":14336,"max_position_embeddings":8192,"vocab_size":128256}`)
	if err := os.WriteFile(filepath.Join(dir, "hf_quant_config.json"), []byte(`{"producer":{"name":"modelopt"},"quantization":{"quant_algo":"FP8","kv_cache_quant_algo":"FP8"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, err := Load(dir); err != nil || !s.FP8Weights || s.QuantMethod != "modelopt" {
		t.Errorf("ModelOpt FP8: %+v, %v", s, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hf_quant_config.json"), []byte(`{"quantization":{"quant_algo":"NVFP4"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, err := Load(dir); err != nil || s.FP8Weights || !s.FP4Weights || s.QuantMethod != "modelopt" {
		t.Errorf("ModelOpt NVFP4: %+v, %v", s, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hf_quant_config.json"), []byte(`{"quantization":{"quant_algo":"W4A8_AWQ"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if s, err := Load(dir); err != nil || s.FP8Weights || s.FP4Weights || s.QuantMethod != "modelopt w4a8_awq" {
		t.Errorf("ModelOpt W4A8_AWQ: %+v, %v", s, err)
	}
	_, err := Load(writeConfig(t, `{"architectures":["GPT2LMHeadModel"]}`))
	if !errors.Is(err, ErrUnsupported) {
		t.Errorf("unsupported architecture: %v, want ErrUnsupported", err)
	}
	if _, err := Resolve("acme/unknown-7b"); err == nil || !strings.Contains(err.Error(), "neither a directory with config.json nor a known model id") {
		t.Errorf("Resolve(unknown) = %v", err)
	}
	if _, err := Resolve(t.TempDir()); err == nil || !strings.Contains(err.Error(), "config.json: no such file") {
		t.Errorf("Resolve(empty dir) = %v", err)
	}
}
