package pipeline

import (
	"fmt"

	"github.com/mocker-server/mocker-server/internal/api/input"
	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/api/wire"
)

// checkEmbedsHidden applies vLLM's check of embeddings against the
// language model's hidden size (EmbeddingItems._validate_hidden_size in
// vllm/multimodal/parse.py at vllm-project/vllm@0794945f, with the expected
// size BaseProcessingInfo._get_expected_hidden_size gives under
// --enable-mm-embeds: the model's inputs-embeds size). The chat parser
// first merges a request's parts of one modality (_merge_embeds): parts of
// one shape are stacked into an (n, tokens, hidden) tensor and checked as
// one, with vLLM's batched message; parts of different shapes stay a list,
// checked item by item with the item's index. The Qwen-VL dict form is not
// checked (vLLM's DictEmbeddingItems has no such check), nor is any part
// when the served model's hidden size is not known (EmbedsHiddenSize 0).
func checkEmbedsHidden(mo *settings.MultimodalOptions, items []mmItem) *wire.APIError {
	want := mo.EmbedsHiddenSize
	if want <= 0 {
		return nil
	}
	for _, m := range []input.Modality{input.ModalityImageEmbeds, input.ModalityAudioEmbeds} {
		name := "Image"
		if m == input.ModalityAudioEmbeds {
			name = "Audio"
		}
		var its []mmItem
		for _, it := range items {
			if it.part.Modality == m && !it.part.Dict {
				its = append(its, it)
			}
		}
		if e := checkHiddenOf(its, name, want); e != nil {
			return e
		}
	}
	return nil
}

// checkHiddenOf checks one modality's embeddings parts, merged as vLLM
// merges them.
func checkHiddenOf(its []mmItem, name string, want int) *wire.APIError {
	if len(its) == 0 {
		return nil
	}
	same := true
	for _, it := range its[1:] {
		a, b := it.item, its[0].item
		same = same && a.EmbedTokens == b.EmbedTokens && a.EmbedHidden == b.EmbedHidden && a.Frames == b.Frames
	}
	if same {
		first := its[0].item
		if first.EmbedHidden == want {
			return nil
		}
		shape := fmt.Sprintf("(%d, %d, %d)", len(its), first.EmbedTokens, first.EmbedHidden)
		return wire.ErrInvalid(its[0].part.Path, "%s embedding hidden dimension mismatch: got %d, but model expects %d. Embedding shape: %s",
			name, first.EmbedHidden, want, shape)
	}
	for i, it := range its {
		if h := it.item.EmbedHidden; h != want {
			shape := fmt.Sprintf("(%d, %d)", it.item.EmbedTokens, h)
			if it.item.Frames == 1 {
				shape = fmt.Sprintf("(1, %d, %d)", it.item.EmbedTokens, h)
			}
			return wire.ErrInvalid(it.part.Path, "%s embedding [%d] hidden dimension mismatch: got %d, but model expects %d. Embedding shape: %s",
				name, i, h, want, shape)
		}
	}
	return nil
}
