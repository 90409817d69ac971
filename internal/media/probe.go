package media

import (
	"bytes"
	"fmt"
	"time"
)

// Limits bound what Probe accepts beyond well-formedness. The zero value
// applies the package defaults.
type Limits struct {
	// MaxPixels is the largest width×height an image or video frame may
	// declare; 0 means DefaultMaxPixels.
	MaxPixels int64
	// MaxDuration is the longest audio or video an item may declare; 0
	// means no limit.
	MaxDuration time.Duration
}

// DefaultMaxPixels is PIL's decompression-bomb error threshold
// (2 × Image.MAX_IMAGE_PIXELS = 2 × 89,478,485): an image above it is
// refused by PIL, and so by vLLM, before any pixel is decoded.
const DefaultMaxPixels = 2 * 89478485

func (l Limits) maxPixels() int64 {
	if l.MaxPixels > 0 {
		return l.MaxPixels
	}
	return DefaultMaxPixels
}

// Probe reads an item's headers and returns its facts with the package's
// default limits. See ProbeLimits.
func Probe(data []byte) (Item, error) { return ProbeLimits(data, Limits{}) }

// ProbeLimits detects the format of data from its magic bytes and reads its
// headers: the pixel size of a PNG, JPEG, WebP, GIF, BMP or TIFF image; the duration,
// sample rate and channels of a WAV, MP3, FLAC or Ogg (Vorbis, Opus) clip;
// the frame size, duration and frame count of an MP4 video. It reads no
// more than the headers (and, for MP3 without a Xing/Info frame, the frame
// headers); it allocates nothing proportional to the pixel or sample count.
//
// A header that lies — declares more data than the bytes behind it can
// hold — is ErrCorrupt; an unknown format is ErrUnsupported; a declared
// size over the limits is ErrTooLarge.
func ProbeLimits(data []byte, lim Limits) (Item, error) {
	var (
		it  Item
		err error
	)
	switch Detect(data) {
	case FormatPNG:
		it, err = probePNG(data)
	case FormatJPEG:
		it, err = probeJPEG(data)
	case FormatWebP:
		it, err = probeWebP(data)
	case FormatGIF:
		it, err = probeGIF(data)
	case FormatWAV:
		it, err = probeWAV(data)
	case FormatMP3:
		it, err = probeMP3(data)
	case FormatFLAC:
		it, err = probeFLAC(data)
	case FormatOGG:
		it, err = probeOGG(data)
	case FormatMP4:
		it, err = probeMP4(data)
	case FormatBMP:
		it, err = probeBMP(data)
	case FormatTIFF:
		it, err = probeTIFF(data)
	default:
		return Item{}, fmt.Errorf("%w: unrecognised leading bytes", ErrUnsupported)
	}
	if err != nil {
		return Item{}, err
	}
	it.Kind = it.Format.Kind()
	it.Size = len(data)
	if it.Width > 0 || it.Height > 0 {
		if it.Width <= 0 || it.Height <= 0 {
			return Item{}, fmt.Errorf("%w: %s declares %dx%d pixels", ErrCorrupt, it.Format, it.Width, it.Height)
		}
		if int64(it.Width)*int64(it.Height) > lim.maxPixels() {
			return Item{}, fmt.Errorf("%w: %s declares %dx%d pixels, limit %d", ErrTooLarge, it.Format, it.Width, it.Height, lim.maxPixels())
		}
	}
	if lim.MaxDuration > 0 && it.Duration > lim.MaxDuration {
		return Item{}, fmt.Errorf("%w: %s lasts %v, limit %v", ErrTooLarge, it.Format, it.Duration, lim.MaxDuration)
	}
	if lim.MaxDuration > 0 && it.AudioDuration > lim.MaxDuration {
		return Item{}, fmt.Errorf("%w: %s's sound track lasts %v, limit %v", ErrTooLarge, it.Format, it.AudioDuration, lim.MaxDuration)
	}
	return it, nil
}

// Detect returns the format data's magic bytes name, or FormatUnknown.
func Detect(data []byte) Format {
	switch {
	case bytes.HasPrefix(data, pngMagic):
		return FormatPNG
	case len(data) >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF:
		return FormatJPEG
	case len(data) >= 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == "WEBP":
		return FormatWebP
	case len(data) >= 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == "WAVE":
		return FormatWAV
	case bytes.HasPrefix(data, []byte("GIF87a")) || bytes.HasPrefix(data, []byte("GIF89a")):
		return FormatGIF
	case bytes.HasPrefix(data, []byte("fLaC")):
		return FormatFLAC
	case bytes.HasPrefix(data, []byte("OggS")):
		return FormatOGG
	case len(data) >= 12 && string(data[4:8]) == "ftyp":
		switch string(data[8:12]) {
		case "heic", "heix", "mif1", "msf1", "avif", "avis":
			return FormatUnknown // HEIF and AVIF images: not read
		}
		return FormatMP4
	case len(data) >= 26 && string(data[:2]) == "BM":
		return FormatBMP
	case len(data) >= 8 && (string(data[:4]) == "II*\x00" || string(data[:4]) == "MM\x00*"):
		return FormatTIFF
	case bytes.HasPrefix(data, []byte("ID3")) || (len(data) >= 2 && data[0] == 0xFF && data[1]&0xE0 == 0xE0 && data[1]&0x06 != 0):
		// A frame sync with a layer; layer bits 00 are AAC's ADTS, not read.
		return FormatMP3
	}
	return FormatUnknown
}

var pngMagic = []byte("\x89PNG\r\n\x1a\n")

func corrupt(f Format, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrCorrupt, f, fmt.Sprintf(format, args...))
}
