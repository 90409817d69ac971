package mmproc

import "encoding/json"

// textHiddenSize is the language model's hidden size as vLLM's
// ModelConfig.get_inputs_embeds_size reads it: the hidden_size of the text
// config — Qwen2.5-Omni's thinker_config.text_config, text_config,
// InternVL's llm_config — else the config's own hidden_size (Qwen2.5-VL's
// and Phi-4-multimodal's flat configs). The catalogue's Qwen-VL entries
// give the vision merger's out_hidden_size instead, which is the same
// width (the merger projects onto the language model's embeddings). 0: the
// config does not say.
func textHiddenSize(raw []byte, fam Family) int {
	type sized struct {
		HiddenSize int `json:"hidden_size"`
	}
	var c struct {
		HiddenSize    int    `json:"hidden_size"`
		TextConfig    *sized `json:"text_config"`
		LLMConfig     *sized `json:"llm_config"`
		ThinkerConfig *struct {
			TextConfig *sized `json:"text_config"`
		} `json:"thinker_config"`
		VisionConfig *struct {
			OutHiddenSize int `json:"out_hidden_size"`
		} `json:"vision_config"`
	}
	if json.Unmarshal(raw, &c) != nil {
		return 0
	}
	switch {
	case c.ThinkerConfig != nil && c.ThinkerConfig.TextConfig != nil && c.ThinkerConfig.TextConfig.HiddenSize > 0:
		return c.ThinkerConfig.TextConfig.HiddenSize
	case c.TextConfig != nil && c.TextConfig.HiddenSize > 0:
		return c.TextConfig.HiddenSize
	case c.LLMConfig != nil && c.LLMConfig.HiddenSize > 0:
		return c.LLMConfig.HiddenSize
	case c.HiddenSize > 0 && fam != FamilyWhisper:
		return c.HiddenSize
	}
	switch fam {
	case FamilyQwen2VL, FamilyQwen25VL, FamilyQwen3VL:
		if c.VisionConfig != nil {
			return c.VisionConfig.OutHiddenSize
		}
	}
	return 0
}

// TextHiddenSize returns the language model's hidden size: the width vLLM
// requires of every image_embeds and audio_embeds row when
// --enable-mm-embeds is set. ok is false when the model's config does not
// give it (the check is then skipped).
func (p *Processor) TextHiddenSize() (n int, ok bool) { return p.hidden, p.hidden > 0 }
