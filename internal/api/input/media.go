package input

import (
	"github.com/mocker-server/mocker-server/internal/api/wire"
)

// Modality is a multimodal content part's modality as vLLM's chat parser
// names it (the key of --limit-mm-per-prompt).
type Modality string

// The modalities of content parts.
const (
	ModalityImage       Modality = "image"
	ModalityAudio       Modality = "audio"
	ModalityVideo       Modality = "video"
	ModalityImageEmbeds Modality = "image_embeds"
)

// LimitKey is the --limit-mm-per-prompt key the part counts against:
// image_embeds count as images, as vLLM's tracker counts them.
func (m Modality) LimitKey() string {
	if m == ModalityImageEmbeds {
		return string(ModalityImage)
	}
	return string(m)
}

// MediaPart is one multimodal content part of a chat message as sent:
// where its bytes are (URL: a data:, http(s):// or file:// URL; Data: an
// input_audio's base64 payload with its Format), before anything is
// decoded or fetched.
type MediaPart struct {
	Msg      int // index of the message
	Modality Modality
	URL      string
	Data     string // input_audio.data, image_embeds (base64)
	Format   string // input_audio.format ("wav", "mp3")
	UUID     string // the part's uuid, which vLLM uses as the item's hash
	Path     string // the part's JSON path (messages[0].content[1])
}

// parseMediaPart reads a content part of a multimodal type into a
// MediaPart; ok is false for a type that is not multimodal. Type errors are
// recorded on o (the field named by its path).
func parseMediaPart(o, part wire.Object, typ, path string) (mp MediaPart, ok bool) {
	mp.Path = path
	mp.UUID, _ = part.String("uuid")
	urlOf := func(key string) string {
		raw, has := part.Raw(key)
		if !has {
			o.Fail(wire.ErrFieldRequired(path + "." + key))
			return ""
		}
		if raw[0] == '"' { // vLLM's simple form: "image_url": "https://…"
			s, _ := part.String(key)
			return s
		}
		obj, okObj := part.Object(key)
		if !okObj {
			return ""
		}
		if !obj.Has("url") {
			o.Fail(wire.ErrFieldRequired(path + "." + key + ".url"))
			return ""
		}
		s, _ := obj.String("url")
		return s
	}
	switch typ {
	case "image_url", "input_image":
		mp.Modality, mp.URL = ModalityImage, urlOf("image_url")
	case "audio_url":
		mp.Modality, mp.URL = ModalityAudio, urlOf("audio_url")
	case "video_url":
		mp.Modality, mp.URL = ModalityVideo, urlOf("video_url")
	case "input_audio":
		mp.Modality = ModalityAudio
		ia, has := part.Object("input_audio")
		if !has {
			if o.Failed() == nil {
				o.Fail(wire.ErrFieldRequired(path + ".input_audio"))
			}
			return mp, true
		}
		if !ia.Has("data") {
			o.Fail(wire.ErrFieldRequired(path + ".input_audio.data"))
			return mp, true
		}
		mp.Data, _ = ia.String("data")
		mp.Format, _ = ia.String("format")
	case "image_embeds":
		mp.Modality = ModalityImageEmbeds
		if raw, has := part.Raw("image_embeds"); has && len(raw) > 0 && raw[0] == '{' {
			// vLLM's per-key form (Qwen2.5-VL: image_embeds with
			// image_grid_thw); the count would need each model's rule.
			o.Fail(wire.ErrInvalid(path+".image_embeds", "The dict form of image_embeds (e.g. Qwen2.5-VL's image_embeds with image_grid_thw) is not supported by mocker-server; send one base64 torch.save tensor of shape (tokens, hidden)."))
			return mp, true
		}
		mp.Data, _ = part.String("image_embeds")
	default:
		return MediaPart{}, false
	}
	return mp, true
}
