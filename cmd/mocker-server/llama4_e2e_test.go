package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// Llama 4 Maverick from its config.json (text_config, the layer lists
// left to their defaults) replays exactly as its catalogue id does, at
// the table's FP8, TP 8 setup on H200 (the same summary), and the
// report's latencies sit above the weights' floor.
func TestReplay_Llama4ConfigJSONMatchesCatalogue(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "maverick")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	config := `{"architectures":["Llama4ForConditionalGeneration"],"model_type":"llama4","torch_dtype":"bfloat16",
		"text_config":{"attention_chunk_size":8192,"head_dim":128,"hidden_size":5120,"interleave_moe_layer_step":2,
		"intermediate_size":8192,"intermediate_size_mlp":16384,"max_position_embeddings":1048576,"model_type":"llama4_text",
		"num_attention_heads":40,"num_experts_per_tok":1,"num_hidden_layers":48,"num_key_value_heads":8,
		"num_local_experts":128,"torch_dtype":"bfloat16","vocab_size":202048},"vision_config":{"hidden_size":1408}}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(model string) (json.RawMessage, float64, int) {
		t.Helper()
		out, stderr, err := runCLI(t, "replay", "--hardware", "h200_sxm", "--model", model, "-tp", "8", "--quantization", "fp8",
			"--kv-cache-dtype", "fp8", "--max-model-len", "16384", "--concurrency", "8", "--requests", "24",
			"--input-len", "1000", "--output-len", "100", "--json")
		if err != nil {
			t.Fatalf("replay %s: %v\n%s", model, err, stderr)
		}
		var raw struct {
			Summary json.RawMessage `json:"summary"`
		}
		var rep struct {
			Summary struct {
				Completed int `json:"completed"`
				ITL       struct {
					P50 float64 `json:"p50"`
				} `json:"itl_ms"`
			} `json:"summary"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("stdout is not JSON: %v", err)
		}
		if err := json.Unmarshal([]byte(out), &raw); err != nil {
			t.Fatal(err)
		}
		return raw.Summary, rep.Summary.ITL.P50, rep.Summary.Completed
	}
	sum, itl, done := run(dir)
	sumID, itlID, doneID := run("meta-llama/Llama-4-Maverick-17B-128E-Instruct")
	if string(sum) != string(sumID) || done != 24 || doneID != 24 {
		t.Errorf("config.json: ITL p50 %.3f ms, %d completed; catalogue id: %.3f ms, %d completed", itl, done, itlID, doneID)
	}
	// Each GPU reads at least its share of the 17B active weights in FP8
	// per step (2.1 GB at 4.8 TB/s).
	if itl < 0.45 || itl > 50 {
		t.Errorf("ITL p50 %.3f ms", itl)
	}
}
