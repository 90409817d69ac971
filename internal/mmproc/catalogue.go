package mmproc

import (
	"maps"
	"slices"
)

// known is a catalogue entry: the config.json and preprocessor_config.json
// fields the processors read, as the model's published files have them.
type known struct{ config, preprocessor string }

const (
	qwen2VLVision  = `"vision_config":{"depth":32,"embed_dim":1280,"mlp_ratio":4,"num_heads":16,"patch_size":14,"spatial_merge_size":2,"temporal_patch_size":2}`
	qwen25VLVision = `"depth":32,"hidden_size":1280,"intermediate_size":3420,"num_heads":16,"patch_size":14,"spatial_merge_size":2,"temporal_patch_size":2,"window_size":112,"fullatt_block_indexes":[7,15,23,31]`
	qwenPre        = `{"min_pixels":3136,"max_pixels":12845056,"patch_size":14,"temporal_patch_size":2,"merge_size":2}`
	qwen3VLPre     = `{"size":{"shortest_edge":65536,"longest_edge":16777216},"patch_size":16,"temporal_patch_size":2,"merge_size":2}`
	gemma3Vision   = `"vision_config":{"model_type":"siglip_vision_model","hidden_size":1152,"intermediate_size":4304,"num_hidden_layers":27,"image_size":896,"patch_size":14},"mm_tokens_per_image":256`
	llama4Config   = `{"architectures":["Llama4ForConditionalGeneration"],"vision_config":{"hidden_size":1408,"intermediate_size":5632,"num_hidden_layers":34,"image_size":336,"patch_size":14,"pixel_shuffle_ratio":0.5},"text_config":{"hidden_size":5120}}`
	// InternVL 2.5 and 3 (8B): InternViT-300M-448px-V2_5 and the dynamic
	// tiling settings of the models' config.json.
	internVLConfig = `{"architectures":["InternVLChatModel"],"model_type":"internvl_chat","downsample_ratio":0.5,"dynamic_image_size":true,"force_image_size":448,"min_dynamic_patch":1,"max_dynamic_patch":12,"use_thumbnail":true,"ps_version":"v2","select_layer":-1,"vision_config":{"hidden_size":1024,"intermediate_size":4096,"num_hidden_layers":24,"image_size":448,"patch_size":14},"llm_config":`
	// Qwen2.5-Omni-7B: the thinker's towers and its feature extractor's
	// 300-s window (chunk_length 300, n_samples 4,800,000).
	qwenOmniConfig = `{"architectures":["Qwen2_5OmniModel"],"model_type":"qwen2_5_omni","thinker_config":{"architectures":["Qwen2_5OmniThinkerForConditionalGeneration"],"audio_config":{"d_model":1280,"encoder_layers":32,"encoder_ffn_dim":5120,"num_mel_bins":128,"max_source_positions":1500,"n_window":100,"output_dim":3584},"vision_config":{` + qwen25VLVision + `,"out_hidden_size":3584},"text_config":{"hidden_size":3584}}}`
	qwenOmniPre    = `{"min_pixels":3136,"max_pixels":12845056,"patch_size":14,"temporal_patch_size":2,"merge_size":2,"feature_size":128,"sampling_rate":16000,"hop_length":160,"chunk_length":300,"n_samples":4800000}`
	whisperPre     = `{"chunk_length":30,"feature_size":128,"hop_length":160,"n_samples":480000,"sampling_rate":16000}`
	// LLaVA-NeXT (llava-v1.6) as llava-hf publishes it: LLaVA-1.5's CLIP
	// tower and the five anyres canvases.
	llavaNextConfig = `{"architectures":["LlavaNextForConditionalGeneration"],"model_type":"llava_next","image_grid_pinpoints":[[336,672],[672,336],[672,672],[1008,336],[336,1008]],"vision_feature_select_strategy":"default","vision_feature_layer":-2,"vision_config":{"model_type":"clip_vision_model","hidden_size":1024,"intermediate_size":4096,"num_hidden_layers":24,"image_size":336,"patch_size":14},"text_config":{"hidden_size":4096}}`
	// LLaVA-OneVision (Qwen2-7B) as llava-hf publishes it: SigLIP-so400m
	// at 384 px cut to 26 layers, the "full" feature strategy and the 36
	// anyres_max_9 canvases of 1×1 to 6×6 384-px crops.
	llavaOVConfig = `{"architectures":["LlavaOnevisionForConditionalGeneration"],"model_type":"llava_onevision","image_grid_pinpoints":[[384,384],[384,768],[384,1152],[384,1536],[384,1920],[384,2304],[768,384],[768,768],[768,1152],[768,1536],[768,1920],[768,2304],[1152,384],[1152,768],[1152,1152],[1152,1536],[1152,1920],[1152,2304],[1536,384],[1536,768],[1536,1152],[1536,1536],[1536,1920],[1536,2304],[1920,384],[1920,768],[1920,1152],[1920,1536],[1920,1920],[1920,2304],[2304,384],[2304,768],[2304,1152],[2304,1536],[2304,1920],[2304,2304]],"vision_feature_select_strategy":"full","vision_feature_layer":-1,"vision_config":{"model_type":"siglip_vision_model","hidden_size":1152,"intermediate_size":4304,"num_hidden_layers":26,"num_attention_heads":16,"image_size":384,"patch_size":14},"text_config":{"hidden_size":3584}}`
	llama4Pre     = `{"max_patches":16,"resize_to_max_canvas":false,"size":{"height":336,"width":336}}`
)

