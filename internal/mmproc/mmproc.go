// Package mmproc holds the multimodal processor rules of the model families
// vLLM serves: how many placeholder tokens an image, audio clip or video
// becomes for a model, the placeholder text the chat template renders and
// what vLLM's processor replaces it with, and the encoder's FLOPs for the
// timing model. A Processor comes from a model directory's
// preprocessor_config.json and config.json (ForModel) or from a small
// catalogue of known model ids. It reads no files: the caller hands it the
// files' contents. The derivations are in docs/multimodal.md.
package mmproc

import (
	"errors"
	"fmt"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/media"
)

// Family is a multimodal processor family, named after vLLM's model files.
type Family string

// The families the package knows.
const (
	FamilyQwen2VL    Family = "qwen2_vl"
	FamilyQwen25VL   Family = "qwen2_5_vl"
	FamilyQwen3VL    Family = "qwen3_vl"
	FamilyGemma3     Family = "gemma3"
	FamilyLlava      Family = "llava"
	FamilyLlavaNext  Family = "llava_next"
	FamilyLlavaOV    Family = "llava_onevision"
	FamilyLlama4     Family = "llama4"
	FamilyPixtral    Family = "pixtral"
	FamilyQwen2Audio Family = "qwen2_audio"
	FamilyInternVL   Family = "internvl_chat"
	FamilyQwen25Omni Family = "qwen2_5_omni"
	FamilyWhisper    Family = "whisper"
	FamilyPhi4MM     Family = "phi4mm"
)

// ModelFiles are the contents of a model directory's processor files; a nil
// field means the file is absent.
type ModelFiles struct {
	Config                  []byte // config.json
	PreprocessorConfig      []byte // preprocessor_config.json
	ProcessorConfig         []byte // processor_config.json (Gemma 3's image_seq_length, Llama 4, …)
	VideoPreprocessorConfig []byte // video_preprocessor_config.json (Qwen3-VL)
}

// Errors, for errors.Is.
var (
	// ErrUnknownModel: neither the files nor the catalogue name a
	// multimodal family.
	ErrUnknownModel = errors.New("not a known multimodal model")
	// ErrModality: the model does not accept this kind of item (vLLM:
	// "… is not supported for this model").
	ErrModality = errors.New("modality not supported by this model")
	// ErrBadItem: the item lacks what its token count needs (an image with
	// no size, audio with no duration) or is outside the processor's range.
	ErrBadItem = errors.New("media item cannot be processed")
	// ErrBadConfig: a processor or model config file is malformed.
	ErrBadConfig = errors.New("bad multimodal processor config")
)

// Piece is one run of a replacement: Count copies of the text Token (one
// token of the model's vocabulary, or a short text such as Gemma 3's
// "\n\n"). Embed marks the positions the encoder's output fills (vLLM's
// is_embed); the others are structural tokens of the sequence.
type Piece struct {
	Token string
	Count int
	Embed bool
}

// Replacement is what vLLM's processor puts in the prompt for one item: the
// template's placeholder Target is replaced by the Pieces in order.
type Replacement struct {
	// Target is the placeholder text the chat template renders for the
	// item (e.g. "<|image_pad|>"), which the Pieces replace.
	Target string
	Pieces []Piece
	// Before and After are the tokens the chat template renders just
	// before and after Target that vLLM's placeholder range — and so the
	// KV blocks keyed by the item's hash — covers as well: Qwen2-Audio's
	// <|audio_bos|> and <|audio_eos|>, which vLLM finds around the audio
	// tokens the HF processor expanded. Empty for the other families, whose
	// range is exactly the Pieces.
	Before, After []string
	// Merges are the adjacent token pairs vLLM's processor fuses into one
	// token once the replacement is spliced into the prompt's token ids,
	// so the ids equal what the tokenizer gives for the joined text (Gemma
	// 3: a "\n" or "\n\n" of the template next to the replacement's
	// "\n\n"). Apply them with ApplyMergesIndexed; empty for other families.
	Merges []Merge
}

// Merge fuses the token First followed by the token Second into Into.
type Merge struct{ First, Second, Into string }

