package modelshape

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

// Llama 4's model cards state 109B total / 17B active (Scout, 16
// experts) and 400B / 17B (Maverick, 128 experts); the totals include
// the vision encoder, which the text shape leaves out.
func TestKnown_Llama4ParameterCounts(t *testing.T) {
	for _, c := range []struct {
		id                        string
		total, active             float64 // billions, model card
		moeLayers, dense, chunked int
	}{
		{"meta-llama/Llama-4-Scout-17B-16E-Instruct", 109, 17, 48, 0, 36},
		{"meta-llama/Llama-4-Maverick-17B-128E-Instruct", 400, 17, 24, 24, 36},
	} {
		s, ok := Known(c.id)
		if !ok {
			t.Fatalf("%s: not in the catalogue", c.id)
		}
		if err := s.Validate(); err != nil {
			t.Errorf("%s: %v", c.id, err)
		}
		total, active := float64(s.Params())/1e9, float64(s.ActiveParams())/1e9
		if math.Abs(total-c.total)/c.total > 0.02 {
			t.Errorf("%s: %.1fB parameters, model card %.0fB", c.id, total, c.total)
		}
		if math.Abs(active-c.active)/c.active > 0.03 {
			t.Errorf("%s: %.2fB active parameters, model card %.0fB", c.id, active, c.active)
		}
		if s.MoELayers() != c.moeLayers || s.MoE.DenseLayers != c.dense || s.ChunkedLayers != c.chunked {
			t.Errorf("%s: %d MoE, %d dense, %d chunked layers; want %d, %d, %d", c.id,
				s.MoELayers(), s.MoE.DenseLayers, s.ChunkedLayers, c.moeLayers, c.dense, c.chunked)
		}
		t.Logf("%s: %.2fB total, %.2fB active", c.id, total, active)
	}
	// The dense models are all active.
	if s, _ := Known("meta-llama/Llama-3.1-8B-Instruct"); s.ActiveParams() != s.Params() {
		t.Errorf("dense model: %d active of %d", s.ActiveParams(), s.Params())
	}
	fp8, ok := Known("nvidia/Llama-4-Scout-17B-16E-Instruct-FP8")
	if !ok || !fp8.FP8Weights || fp8.QuantMethod != "modelopt" || fp8.ChunkedLayers != 36 {
		t.Errorf("ModelOpt FP8 Scout: %+v, %v", fp8, ok)
	}
	if s, ok := Known("meta-llama/Llama-4-Maverick-17B-128E"); !ok || s.Name != "meta-llama/Llama-4-Maverick-17B-128E-Instruct" {
		t.Errorf("base Maverick alias: %+v, %v", s, ok)
	}
}

// maverickConfig is Maverick's config.json as published (its text_config
// fields; the vision tower's elided), which leaves moe_layers and
// no_rope_layers to transformers' defaults.
const maverickConfig = `{"architectures":["Llama4ForConditionalGeneration"],"model_type":"llama4",
	"text_config":{"attention_bias":false,"attention_chunk_size":8192,"head_dim":128,"hidden_act":"silu",
		"hidden_size":5120,"interleave_moe_layer_step":2,"intermediate_size":8192,"intermediate_size_mlp":16384,
		"max_position_embeddings":1048576,"model_type":"llama4_text","num_attention_heads":40,
		"num_experts_per_tok":1,"num_hidden_layers":48,"num_key_value_heads":8,"num_local_experts":128,
		"rope_theta":500000.0,"torch_dtype":"bfloat16","use_qk_norm":false,"vocab_size":202048},
	"torch_dtype":"bfloat16","vision_config":{"hidden_size":1408,"num_hidden_layers":34}}`

// A Llama 4 config.json reads to the catalogue's shape whether the layer
// lists are left to their defaults, spelled out, or empty (transformers
// then takes the default too).
func TestLoad_Llama4(t *testing.T) {
	want, _ := Known("meta-llama/Llama-4-Maverick-17B-128E-Instruct")
	var moe, rope []string
	for i := range 48 {
		if i%2 == 1 {
			moe = append(moe, strconv.Itoa(i))
		}
		rope = append(rope, map[bool]string{true: "1", false: "0"}[(i+1)%4 != 0])
	}
	for name, body := range map[string]string{
		"defaults": maverickConfig,
		"lists": strings.Replace(maverickConfig, `"interleave_moe_layer_step":2,`,
			`"moe_layers":[`+strings.Join(moe, ",")+`],"no_rope_layers":[`+strings.Join(rope, ",")+`],`, 1),
		"empty no_rope_layers": strings.Replace(maverickConfig, `"use_qk_norm":false`, `"use_qk_norm":false,"no_rope_layers":[]`, 1),
	} {
		got, err := Load(writeConfig(t, body))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		got.Name, want.Name = "", ""
		if *got != *want {
			t.Errorf("%s:\n config.json %+v\n catalogue   %+v", name, *got, *want)
		}
	}
	scout := strings.NewReplacer(`"interleave_moe_layer_step":2`, `"interleave_moe_layer_step":1`,
		`"num_local_experts":128`, `"num_local_experts":16`, `"max_position_embeddings":1048576`, `"max_position_embeddings":10485760`).Replace(maverickConfig)
	got, err := Load(writeConfig(t, scout))
	want, _ = Known("meta-llama/Llama-4-Scout-17B-16E-Instruct")
	if err == nil {
		got.Name, want.Name = "", ""
	}
	if err != nil || *got != *want {
		t.Errorf("Scout: %+v, %v\n catalogue %+v", got, err, want)
	}
	// Without attention_chunk_size every layer attends globally.
	got, err = Load(writeConfig(t, strings.Replace(maverickConfig, `"attention_chunk_size":8192,`, ``, 1)))
	if err != nil || got.ChunkedLayers != 0 || got.AttentionChunk != 0 {
		t.Errorf("no chunk: %+v, %v", got, err)
	}
	for _, c := range []struct{ name, old, new, want string }{
		{"missing dense width", `"intermediate_size_mlp":16384,`, ``, `missing field "intermediate_size_mlp"`},
		{"missing experts", `"num_local_experts":128,`, ``, `missing field "num_local_experts"`},
		{"zero step", `"interleave_moe_layer_step":2`, `"interleave_moe_layer_step":0`, `"interleave_moe_layer_step": want ≥ 1, got 0`},
		{"negative chunk", `"attention_chunk_size":8192`, `"attention_chunk_size":-1`, `"attention_chunk_size": want ≥ 0, got -1`},
		{"bad list", `"use_qk_norm":false`, `"use_qk_norm":false,"no_rope_layers":"all"`, `field "no_rope_layers": want a list of integers`},
		{"too many MoE layers", `"interleave_moe_layer_step":2,`, `"moe_layers":[` + strings.Repeat("1,", 60) + `1],`, "dense"},
	} {
		_, err := Load(writeConfig(t, strings.Replace(maverickConfig, c.old, c.new, 1)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
