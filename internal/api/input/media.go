package input

import (
	"maps"
	"slices"
	"strings"

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
	ModalityAudioEmbeds Modality = "audio_embeds"
)

// LimitKey is the --limit-mm-per-prompt key the part counts against:
// image_embeds count as images and audio_embeds as audio, as vLLM's
// tracker counts them.
func (m Modality) LimitKey() string {
	switch m {
	case ModalityImageEmbeds:
		return string(ModalityImage)
	case ModalityAudioEmbeds:
		return string(ModalityAudio)
	}
	return string(m)
}

// Embeds reports whether the part carries precomputed embeddings.
func (m Modality) Embeds() bool { return m == ModalityImageEmbeds || m == ModalityAudioEmbeds }

// MediaPart is one multimodal content part of a chat message as sent:
// where its bytes are (URL: a data:, http(s):// or file:// URL; Data: an
// input_audio's base64 payload with its Format), before anything is
// decoded or fetched.
type MediaPart struct {
	Msg      int // index of the message
	Modality Modality
	URL      string
	Data     string // input_audio.data, image_embeds or audio_embeds (base64)
	// Grid is the dict form's image_grid_thw (base64), with Data its
	// image_embeds; Dict marks that form (Qwen-VL's
	// {"image_embeds": …, "image_grid_thw": …}).
	Grid   string
	Dict   bool
	Format string // input_audio.format ("wav", "mp3")
	UUID   string // the part's uuid, which vLLM uses as the item's hash
	// NoData marks a uuid-only part: it has a uuid and its data field is
	// present but empty (null, {"url": null}, an input_audio without
	// data), naming an item the processor cache holds from an earlier
	// request (vLLM's chat parser hands the processor None for it).
	NoData bool
	Path   string // the part's JSON path (messages[0].content[1])
	// Where the part stands among its message's text parts, for vLLM's
	// --interleave-mm-strings: TextsBefore text parts precede it, ending
	// at byte At of the message's joined text (its text parts joined by
	// newlines), and the message has TextsInMsg text parts.
	TextsBefore, At, TextsInMsg int
}

// parseMediaPart reads a content part of a multimodal type into a
// MediaPart; ok is false for a type that is not multimodal. Type errors are
// recorded on o (the field named by its path).
func parseMediaPart(o, part wire.Object, typ, path string) (mp MediaPart, ok bool) {
	mp.Path = path
	mp.UUID, _ = part.String("uuid")
	urlOf := func(key string) string {
		if mp.UUID != "" && uuidOnlyURL(part, key) {
			mp.NoData = true
			return ""
		}
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
		parseInputAudio(o, part, &mp)
	case "image_embeds":
		mp.Modality = ModalityImageEmbeds
		if mp.UUID != "" && uuidOnlyEmbeds(part, typ) {
			mp.NoData = true
			return mp, true
		}
		if raw, has := part.Raw("image_embeds"); has && len(raw) > 0 && raw[0] == '{' {
			parseEmbedsDict(o, part, &mp)
			return mp, true
		}
		mp.Data, _ = part.String("image_embeds")
	case "audio_embeds":
		mp.Modality = ModalityAudioEmbeds
		if mp.UUID != "" && uuidOnlyEmbeds(part, typ) {
			mp.NoData = true
			return mp, true
		}
		if raw, has := part.Raw("audio_embeds"); has && len(raw) > 0 && raw[0] == '{' {
			o.Fail(wire.ErrInvalid(path+".audio_embeds", "The dict form of audio_embeds is not supported by mocker-server; send one base64 torch.save tensor of shape (tokens, hidden)."))
			return mp, true
		}
		mp.Data, _ = part.String("audio_embeds")
	default:
		return MediaPart{}, false
	}
	return mp, true
}

// parseInputAudio reads an input_audio part's data and format.
func parseInputAudio(o, part wire.Object, mp *MediaPart) {
	mp.Modality = ModalityAudio
	ia, has := part.Object("input_audio")
	if has && mp.UUID != "" && (!ia.Has("data") || string(ia.M["data"]) == `""`) {
		// vLLM: "If a UUID is provided, audio data may be empty."
		mp.NoData = true
		return
	}
	if !has {
		if o.Failed() == nil {
			o.Fail(wire.ErrFieldRequired(mp.Path + ".input_audio"))
		}
		return
	}
	if !ia.Has("data") {
		o.Fail(wire.ErrFieldRequired(mp.Path + ".input_audio.data"))
		return
	}
	mp.Data, _ = ia.String("data")
	mp.Format, _ = ia.String("format")
}

// uuidOnlyURL reports whether a part with a uuid carries no data under
// key: vLLM's chat parser, given a uuid, reads the part's key whatever its
// type and accepts null, "", or an object whose url is null, "" or absent,
// as no data (chat_utils.py _parse_chat_message_content_mm_part; the
// parser fetches only a non-empty URL).
func uuidOnlyURL(part wire.Object, key string) bool {
	raw, present := part.M[key]
	if !present {
		return false
	}
	if wire.IsNull(raw) || string(raw) == `""` {
		return true // vLLM fetches only a non-empty URL
	}
	if len(raw) == 0 || raw[0] != '{' {
		return false
	}
	obj, ok := part.Object(key)
	return ok && (!obj.Has("url") || string(obj.M["url"]) == `""`)
}

// uuidOnlyEmbeds reports whether an embeddings part with a uuid has its
// field present and null (vLLM: "could be None if UUID is provided").
func uuidOnlyEmbeds(part wire.Object, key string) bool {
	raw, present := part.M[key]
	return present && wire.IsNull(raw)
}

// parseEmbedsDict reads vLLM's dict form of image_embeds, each value a
// base64 tensor. The Qwen-VL families' parser (DictEmbeddingItems) needs
// exactly image_embeds and image_grid_thw; a missing one is vLLM's
// message, another key (which vLLM would load and ignore) is refused.
func parseEmbedsDict(o, part wire.Object, mp *MediaPart) {
	path := mp.Path + ".image_embeds"
	d, ok := part.Object("image_embeds")
	if !ok {
		return
	}
	mp.Dict = true
	var keys []string
	for _, k := range slices.Sorted(maps.Keys(d.M)) {
		switch k {
		case "image_embeds", "image_grid_thw":
		default:
			o.Fail(wire.ErrInvalid(path+"."+k, "The dict form of image_embeds takes image_embeds and image_grid_thw; %q is not read by mocker-server.", k))
			return
		}
		keys = append(keys, "'"+k+"'")
	}
	if !d.Has("image_embeds") || !d.Has("image_grid_thw") {
		o.Fail(wire.ErrInvalid(path, "The data should contain the fields: {'image_embeds', 'image_grid_thw'}, but only found the following keys: {%s}", strings.Join(keys, ", ")))
		return
	}
	mp.Data, _ = d.String("image_embeds")
	mp.Grid, _ = d.String("image_grid_thw")
}
