// Package modelshape describes the shape of a transformer language model —
// layers, heads, hidden sizes, experts, attention kind — as far as the
// hardware timing model and the KV pool need it. A shape comes from a
// Hugging Face config.json (Load, Parse) or from a small catalogue of
// known model ids (Known).
package modelshape

import "fmt"

// Family is an architecture family the package understands.
type Family string

// The supported families, named after their Hugging Face model_type.
const (
	FamilyLlama      Family = "llama"
	FamilyQwen2      Family = "qwen2"
	FamilyQwen3      Family = "qwen3"
	FamilyMistral    Family = "mistral"
	FamilyGemma2     Family = "gemma2"
	FamilyGemma3     Family = "gemma3"
	FamilyMixtral    Family = "mixtral"
	FamilyQwen3MoE   Family = "qwen3_moe"
	FamilyDeepSeekV3 Family = "deepseek_v3"
	FamilyLlama4     Family = "llama4"
)

// architectures maps the config.json "architectures" names to families.
var architectures = map[string]Family{
	"LlamaForCausalLM":               FamilyLlama,
	"Qwen2ForCausalLM":               FamilyQwen2,
	"Qwen3ForCausalLM":               FamilyQwen3,
	"MistralForCausalLM":             FamilyMistral,
	"Gemma2ForCausalLM":              FamilyGemma2,
	"Gemma3ForCausalLM":              FamilyGemma3,
	"Gemma3ForConditionalGeneration": FamilyGemma3,
	"MixtralForCausalLM":             FamilyMixtral,
	"Qwen3MoeForCausalLM":            FamilyQwen3MoE,
	"DeepseekV3ForCausalLM":          FamilyDeepSeekV3,
	"Llama4ForConditionalGeneration": FamilyLlama4,
	"Llama4ForCausalLM":              FamilyLlama4,
}

// Shape is a model's shape. Sizes are per model (before tensor
// parallelism); a zero MoE or MLA section means the model has none.
type Shape struct {
	// Name is the model id or directory the shape came from.
	Name         string
	Architecture string
	Family       Family

	Layers       int
	Hidden       int
	Heads        int
	KVHeads      int
	HeadDim      int
	Intermediate int // dense MLP width (gate and up each)
	Vocab        int
	TiedEmbed    bool
	// MaxPosition is max_position_embeddings: the default max_model_len.
	MaxPosition int
	// WeightDtype is torch_dtype ("bfloat16", "float16", "float32").
	WeightDtype string
	// FP8Weights is set when the checkpoint itself is FP8-quantized
	// (quantization_config.quant_method "fp8"), as DeepSeek-V3 ships;
	// FP8Block when its scales are per block (weight_block_size), which
	// selects the block-scaled MoE kernels.
	FP8Weights bool
	FP8Block   bool
	// FP4Weights is set for NVFP4 checkpoints (ModelOpt's quant_algo
	// NVFP4).
	FP4Weights bool
	// QuantMethod is quantization_config.quant_method as the checkpoint
	// gives it ("" for none); only the FP8 ones set FP8Weights.
	QuantMethod string

	// SlidingWindow is the window of the sliding-window layers (0 = none);
	// SlidingLayers how many of the Layers use it.
	SlidingWindow int
	SlidingLayers int
	// AttentionChunk is Llama 4's attention_chunk_size (0 = none):
	// ChunkedLayers of the Layers attend only to the earlier positions of
	// their own chunk of that many positions (chunked local attention; a
	// position at p sees p mod AttentionChunk earlier ones), the others to
	// the whole sequence.
	AttentionChunk int
	ChunkedLayers  int

	MoE MoE
	MLA MLA
}

// MoE is a mixture-of-experts feed-forward.
type MoE struct {
	Experts      int // routed experts per MoE layer
	TopK         int // routed experts per token
	Intermediate int // per-expert width
	// Shared experts run for every token, SharedIntermediate wide in all.
	SharedIntermediate int
	// DenseLayers of the layers keep a dense MLP Intermediate wide:
	// DeepSeek's leading first_k_dense_replace, Qwen3-MoE's
	// mlp_only_layers, the layers between Llama 4 Maverick's interleaved
	// MoE layers.
	DenseLayers int
}

// MLA is DeepSeek's multi-head latent attention.
type MLA struct {
	QLoRARank  int
	KVLoRARank int
	QKNopeDim  int
	QKRopeDim  int
	VHeadDim   int
}

// IsMoE reports whether the model has routed experts.
func (s *Shape) IsMoE() bool { return s.MoE.Experts > 0 }

