package pipeline

import (
	"cmp"
	"slices"

	"github.com/mocker-server/mocker-server/internal/api/input"
	"github.com/mocker-server/mocker-server/internal/kv"
	"github.com/mocker-server/mocker-server/internal/mmproc"
)

// SGLang's multimodal items as its radix cache sees them (docs/multimodal.md,
// "SGLang: pad values in the radix cache"). SGLang's processor makes one MultimodalDataItem per
// modality holding every item of that modality, then splits it into one
// item per image or video only when it can cut the feature tensor by the
// item's grid (get_new_expanded_mm_items: an image item carrying
// image_grid_thw, Qwen2-VL/2.5-VL/3-VL). Each item's pad value then
// overwrites its placeholder tokens (the runs of the modality's token:
// the pieces the encoder fills, Piece.Embed).
//
// So in the mock: an image of a Qwen-VL family and an image_embeds part
// are items of their own; the other images, all audio and all video of a
// request are one bundled item per modality with one pad value. (SGLang
// splits Qwen2-/2.5-VL videos only when every clip is a single temporal
// patch, at most two frames; the mock bundles videos always.)

// sglangPads returns the pad-value runs of a prompt's items, given in
// prompt order with each one's embed runs.
func sglangPads(fam mmproc.Family, items []mmItem, runs [][]kv.MMPad) []kv.MMPad {
	if len(items) == 0 {
		return nil
	}
	bundles := map[input.Modality][]int{} // modality → its bundled items
	var order []input.Modality
	var pads []kv.MMPad
	for i, it := range items {
		if splitsPerItem(fam, it.part.Modality) {
			pads = appendPads(pads, runs[i], kv.RadixPadValue(it.item.Hash))
			continue
		}
		m := it.part.Modality
		if _, ok := bundles[m]; !ok {
			order = append(order, m)
		}
		bundles[m] = append(bundles[m], i)
	}
	for _, m := range order {
		idx := bundles[m]
		ids := make([]string, len(idx))
		for k, i := range idx {
			ids[k] = items[i].item.Hash
		}
		v := kv.RadixPadValue(ids...)
		for _, i := range idx {
			pads = appendPads(pads, runs[i], v)
		}
	}
	slices.SortFunc(pads, func(a, b kv.MMPad) int { return cmp.Compare(a.Offset, b.Offset) })
	return pads
}

// splitsPerItem reports whether SGLang keeps an item of this modality
// apart from the request's others: images of the families whose
// processor output carries image_grid_thw, and precomputed embeddings
// (one item per part).
func splitsPerItem(fam mmproc.Family, m input.Modality) bool {
	switch m {
	case input.ModalityImageEmbeds, input.ModalityAudioEmbeds:
		return true
	case input.ModalityImage:
		// Qwen2.5-Omni's images go through Qwen2VLImageProcessor too.
		return fam == mmproc.FamilyQwen2VL || fam == mmproc.FamilyQwen25VL || fam == mmproc.FamilyQwen3VL ||
			fam == mmproc.FamilyQwen25Omni
	}
	return false
}

// appendPads appends runs with their pad value.
func appendPads(dst, runs []kv.MMPad, v uint32) []kv.MMPad {
	for _, r := range runs {
		r.Value = v
		dst = append(dst, r)
	}
	return dst
}
