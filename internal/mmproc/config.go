package mmproc

import (
	"encoding/json"
	"fmt"
	"strings"
)

// hfConfig is the part of a Hugging Face config.json the processors read.
type hfConfig struct {
	Architectures []string `json:"architectures"`
	ModelType     string   `json:"model_type"`

	VisionConfig *visionConfig `json:"vision_config"`
	AudioConfig  *audioConfig  `json:"audio_config"`
	TextConfig   *struct {
		HiddenSize int `json:"hidden_size"`
	} `json:"text_config"`

	// Gemma 3
	MMTokensPerImage int `json:"mm_tokens_per_image"`
	// LLaVA
	VisionFeatureSelectStrategy string `json:"vision_feature_select_strategy"`
	VisionFeatureLayer          any    `json:"vision_feature_layer"`
	// LLaVA-NeXT: the (height, width) canvases of anyres
	ImageGridPinpoints [][]int `json:"image_grid_pinpoints"`
	// Mistral 3 (Pixtral vision)
	SpatialMergeSize int `json:"spatial_merge_size"`
	// InternVL (its language model's config is llm_config)
	LLMConfig *struct {
		HiddenSize int    `json:"hidden_size"`
		ModelType  string `json:"model_type"`
	} `json:"llm_config"`
	MinDynamicPatch  int     `json:"min_dynamic_patch"`
	MaxDynamicPatch  int     `json:"max_dynamic_patch"`
	DynamicImageSize *bool   `json:"dynamic_image_size"`
	UseThumbnail     *bool   `json:"use_thumbnail"`
	DownsampleRatio  float64 `json:"downsample_ratio"`
	ForceImageSize   int     `json:"force_image_size"`
	SelectLayer      *int    `json:"select_layer"`
	// Whisper (its encoder's sizes at the top level)
	DModel             int `json:"d_model"`
	EncoderLayers      int `json:"encoder_layers"`
	EncoderFFNDim      int `json:"encoder_ffn_dim"`
	NumMelBins         int `json:"num_mel_bins"`
	MaxSourcePositions int `json:"max_source_positions"`
	MaxTargetPositions int `json:"max_target_positions"`
	EncoderAttnHeads   int `json:"encoder_attention_heads"`
}

// visionConfig spans the vision towers' field names.
type visionConfig struct {
	ModelType        string  `json:"model_type"`
	Depth            int     `json:"depth"`             // Qwen
	NumHiddenLayers  int     `json:"num_hidden_layers"` // SigLIP, CLIP, Pixtral, Llama 4
	HiddenSize       int     `json:"hidden_size"`
	EmbedDim         int     `json:"embed_dim"` // Qwen2-VL
	IntermediateSize int     `json:"intermediate_size"`
	MLPRatio         float64 `json:"mlp_ratio"` // Qwen2-VL
	PatchSize        int     `json:"patch_size"`
	ImageSize        int     `json:"image_size"`
	SpatialMergeSize int     `json:"spatial_merge_size"`
	TemporalPatch    int     `json:"temporal_patch_size"`
	WindowSize       int     `json:"window_size"` // Qwen2.5-VL
	FullAttBlocks    []int   `json:"fullatt_block_indexes"`
	OutHiddenSize    int     `json:"out_hidden_size"`
	PixelShuffle     float64 `json:"pixel_shuffle_ratio"` // Llama 4
	NumChannels      int     `json:"num_channels"`
	NumHeads         int     `json:"num_heads"`           // Qwen
	NumAttnHeads     int     `json:"num_attention_heads"` // SigLIP, CLIP, Pixtral, Llama 4
	HeadDim          int     `json:"head_dim"`            // Pixtral
}

type audioConfig struct {
	DModel        int `json:"d_model"`
	EncoderLayers int `json:"encoder_layers"`
	EncoderFFN    int `json:"encoder_ffn_dim"`
	NumMelBins    int `json:"num_mel_bins"`
	MaxSourcePos  int `json:"max_source_positions"`
	AttnHeads     int `json:"encoder_attention_heads"`
}