// ActiveParams counts the weights one token passes through: Params with
// only the top-k routed experts of each MoE layer (the shared experts and
// the router included).
func (s *Shape) ActiveParams() int64 {
	if !s.IsMoE() {
		return s.Params()
	}
	idle := int64(s.MoE.Experts-s.MoE.TopK) * 3 * int64(s.Hidden) * int64(s.MoE.Intermediate)
	return s.Params() - int64(s.MoELayers())*idle
}

// IsMLA reports whether the model uses latent attention.
func (s *Shape) IsMLA() bool { return s.MLA.KVLoRARank > 0 }

// MoELayers is the number of layers with routed experts.
func (s *Shape) MoELayers() int {
	if !s.IsMoE() {
		return 0
	}
	return s.Layers - s.MoE.DenseLayers
}

// KVElemsPerTokenLayer is the number of KV cache elements one token
// stores per layer in the whole model: 2 × KV heads × head_dim, or MLA's
// one latent vector (kv_lora_rank + rope dims), which is not split by
// tensor parallelism.
func (s *Shape) KVElemsPerTokenLayer() int {
	if s.IsMLA() {
		return s.MLA.KVLoRARank + s.MLA.QKRopeDim
	}
	return 2 * s.KVHeads * s.HeadDim
}

// Params counts the weights: embeddings, attention, MLP or experts, LM
// head (norms are left out: they are a few hundred thousand at most).
func (s *Shape) Params() int64 {
	h := int64(s.Hidden)
	embed := int64(s.Vocab) * h
	total := embed
	if !s.TiedEmbed {
		total += embed
	}
	total += int64(s.Layers) * s.attnParams()
	dense := int64(s.Layers - s.MoELayers())
	total += dense * 3 * h * int64(s.Intermediate)
	if s.IsMoE() {
		per := 3 * h * int64(s.MoE.Intermediate)
		moe := int64(s.MoE.Experts)*per + 3*h*int64(s.MoE.SharedIntermediate) + h*int64(s.MoE.Experts)
		total += int64(s.MoELayers()) * moe
	}
	return total
}

// attnParams is one layer's attention weights.
func (s *Shape) attnParams() int64 {
	h := int64(s.Hidden)
	if s.IsMLA() {
		m := s.MLA
		qk := int64(m.QKNopeDim + m.QKRopeDim)
		heads := int64(s.Heads)
		q := h*int64(m.QLoRARank) + int64(m.QLoRARank)*heads*qk
		if m.QLoRARank == 0 {
			q = h * heads * qk
		}
		kv := h*int64(m.KVLoRARank+m.QKRopeDim) + int64(m.KVLoRARank)*heads*int64(m.QKNopeDim+m.VHeadDim)
		o := heads * int64(m.VHeadDim) * h
		return q + kv + o
	}
	qkv := h * int64((s.Heads+2*s.KVHeads)*s.HeadDim)
	o := int64(s.Heads*s.HeadDim) * h
	return qkv + o
}

// Validate checks that the fields the timing model divides by are set.
func (s *Shape) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{
		{"num_hidden_layers", s.Layers}, {"hidden_size", s.Hidden}, {"num_attention_heads", s.Heads},
		{"num_key_value_heads", s.KVHeads}, {"head_dim", s.HeadDim}, {"vocab_size", s.Vocab},
	} {
		if f.v <= 0 {
			return fmt.Errorf("model %s: %s must be > 0, got %d", s.Name, f.name, f.v)
		}
	}
	if s.Intermediate <= 0 && (!s.IsMoE() || s.MoE.DenseLayers > 0) {
		return fmt.Errorf("model %s: intermediate_size must be > 0, got %d", s.Name, s.Intermediate)
	}
	if s.IsMoE() && (s.MoE.TopK <= 0 || s.MoE.TopK > s.MoE.Experts || s.MoE.Intermediate <= 0) {
		return fmt.Errorf("model %s: experts %d, experts per token %d, expert width %d are inconsistent",
			s.Name, s.MoE.Experts, s.MoE.TopK, s.MoE.Intermediate)
	}
	if s.MoE.DenseLayers < 0 || s.MoE.DenseLayers > s.Layers || s.SlidingLayers+s.ChunkedLayers > s.Layers {
		return fmt.Errorf("model %s: %d dense, %d sliding-window and %d chunked-attention layers do not fit in %d layers",
			s.Name, s.MoE.DenseLayers, s.SlidingLayers, s.ChunkedLayers, s.Layers)
	}
	if s.ChunkedLayers > 0 && s.AttentionChunk <= 0 {
		return fmt.Errorf("model %s: attention_chunk_size must be > 0 with %d chunked-attention layers, got %d", s.Name, s.ChunkedLayers, s.AttentionChunk)
	}
	if s.Heads%s.KVHeads != 0 {
		return fmt.Errorf("model %s: num_attention_heads %d is not a multiple of num_key_value_heads %d", s.Name, s.Heads, s.KVHeads)
	}
	return nil
}