// catalogue holds the known model ids, lowercased, for a --model that is
// an id rather than a directory.
var catalogue = map[string]known{
	"qwen/qwen2-vl-2b-instruct": {`{"architectures":["Qwen2VLForConditionalGeneration"],` + qwen2VLVision + `,"text_config":{"hidden_size":1536}}`, qwenPre},
	"qwen/qwen2-vl-7b-instruct": {`{"architectures":["Qwen2VLForConditionalGeneration"],` + qwen2VLVision + `,"text_config":{"hidden_size":3584}}`, qwenPre},

	"qwen/qwen2.5-vl-3b-instruct":  {`{"architectures":["Qwen2_5_VLForConditionalGeneration"],"vision_config":{` + qwen25VLVision + `,"out_hidden_size":2048}}`, qwenPre},
	"qwen/qwen2.5-vl-7b-instruct":  {`{"architectures":["Qwen2_5_VLForConditionalGeneration"],"vision_config":{` + qwen25VLVision + `,"out_hidden_size":3584}}`, qwenPre},
	"qwen/qwen2.5-vl-32b-instruct": {`{"architectures":["Qwen2_5_VLForConditionalGeneration"],"vision_config":{` + qwen25VLVision + `,"out_hidden_size":5120}}`, qwenPre},
	"qwen/qwen2.5-vl-72b-instruct": {`{"architectures":["Qwen2_5_VLForConditionalGeneration"],"vision_config":{` + qwen25VLVision + `,"out_hidden_size":8192}}`, qwenPre},

	"qwen/qwen3-vl-8b-instruct":                     {`{"architectures":["Qwen3VLForConditionalGeneration"],"vision_config":{"depth":27,"hidden_size":1152,"intermediate_size":4304,"patch_size":16,"spatial_merge_size":2,"temporal_patch_size":2,"out_hidden_size":4096}}`, qwen3VLPre},
	"qwen/qwen3-vl-30b-a3b-instruct":                {`{"architectures":["Qwen3VLMoeForConditionalGeneration"],"vision_config":{"depth":27,"hidden_size":1152,"intermediate_size":4304,"patch_size":16,"spatial_merge_size":2,"temporal_patch_size":2,"out_hidden_size":2048}}`, qwen3VLPre},
	"qwen/qwen3-vl-235b-a22b-instruct":              {`{"architectures":["Qwen3VLMoeForConditionalGeneration"],"vision_config":{"depth":27,"hidden_size":1152,"intermediate_size":4304,"patch_size":16,"spatial_merge_size":2,"temporal_patch_size":2,"out_hidden_size":4096}}`, qwen3VLPre},
	"google/gemma-3-4b-it":                          {`{"architectures":["Gemma3ForConditionalGeneration"],` + gemma3Vision + `,"text_config":{"hidden_size":2560}}`, `{}`},
	"google/gemma-3-12b-it":                         {`{"architectures":["Gemma3ForConditionalGeneration"],` + gemma3Vision + `,"text_config":{"hidden_size":3840}}`, `{}`},
	"google/gemma-3-27b-it":                         {`{"architectures":["Gemma3ForConditionalGeneration"],` + gemma3Vision + `,"text_config":{"hidden_size":5376}}`, `{}`},
	"llava-hf/llava-1.5-7b-hf":                      {`{"architectures":["LlavaForConditionalGeneration"],"vision_feature_select_strategy":"default","vision_feature_layer":-2,"vision_config":{"model_type":"clip_vision_model","hidden_size":1024,"intermediate_size":4096,"num_hidden_layers":24,"image_size":336,"patch_size":14},"text_config":{"hidden_size":4096}}`, `{}`},
	"llava-hf/llava-1.5-13b-hf":                     {`{"architectures":["LlavaForConditionalGeneration"],"vision_feature_select_strategy":"default","vision_feature_layer":-2,"vision_config":{"model_type":"clip_vision_model","hidden_size":1024,"intermediate_size":4096,"num_hidden_layers":24,"image_size":336,"patch_size":14},"text_config":{"hidden_size":5120}}`, `{}`},
	"llava-hf/llava-v1.6-mistral-7b-hf":             {llavaNextConfig, `{}`},
	"llava-hf/llava-v1.6-vicuna-7b-hf":              {llavaNextConfig, `{}`},
	"llava-hf/llava-onevision-qwen2-7b-ov-hf":       {llavaOVConfig, `{}`},
	"meta-llama/llama-4-scout-17b-16e-instruct":     {llama4Config, llama4Pre},
	"meta-llama/llama-4-maverick-17b-128e-instruct": {llama4Config, llama4Pre},
	"mistral-community/pixtral-12b":                 {`{"architectures":["LlavaForConditionalGeneration"],"vision_config":{"model_type":"pixtral","hidden_size":1024,"intermediate_size":4096,"num_hidden_layers":24,"image_size":1024,"patch_size":16},"text_config":{"hidden_size":5120}}`, `{"patch_size":{"height":16,"width":16},"size":{"longest_edge":1024}}`},
	"mistralai/mistral-small-3.1-24b-instruct-2503": {`{"architectures":["Mistral3ForConditionalGeneration"],"spatial_merge_size":2,"vision_config":{"model_type":"pixtral","hidden_size":1024,"intermediate_size":4096,"num_hidden_layers":24,"image_size":1540,"patch_size":14},"text_config":{"hidden_size":5120}}`, `{"patch_size":14,"size":{"longest_edge":1540}}`},
	"opengvlab/internvl2_5-8b":                      {internVLConfig + `{"model_type":"internlm2","hidden_size":4096}}`, `{}`},
	"opengvlab/internvl3-8b":                        {internVLConfig + `{"model_type":"qwen2","hidden_size":3584}}`, `{}`},
	"qwen/qwen2.5-omni-7b":                          {qwenOmniConfig, qwenOmniPre},
	// Whisper: config.json and preprocessor_config.json as published
	// (large-v3: 128 mel bins; the others 80).
	"openai/whisper-large-v3":       {`{"architectures":["WhisperForConditionalGeneration"],"model_type":"whisper","d_model":1280,"encoder_layers":32,"encoder_ffn_dim":5120,"num_mel_bins":128,"max_source_positions":1500,"max_target_positions":448}`, whisperPre},
	"openai/whisper-large-v3-turbo": {`{"architectures":["WhisperForConditionalGeneration"],"model_type":"whisper","d_model":1280,"encoder_layers":32,"encoder_ffn_dim":5120,"num_mel_bins":128,"max_source_positions":1500,"max_target_positions":448}`, whisperPre},
	"openai/whisper-small":          {`{"architectures":["WhisperForConditionalGeneration"],"model_type":"whisper","d_model":768,"encoder_layers":12,"encoder_ffn_dim":3072,"num_mel_bins":80,"max_source_positions":1500,"max_target_positions":448}`, `{"chunk_length":30,"feature_size":80,"hop_length":160,"n_samples":480000,"sampling_rate":16000}`},
	// Phi-4-multimodal-instruct: config.json's LLM width, audio
	// embedding and Conformer, preprocessor_config.json's dynamic_hd.
	"microsoft/phi-4-multimodal-instruct": {`{"architectures":["Phi4MMForCausalLM"],"model_type":"phi4mm","hidden_size":3072,"embd_layer":{"audio_embd_layer":{"compression_rate":8,"downsample_rate":1},"image_embd_layer":{"crop_size":448}},"audio_processor":{"name":"cascades","config":{"attention_dim":1024,"attention_heads":16,"num_blocks":24,"linear_units":1536,"input_size":80,"time_reduction":8}}}`, `{"dynamic_hd":36,"audio_compression_rate":8,"audio_downsample_rate":1,"audio_feat_stride":1}`},
	"qwen/qwen2-audio-7b-instruct":        {`{"architectures":["Qwen2AudioForConditionalGeneration"],"audio_config":{"d_model":1280,"encoder_layers":32,"encoder_ffn_dim":5120,"num_mel_bins":128,"max_source_positions":1500},"text_config":{"hidden_size":4096}}`, `{"feature_size":128,"sampling_rate":16000,"hop_length":160,"chunk_length":30,"n_samples":480000}`},
}

// Known returns the catalogue's model ids, sorted.
func Known() []string { return slices.Sorted(maps.Keys(catalogue)) }