// preprocessorConfig is the part of preprocessor_config.json (and
// processor_config.json, whose fields it shares) the processors read.
type preprocessorConfig struct {
	MinPixels         int     `json:"min_pixels"`
	MaxPixels         int     `json:"max_pixels"`
	PatchSize         flexInt `json:"patch_size"`
	MergeSize         int     `json:"merge_size"`
	TemporalPatchSize int     `json:"temporal_patch_size"`
	Size              *struct {
		ShortestEdge int `json:"shortest_edge"`
		LongestEdge  int `json:"longest_edge"`
		Height       int `json:"height"`
		Width        int `json:"width"`
	} `json:"size"`
	// Qwen3-VL's video processor: its frame sampling
	FPS       float64 `json:"fps"`
	MinFrames int     `json:"min_frames"`
	MaxFrames int     `json:"max_frames"`
	// Gemma 3
	ImageSeqLength        int     `json:"image_seq_length"`
	DoPanAndScan          *bool   `json:"do_pan_and_scan"`
	PanAndScanMinCropSize int     `json:"pan_and_scan_min_crop_size"`
	PanAndScanMaxNumCrops int     `json:"pan_and_scan_max_num_crops"`
	PanAndScanMinRatio    float64 `json:"pan_and_scan_min_ratio_to_activate"`
	// Llama 4
	MaxPatches        int   `json:"max_patches"`
	ResizeToMaxCanvas *bool `json:"resize_to_max_canvas"`
	// Pixtral
	SpatialMergeSize int `json:"spatial_merge_size"`
	// Phi-4-multimodal
	DynamicHD int `json:"dynamic_hd"`
	// Whisper-style feature extractors
	SamplingRate int `json:"sampling_rate"`
	HopLength    int `json:"hop_length"`
	ChunkLength  int `json:"chunk_length"`
	NSamples     int `json:"n_samples"`
	FeatureSize  int `json:"feature_size"`
}

// architectureFamilies maps config.json architectures to families.
var architectureFamilies = map[string]Family{
	"Qwen2VLForConditionalGeneration":            FamilyQwen2VL,
	"Qwen2_5_VLForConditionalGeneration":         FamilyQwen25VL,
	"Qwen3VLForConditionalGeneration":            FamilyQwen3VL,
	"Qwen3VLMoeForConditionalGeneration":         FamilyQwen3VL,
	"Gemma3ForConditionalGeneration":             FamilyGemma3,
	"LlavaForConditionalGeneration":              FamilyLlava, // Pixtral-HF when the vision tower is Pixtral
	"LlavaNextForConditionalGeneration":          FamilyLlavaNext,
	"LlavaOnevisionForConditionalGeneration":     FamilyLlavaOV,
	"Llama4ForConditionalGeneration":             FamilyLlama4,
	"Mistral3ForConditionalGeneration":           FamilyPixtral,
	"Qwen2AudioForConditionalGeneration":         FamilyQwen2Audio,
	"InternVLChatModel":                          FamilyInternVL,
	"Qwen2_5OmniModel":                           FamilyQwen25Omni,
	"Qwen2_5OmniForConditionalGeneration":        FamilyQwen25Omni,
	"Qwen2_5OmniThinkerForConditionalGeneration": FamilyQwen25Omni,
	"WhisperForConditionalGeneration":            FamilyWhisper,
	"Phi4MMForCausalLM":                          FamilyPhi4MM,
}

var modelTypeFamilies = map[string]Family{
	"qwen2_vl":             FamilyQwen2VL,
	"qwen2_5_vl":           FamilyQwen25VL,
	"qwen3_vl":             FamilyQwen3VL,
	"qwen3_vl_moe":         FamilyQwen3VL,
	"gemma3":               FamilyGemma3,
	"llava":                FamilyLlava,
	"llava_next":           FamilyLlavaNext,
	"llava_onevision":      FamilyLlavaOV,
	"llama4":               FamilyLlama4,
	"mistral3":             FamilyPixtral,
	"pixtral":              FamilyPixtral,
	"qwen2_audio":          FamilyQwen2Audio,
	"internvl_chat":        FamilyInternVL,
	"qwen2_5_omni":         FamilyQwen25Omni,
	"qwen2_5_omni_thinker": FamilyQwen25Omni,
	"whisper":              FamilyWhisper,
	"phi4mm":               FamilyPhi4MM,
}

