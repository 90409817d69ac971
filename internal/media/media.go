// Package media turns the bytes of a multimodal request item (an image, an
// audio clip, a video) into the facts a server needs about it — its kind,
// container format, pixel size, duration — by reading headers only. It never
// decodes pixel or sample data except where vLLM's multimodal hash needs the
// pixels (Hash). Every error wraps one of the package's sentinel errors, so a
// surface maps them to its own 400 answer with errors.Is.
//
// The package does no I/O: callers hand it bytes (a decoded data URL, a
// fetched body) and it returns values.
package media

import (
	"errors"
	"time"
)

// Kind is the modality of an item, as vLLM names its multimodal inputs.
type Kind uint8

// The kinds of media items.
const (
	KindUnknown Kind = iota
	KindImage
	KindAudio
	KindVideo
	// KindEmbeds is a precomputed embedding tensor (image_embeds): its
	// token count is its first dimension, not a function of pixels.
	KindEmbeds
	// KindAudioEmbeds is a precomputed audio embedding tensor
	// (audio_embeds): its token count is its first dimension.
	KindAudioEmbeds
)

// String returns the modality's name as vLLM's limit_mm_per_prompt keys it
// ("image", "audio", "video"); embeddings count as images there too but are
// named "image_embeds" here.
func (k Kind) String() string {
	switch k {
	case KindImage:
		return "image"
	case KindAudio:
		return "audio"
	case KindVideo:
		return "video"
	case KindEmbeds:
		return "image_embeds"
	case KindAudioEmbeds:
		return "audio_embeds"
	}
	return "unknown"
}

// Modality is the modality vLLM files the item under (the key of its
// multimodal data and hash): embeddings are their media's modality.
func (k Kind) Modality() string {
	switch k {
	case KindEmbeds:
		return "image"
	case KindAudioEmbeds:
		return "audio"
	}
	return k.String()
}

// Format is an item's container or codec, detected from its magic bytes.
type Format uint8

// The formats Probe recognises.
const (
	FormatUnknown Format = iota
	FormatPNG
	FormatJPEG
	FormatWebP
	FormatGIF
	FormatWAV
	FormatMP3
	FormatFLAC
	FormatOGG
	FormatMP4
	FormatBMP
	FormatTIFF
)

var formatNames = [...]string{"unknown", "png", "jpeg", "webp", "gif", "wav", "mp3", "flac", "ogg", "mp4", "bmp", "tiff"}

// String returns the format's short name ("png", "wav", …).
func (f Format) String() string {
	if int(f) < len(formatNames) {
		return formatNames[f]
	}
	return "unknown"
}

// MIME returns the format's usual media type ("image/png", …), or "" for
// FormatUnknown.
func (f Format) MIME() string {
	switch f {
	case FormatPNG:
		return "image/png"
	case FormatJPEG:
		return "image/jpeg"
	case FormatWebP:
		return "image/webp"
	case FormatGIF:
		return "image/gif"
	case FormatWAV:
		return "audio/wav"
	case FormatMP3:
		return "audio/mpeg"
	case FormatFLAC:
		return "audio/flac"
	case FormatOGG:
		return "audio/ogg"
	case FormatMP4:
		return "video/mp4"
	case FormatBMP:
		return "image/bmp"
	case FormatTIFF:
		return "image/tiff"
	}
	return ""
}

// Kind returns the modality a format carries.
func (f Format) Kind() Kind {
	switch f {
	case FormatPNG, FormatJPEG, FormatWebP, FormatGIF, FormatBMP, FormatTIFF:
		return KindImage
	case FormatWAV, FormatMP3, FormatFLAC, FormatOGG:
		return KindAudio
	case FormatMP4:
		return KindVideo
	}
	return KindUnknown
}

// Item is what a server knows about one media item without decoding it.
// The zero value of a field means "not applicable or not known".
type Item struct {
	Kind   Kind
	Format Format
	// Width and Height are the pixel size of an image or of a video's
	// frames (for an animated GIF, its logical screen).
	Width, Height int
	// Duration is the length of an audio clip or video.
	Duration time.Duration
	// SampleRate and Channels describe audio (Hz, count).
	SampleRate int
	Channels   int
	// Frames is a video's frame count (or an animated GIF's). FPS is the
	// video's average frame rate, frames per second.
	Frames int
	FPS    float64
	// AudioDuration and AudioSampleRate describe a video's first sound
	// track, from its media header (zero: the video has none).
	AudioDuration   time.Duration
	AudioSampleRate int
	// EmbedTokens is the first dimension of an image_embeds tensor: the
	// number of placeholder tokens it stands for.
	EmbedTokens int
	// EmbedDtype is an image_embeds tensor's element type as torch names
	// it ("float32", "float16", "bfloat16", "float64").
	EmbedDtype string
	// EmbedHidden is an embeddings tensor's last dimension: the width of
	// each row, which must be the language model's hidden size.
	EmbedHidden int
	// Size is the length in bytes of the encoded item.
	Size int
	// Hash is the item's multimodal hash (hex), for the caller to set from
	// the package's Hash; Probe leaves it empty.
	Hash string
}

// Errors. Every error the package returns wraps exactly one of these.
var (
	// ErrUnsupported: the bytes are of a format the package does not read.
	ErrUnsupported = errors.New("unsupported media format")
	// ErrCorrupt: the bytes claim a format but are malformed — bad base64,
	// a truncated header, a header that lies about the data behind it.
	ErrCorrupt = errors.New("corrupt media data")
	// ErrTooLarge: the item is over a size limit (its encoded bytes, or the
	// pixel count or duration its header declares).
	ErrTooLarge = errors.New("media item too large")
	// ErrNotDataURL: the string is not a data: URL.
	ErrNotDataURL = errors.New("not a data URL")
)
