package api

import (
	"encoding/binary"
	"math"
	"testing"
)

// mp4Video is a minimal MP4 (ftyp, mdat, moov with one video track of
// w×h frames, n samples over seconds), the boxes media.Probe reads; no
// video encoder is on the machine.
func mp4Video(w, h int, n uint32, seconds uint32) []byte {
	box := func(typ string, payload ...[]byte) []byte {
		size := 8
		for _, p := range payload {
			size += len(p)
		}
		b := binary.BigEndian.AppendUint32(nil, uint32(size))
		b = append(b, typ...)
		for _, p := range payload {
			b = append(b, p...)
		}
		return b
	}
	u32s := func(vs ...uint32) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.BigEndian.AppendUint32(b, v)
		}
		return b
	}
	entry := make([]byte, 78)
	binary.BigEndian.PutUint16(entry[24:], uint16(w))
	binary.BigEndian.PutUint16(entry[26:], uint16(h))
	stbl := box("stbl", box("stsd", u32s(0, 1), box("avc1", entry)), box("stsz", u32s(0, 0, n), make([]byte, 4*n)))
	trak := box("trak", box("mdia", box("mdhd", u32s(0, 0, 0, 1000, 1000*seconds, 0)),
		box("hdlr", u32s(0, 0), []byte("vide"), make([]byte, 13)), box("minf", stbl)))
	return append(append(box("ftyp", []byte("isom"), u32s(512)), box("mdat", make([]byte, 1000))...), box("moov", trak)...)
}

// qwen25VLVideoTokens is Qwen2.5-VL's video token count under vLLM's
// defaults, transcribed from the published rule as an independent check:
// min(frames, 32) frames, two per temporal patch (an odd count padded),
// each frame smart-resized to multiples of 28 within [128·28², 768·28²]
// pixels, one token per 28×28 area per temporal patch.
func qwen25VLVideoTokens(w, h, frames int) int {
	const factor, minPixels, maxPixels = 28, 128 * 28 * 28, 768 * 28 * 28
	round := func(x float64) int { return int(math.RoundToEven(x/factor)) * factor }
	hb, wb := max(factor, round(float64(h))), max(factor, round(float64(w)))
	if hb*wb > maxPixels {
		beta := math.Sqrt(float64(h*w) / maxPixels)
		hb = max(factor, int(math.Floor(float64(h)/beta/factor))*factor)
		wb = max(factor, int(math.Floor(float64(w)/beta/factor))*factor)
	} else if hb*wb < minPixels {
		beta := math.Sqrt(minPixels / float64(h*w))
		hb = int(math.Ceil(float64(h)*beta/factor)) * factor
		wb = int(math.Ceil(float64(w)*beta/factor)) * factor
	}
	n := min(frames, 32)
	return (n + 1) / 2 * (hb / factor) * (wb / factor)
}

// A video_url data URL through a real server: the prompt grows by the
// processor's video tokens with the template's tokens around them as for
// an image; a clip whose sample table lies is a 400.
func TestMultimodal_VideoBecomesTheProcessorsTokens(t *testing.T) {
	env := startServer(t, map[string]any{"max_model_len": 16384})
	const text = "What happens in this clip?"
	plain := promptTokens(t, env.post("/v1/chat/completions", chatWithParts(text)))
	img := promptTokens(t, env.post("/v1/chat/completions", chatWithImage(text, dataURL("image/png", pngBytes(t, 640, 480, 3)), 2)))
	around := img - plain - qwen25VLTokens(640, 480)
	for _, c := range []struct{ w, h, frames, seconds int }{{64, 64, 10, 1}, {640, 360, 300, 10}, {1920, 1080, 7, 1}} {
		mp4 := mp4Video(c.w, c.h, uint32(c.frames), uint32(c.seconds))
		part := map[string]any{"type": "video_url", "video_url": map[string]any{"url": dataURL("video/mp4", mp4)}}
		got := promptTokens(t, env.post("/v1/chat/completions", chatWithParts(text, part)))
		if want := plain + around + qwen25VLVideoTokens(c.w, c.h, c.frames); got != want {
			t.Errorf("%dx%d, %d frames: prompt_tokens %d, want %d (video %d)", c.w, c.h, c.frames, got, want, qwen25VLVideoTokens(c.w, c.h, c.frames))
		}
	}
	lying := mp4Video(64, 64, 10, 1)
	lying = lying[:len(lying)-20] // the sample table cut short
	part := map[string]any{"type": "video_url", "video_url": map[string]any{"url": dataURL("video/mp4", lying)}}
	r := env.post("/v1/chat/completions", chatWithParts(text, part))
	if msg, typ, _, _ := errorOf(t, r); r.Status != 400 || typ != "BadRequestError" || msg == "" {
		t.Errorf("lying MP4: %d %s", r.Status, r.Body)
	}
}