func forModel(id string, files ModelFiles) (*Processor, error) {
	if files.Config == nil {
		k, ok := catalogue[strings.ToLower(id)]
		if !ok {
			return nil, fmt.Errorf("%w: %q (no config.json and not in the catalogue)", ErrUnknownModel, id)
		}
		files = ModelFiles{Config: []byte(k.config), PreprocessorConfig: []byte(k.preprocessor)}
	}
	var cfg hfConfig
	if err := json.Unmarshal(files.Config, &cfg); err != nil {
		return nil, fmt.Errorf("%w: config.json: %v", ErrBadConfig, err)
	}
	fam, ok := Family(""), false
	for _, a := range cfg.Architectures {
		if fam, ok = architectureFamilies[a]; ok {
			break
		}
	}
	if !ok {
		if fam, ok = modelTypeFamilies[cfg.ModelType]; !ok {
			return nil, fmt.Errorf("%w: %q (architectures %v, model_type %q)", ErrUnknownModel, id, cfg.Architectures, cfg.ModelType)
		}
	}
	if fam == FamilyLlava && cfg.VisionConfig != nil && cfg.VisionConfig.ModelType == "pixtral" {
		fam = FamilyPixtral
	}
	var pre preprocessorConfig
	// processor_config.json first, so preprocessor_config.json's values win.
	if files.ProcessorConfig != nil {
		if err := json.Unmarshal(files.ProcessorConfig, &pre); err != nil {
			return nil, fmt.Errorf("%w: processor_config.json: %v", ErrBadConfig, err)
		}
	}
	if files.PreprocessorConfig != nil {
		if err := json.Unmarshal(files.PreprocessorConfig, &pre); err != nil {
			return nil, fmt.Errorf("%w: preprocessor_config.json: %v", ErrBadConfig, err)
		}
	}
	var video *preprocessorConfig
	if files.VideoPreprocessorConfig != nil {
		video = new(preprocessorConfig)
		if err := json.Unmarshal(files.VideoPreprocessorConfig, video); err != nil {
			return nil, fmt.Errorf("%w: video_preprocessor_config.json: %v", ErrBadConfig, err)
		}
	}
	var r rules
	var err error
	switch fam {
	case FamilyQwen2VL, FamilyQwen25VL, FamilyQwen3VL:
		r, err = newQwenVL(fam, &cfg, &pre, video)
	case FamilyGemma3:
		r, err = newGemma3(&cfg, &pre)
	case FamilyLlava:
		r, err = newLlava(&cfg)
	case FamilyLlavaNext:
		r, err = newLlavaNext(&cfg)
	case FamilyLlavaOV:
		r, err = newLlavaOneVision(&cfg)
	case FamilyLlama4:
		r, err = newLlama4(&cfg, &pre)
	case FamilyPixtral:
		r, err = newPixtral(&cfg, &pre)
	case FamilyQwen2Audio:
		r, err = newQwen2Audio(&cfg, &pre)
	case FamilyInternVL:
		r, err = newInternVL(&cfg)
	case FamilyQwen25Omni:
		r, err = newQwenOmni(files.Config, &cfg, &pre)
	case FamilyWhisper:
		r, err = newWhisper(&cfg, &pre)
	case FamilyPhi4MM:
		r, err = newPhi4MM(files.Config, &pre)
	}
	if err != nil {
		return nil, err
	}
	return &Processor{family: fam, model: id, rules: r, hidden: textHiddenSize(files.Config, fam)}, nil
}

// textHidden is the language model's hidden size (text_config.hidden_size),
// the width of the embeddings a processor hands it, or def when the config
// does not give it.
func (c *hfConfig) textHidden(def int) int {
	if c.TextConfig != nil && c.TextConfig.HiddenSize > 0 {
		return c.TextConfig.HiddenSize
	}
	if c.LLMConfig != nil && c.LLMConfig.HiddenSize > 0 {
		return c.LLMConfig.HiddenSize
	}
	return def
}

// positive returns the first positive value, for config fields with
// several spellings and a default.
func positive(vs ...int) int {
	for _, v := range vs {
		if v > 0 {
			return v
		}
	}
	return 0
}

// flexInt is a size written either as a number or as {"height": n,
// "width": n} (Pixtral's patch_size); the object form takes its height.
type flexInt int

func (f *flexInt) UnmarshalJSON(b []byte) error {
	var n int
	if err := json.Unmarshal(b, &n); err == nil {
		*f = flexInt(n)
		return nil
	}
	var hw struct{ Height, Width int }
	if err := json.Unmarshal(b, &hw); err != nil {
		return err
	}
	*f = flexInt(hw.Height)
	return nil
}