// ApplyMergesIndexed fuses, in order, every non-overlapping occurrence of
// each merge's pair in ids (left to right, as vLLM's replace_token_matches
// does), looking tokens up with id; a merge whose tokens the vocabulary
// lacks is skipped. It also returns where each of the original ids went: pos[i] is the index in the result of the token that
// holds ids[i] (a fused pair's two ids map to the fused token). A
// placeholder range that started at ids[i] starts at pos[i] after the
// merge with its length unchanged, as vLLM's _find_mm_placeholders maps
// it back through the fused tokens. ids is left unchanged.
func ApplyMergesIndexed(ids []uint32, merges []Merge, id func(token string) (uint32, bool)) ([]uint32, []int) {
	pos := make([]int, len(ids))
	for i := range pos {
		pos[i] = i
	}
	cur := append([]uint32(nil), ids...)
	for _, m := range merges {
		a, ok1 := id(m.First)
		b, ok2 := id(m.Second)
		c, ok3 := id(m.Into)
		if !ok1 || !ok2 || !ok3 {
			continue
		}
		out := make([]uint32, 0, len(cur))
		moved := make([]int, len(cur)) // cur index → out index
		for i := 0; i < len(cur); i++ {
			moved[i] = len(out)
			if i+1 < len(cur) && cur[i] == a && cur[i+1] == b {
				moved[i+1] = len(out)
				out = append(out, c)
				i++
				continue
			}
			out = append(out, cur[i])
		}
		for i := range pos {
			pos[i] = moved[pos[i]]
		}
		cur = out
	}
	return cur, pos
}

// Len returns the number of pieces' tokens, counting each Piece.Token as
// one token: the item's length in the prompt (vLLM's PlaceholderRange
// length).
func (r Replacement) Len() int {
	n := 0
	for _, p := range r.Pieces {
		n += p.Count
	}
	return n
}

// Embeds returns the number of positions the encoder's output fills.
func (r Replacement) Embeds() int {
	n := 0
	for _, p := range r.Pieces {
		if p.Embed {
			n += p.Count
		}
	}
	return n
}

// Text returns the replacement as one string (each piece's token repeated).
func (r Replacement) Text() string {
	b := make([]byte, 0, r.textLen())
	for _, p := range r.Pieces {
		for range p.Count {
			b = append(b, p.Token...)
		}
	}
	return string(b)
}

func (r Replacement) textLen() int {
	n := 0
	for _, p := range r.Pieces {
		n += len(p.Token) * p.Count
	}
	return n
}

// Processor applies one model's multimodal rules. Safe for concurrent use.
type Processor struct {
	family Family
	model  string
	rules  rules
	hidden int // the language model's hidden size (0: unknown)
	// base is the processor as loaded, before any mm_processor_kwargs
	// (nil: this is it), and kwargs the ones applied to it (WithKwargs).
	base   *Processor
	kwargs []media.Field
}

// rules is one family's implementation.
type rules interface {
	modalities() []media.Kind
	// placeholder is the text the chat template renders for one item of k.
	placeholder(k media.Kind) string
	replacement(it media.Item) (Replacement, error)
	encoderFLOPs(it media.Item) (float64, error)
	encoderWork(it media.Item) (*engine.EncoderWork, error)
}

// Family returns the processor's family.
func (p *Processor) Family() Family { return p.family }

// Model returns the model id or directory the processor was made for.
func (p *Processor) Model() string { return p.model }

// Supports reports whether the model accepts items of kind k.
func (p *Processor) Supports(k media.Kind) bool {
	for _, m := range p.rules.modalities() {
		if m == k {
			return true
		}
	}
	return false
}

// Modalities returns the kinds of items the model accepts.
func (p *Processor) Modalities() []media.Kind {
	return append([]media.Kind(nil), p.rules.modalities()...)
}

// AudioEmbeds reports whether the model takes audio_embeds: Qwen2-Audio,
// whose vLLM replacement reads the feature count from audio_embeds'
// first dimension. The other audio families' replacements read it from
// the audio features (Qwen2.5-Omni's feature_attention_mask, Phi-4's and
// Whisper's own), which embeddings do not have.
func (p *Processor) AudioEmbeds() bool {
	if p == nil {
		return false
	}
	_, ok := p.rules.(*qwen2Audio)
	return ok
}

