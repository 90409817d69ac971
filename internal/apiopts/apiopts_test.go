package apiopts

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/mmproc"
	"github.com/mocker-server/mocker-server/internal/testutil/testcfg"
)

// The HTTP layer's options carry the configuration's settings under their
// typed names.
func TestFromConfig_FromTheConfiguration(t *testing.T) {
	cfg := testcfg.Load(t, overlayOf(t, `{"engine_type":"sglang","model":"m","served_model_name":["a","b"],
		"max_model_len":4096,"dp_size":2,"dp_routing":"least_loaded","reasoning_field":"reasoning_content",
		"scheduling_policy":"priority","startup_time":3,"request_body_timeout":2.5,"max_unflushed_tokens":7,
		"sglang":{"max_running_requests":9,"schedule_policy":"dfs_weight"},"seed":11,
		"reasoning":{"start_thinking_token_id":5,"end_thinking_token_id":6,"thinking_ratio":0.5}}`))
	o := FromConfig(cfg, nil)
	if o.Model.ServedName() != "a" || o.Model.Path != "m" || o.Model.MaxModelLen != 4096 {
		t.Errorf("model %+v", o.Model)
	}
	if o.DPRouting != settings.RouteLeastLoaded || o.Generation.ReasoningField != settings.ReasoningFieldReasoningContent ||
		!o.Generation.PriorityScheduling || o.Seed != 11 {
		t.Errorf("routing %q, reasoning field %q, priority %v, seed %d", o.DPRouting, o.Generation.ReasoningField,
			o.Generation.PriorityScheduling, o.Seed)
	}
	if r := o.Generation.Reasoning; r == nil || r.StartID != 5 || r.EndID != 6 || r.Ratio != 0.5 {
		t.Errorf("reasoning %+v", r)
	}
	if h := o.HTTP; !h.StartClosed || h.RequestBodyTimeout != 2500*time.Millisecond || h.MaxUnflushedTokens != 7 {
		t.Errorf("http %+v", h)
	}
	if s := o.SGLang; s == nil || s.MaxRunningRequests != 9 || s.SchedulePolicy != "dfs_weight" || s.DPSize != 2 ||
		s.PageSize != cfg.EffectiveBlockSize() || s.MaxTotalTokens != cfg.NumGPUBlocks*cfg.EffectiveBlockSize() {
		t.Errorf("sglang %+v", s)
	}

	// vLLM mode: no SGLang endpoints; the defaults.
	o = FromConfig(testcfg.Load(t, nil), nil)
	if o.SGLang != nil || o.DPRouting != settings.RouteRoundRobin || o.LoRA.PathCheck != settings.LoRAPathNone ||
		o.HTTP.StartClosed || o.PD.Disaggregated || o.PD.Role != settings.PDRoleNone {
		t.Errorf("defaults: sglang %v, routing %q, lora path check %q, closed %v, pd %+v",
			o.SGLang, o.DPRouting, o.LoRA.PathCheck, o.HTTP.StartClosed, o.PD)
	}
}

// overlayOf decodes a JSON overlay.
func overlayOf(t *testing.T, overlay string) map[string]any {
	t.Helper()
	var o map[string]any
	if err := json.Unmarshal([]byte(overlay), &o); err != nil {
		t.Fatal(err)
	}
	return o
}

// Every resource budget of the configuration reaches the HTTP layer: a
// budget flag the api never sees would silently do nothing.
func TestFromConfig_CarryEveryBudget(t *testing.T) {
	cfg := testcfg.Load(t, overlayOf(t, `{"max_prompts_per_request":11,"max_sequences_per_request":22,
		"max_embedding_inputs":33,"max_schema_bytes":44,"max_schema_enum":55,"max_schema_steps":66,
		"max_lora_adapters":77,"max_responses_store_bytes":88}`))
	want := settings.BudgetOptions{MaxPromptsPerRequest: 11, MaxSequencesPerRequest: 22, MaxEmbeddingInputs: 33,
		MaxSchemaBytes: 44, MaxSchemaEnum: 55, MaxSchemaSteps: 66, MaxLoRAAdapters: 77, MaxResponsesStoreBytes: 88}
	if got := FromConfig(cfg, nil).Budgets; got != want {
		t.Errorf("budgets %+v, want %+v", got, want)
	}
	// The defaults are the configuration's (vLLM/OpenAI-like) defaults.
	if got := FromConfig(testcfg.Load(t, nil), nil).Budgets; got.MaxPromptsPerRequest != 2048 ||
		got.MaxSequencesPerRequest != 4096 || got.MaxEmbeddingInputs != 2048 || got.MaxLoRAAdapters != 1024 ||
		got.MaxResponsesStoreBytes != 256<<20 || got.MaxSchemaEnum == 0 {
		t.Errorf("default budgets %+v", got)
	}
}

// The embeddings' width is checked against the served model's hidden size
// only when the processor is --model's own: a model directory's config or
// a catalogue id; a stand-in --mm-processor-model gives none.
func TestFromConfig_EmbedsHiddenSizeIsTheServedModels(t *testing.T) {
	dir := t.TempDir()
	flat := `{"architectures":["Qwen2_5_VLForConditionalGeneration"],"hidden_size":2048,"vision_config":{"depth":32,"hidden_size":1280,"patch_size":14,"spatial_merge_size":2,"temporal_patch_size":2}}`
	own, err := mmproc.ForModel(dir, mmproc.ModelFiles{Config: []byte(flat)})
	if err != nil {
		t.Fatal(err)
	}
	cfg := testcfg.Load(t, map[string]any{"model": dir})
	if got := FromConfig(cfg, own).Multimodal.EmbedsHiddenSize; got != 2048 {
		t.Errorf("model directory: %d, want its config's 2048", got)
	}
	id := "Qwen/Qwen2.5-VL-7B-Instruct"
	cat, err := mmproc.ForModel(id, mmproc.ModelFiles{})
	if err != nil {
		t.Fatal(err)
	}
	if got := FromConfig(testcfg.Load(t, map[string]any{"model": id}), cat).Multimodal.EmbedsHiddenSize; got != 3584 {
		t.Errorf("catalogue id: %d, want 3584", got)
	}
	if got := FromConfig(testcfg.Load(t, nil), cat).Multimodal.EmbedsHiddenSize; got != 0 {
		t.Errorf("stand-in processor for another model: %d, want 0 (unknown)", got)
	}
}
