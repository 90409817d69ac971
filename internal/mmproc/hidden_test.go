package mmproc

import "testing"

// The language models' hidden sizes as their model cards and config.json
// files publish them (the width vLLM requires of embeddings rows), for
// every catalogue entry; Whisper takes no embeddings and gives none.
func TestTextHiddenSize(t *testing.T) {
	want := map[string]int{
		"qwen/qwen2-vl-2b-instruct": 1536, "qwen/qwen2-vl-7b-instruct": 3584,
		"qwen/qwen2.5-vl-3b-instruct": 2048, "qwen/qwen2.5-vl-7b-instruct": 3584,
		"qwen/qwen2.5-vl-32b-instruct": 5120, "qwen/qwen2.5-vl-72b-instruct": 8192,
		"qwen/qwen3-vl-8b-instruct": 4096, "qwen/qwen3-vl-30b-a3b-instruct": 2048, "qwen/qwen3-vl-235b-a22b-instruct": 4096,
		"google/gemma-3-4b-it": 2560, "google/gemma-3-12b-it": 3840, "google/gemma-3-27b-it": 5376,
		"llava-hf/llava-1.5-7b-hf": 4096, "llava-hf/llava-1.5-13b-hf": 5120,
		"llava-hf/llava-v1.6-mistral-7b-hf": 4096, "llava-hf/llava-v1.6-vicuna-7b-hf": 4096,
		"llava-hf/llava-onevision-qwen2-7b-ov-hf":   3584,
		"meta-llama/llama-4-scout-17b-16e-instruct": 5120, "meta-llama/llama-4-maverick-17b-128e-instruct": 5120,
		"mistral-community/pixtral-12b": 5120, "mistralai/mistral-small-3.1-24b-instruct-2503": 5120,
		"opengvlab/internvl2_5-8b": 4096, "opengvlab/internvl3-8b": 3584,
		"qwen/qwen2.5-omni-7b": 3584, "microsoft/phi-4-multimodal-instruct": 3072, "qwen/qwen2-audio-7b-instruct": 4096,
		"openai/whisper-large-v3": 0, "openai/whisper-large-v3-turbo": 0, "openai/whisper-small": 0,
	}
	for _, id := range Known() {
		w, listed := want[id]
		if !listed {
			t.Errorf("%s: no expected hidden size in the test", id)
			continue
		}
		p, err := ForModel(id, ModelFiles{})
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := p.TextHiddenSize(); got != w || ok != (w > 0) {
			t.Errorf("%s: hidden size %d (%v), want %d", id, got, ok, w)
		}
	}
	// A model directory's flat config (Qwen2.5-VL as published: hidden_size
	// at the top level) and one that does not say.
	flat := `{"architectures":["Qwen2_5_VLForConditionalGeneration"],"hidden_size":3584,"vision_config":{"depth":32,"hidden_size":1280,"patch_size":14,"spatial_merge_size":2,"temporal_patch_size":2}}`
	if p, err := ForModel("dir", ModelFiles{Config: []byte(flat)}); err != nil {
		t.Fatal(err)
	} else if n, ok := p.TextHiddenSize(); n != 3584 || !ok {
		t.Errorf("flat Qwen2.5-VL config: %d %v", n, ok)
	}
	silent := `{"architectures":["LlavaForConditionalGeneration"],"vision_config":{"model_type":"clip_vision_model","hidden_size":1024,"image_size":336,"patch_size":14}}`
	if p, err := ForModel("dir", ModelFiles{Config: []byte(silent)}); err != nil {
		t.Fatal(err)
	} else if n, ok := p.TextHiddenSize(); ok {
		t.Errorf("a config without the text hidden size: %d, want unknown", n)
	}
}