// EmbedsGridMerge returns the spatial merge size of a Qwen-VL family
// (Qwen2-VL, Qwen2.5-VL, Qwen3-VL), whose data parser takes image_embeds
// in vLLM's dict form with image_grid_thw: an image of grid (t, h, w) is
// t·h·w / merge² tokens. ok is false for every other family, whose parser
// has no dict form.
func (p *Processor) EmbedsGridMerge() (merge int, ok bool) {
	if p == nil {
		return 0, false
	}
	if q, isQwen := p.rules.(*qwenVL); isQwen {
		return q.merge, true
	}
	return 0, false
}

// Placeholder returns the text the model's chat template renders for one
// item of kind k (the Target of its Replacement), or "" if unsupported.
func (p *Processor) Placeholder(k media.Kind) string {
	if !p.Supports(k) {
		return ""
	}
	return p.rules.placeholder(k)
}

// numberedRules is a family whose every item has its own placeholder
// (Phi-4-multimodal's <|image_1|>, <|image_2|>, …).
type numberedRules interface {
	numberedTarget(k media.Kind, n int) string
}

// ItemTarget returns the placeholder the chat template renders for the
// n-th item (from 1) of kind k in a prompt, which that item's replacement
// takes the place of: Placeholder(k) for every family but those that
// number their items, as vLLM's get_placeholder_str does. Image
// embeddings count as images, audio embeddings as audio.
func (p *Processor) ItemTarget(k media.Kind, n int) string {
	k = mediaKind(k)
	if !p.Supports(k) {
		return ""
	}
	if nr, ok := p.rules.(numberedRules); ok {
		return nr.numberedTarget(k, n)
	}
	return p.rules.placeholder(k)
}

// Replace returns what vLLM's processor puts in the prompt for it.
func (p *Processor) Replace(it media.Item) (Replacement, error) {
	if err := p.check(it); err != nil {
		return Replacement{}, err
	}
	return p.rules.replacement(it)
}

// Tokens returns the number of prompt tokens the item occupies after
// expansion: its Replacement's Len.
func (p *Processor) Tokens(it media.Item) (int, error) {
	r, err := p.Replace(it)
	if err != nil {
		return 0, err
	}
	return r.Len(), nil
}

// EncoderFLOPs returns the floating-point operations of the model's vision
// or audio encoder for one item (0 for precomputed embeddings).
func (p *Processor) EncoderFLOPs(it media.Item) (float64, error) {
	if err := p.check(it); err != nil {
		return 0, err
	}
	if mediaKind(it.Kind) != it.Kind {
		return 0, nil
	}
	return p.rules.encoderFLOPs(it)
}

// EncoderWork returns the item's encoder pass as operators, for the
// hardware model to price the tower's own GEMMs and attention (nil for
// embeddings: the client ran the encoder).
func (p *Processor) EncoderWork(it media.Item) (*engine.EncoderWork, error) {
	if err := p.check(it); err != nil {
		return nil, err
	}
	if mediaKind(it.Kind) != it.Kind {
		return nil, nil
	}
	return p.rules.encoderWork(it)
}

// mediaKind is the kind of media an item of kind k stands for: image
// embeddings count as images, audio embeddings as audio, the rest as
// themselves.
func mediaKind(k media.Kind) media.Kind {
	switch k {
	case media.KindEmbeds:
		return media.KindImage
	case media.KindAudioEmbeds:
		return media.KindAudio
	}
	return k
}

func (p *Processor) check(it media.Item) error {
	k := mediaKind(it.Kind)
	if !p.Supports(k) {
		return fmt.Errorf("%w: %s input for %s", ErrModality, it.Kind, p.family)
	}
	return nil
}

// ForModel returns the processor for a model: from its files when they name
// a known architecture (config.json's architectures or model_type), else
// from the catalogue of known ids. ErrUnknownModel means the model is not
// multimodal as far as the package knows.
func ForModel(id string, files ModelFiles) (*Processor, error) {
	return forModel(id, files)
}
