package api

import (
	"encoding/binary"
	"strings"
	"testing"
)

// mp4WithSound is mp4Video with a sound track of audioMillis ms at rate Hz
// in front of the video track (its mdhd timescale is the rate, as
// encoders write it).
func mp4WithSound(w, h int, n, seconds uint32, rate, audioMillis uint32) []byte {
	f := mp4Video(w, h, n, seconds)
	u32s := func(vs ...uint32) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.BigEndian.AppendUint32(b, v)
		}
		return b
	}
	box := func(typ string, payload []byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(8+len(payload)))
		return append(append(b, typ...), payload...)
	}
	mdhd := box("mdhd", u32s(0, 0, 0, rate, uint32(uint64(rate)*uint64(audioMillis)/1000), 0))
	hdlr := box("hdlr", append(u32s(0, 0), append([]byte("soun"), make([]byte, 13)...)...))
	mdia := box("mdia", append(mdhd, hdlr...))
	soun := box("trak", mdia)
	// moov is the last box: grow its size and append the sound track.
	i := strings.LastIndex(string(f), "moov") - 4
	binary.BigEndian.PutUint32(f[i:], binary.BigEndian.Uint32(f[i:])+uint32(len(soun)))
	return append(f, soun...)
}

// use_audio_in_video through a real server (Qwen2.5-Omni): the video's
// prompt grows by its sound track's audio tokens and the <|audio_bos|>,
// <|audio_eos|> pair vLLM's interleaving puts around the chunks, whether
// the flag comes with the request or from the server; false in the request
// undoes the server's; a video without sound is a 400.
func TestMultimodal_OmniAudioInVideo(t *testing.T) {
	const text = "What do you see and hear?"
	env := startServer(t, map[string]any{"max_model_len": 32768, "mm_processor_model": "Qwen/Qwen2.5-Omni-7B"})
	withKw := func(body, kw string) string {
		return strings.Replace(body, `"max_tokens":2,`, `"max_tokens":2,"mm_processor_kwargs":`+kw+`,`, 1)
	}
	video := func(b []byte) map[string]any {
		return map[string]any{"type": "video_url", "video_url": map[string]any{"url": dataURL("video/mp4", b)}}
	}
	// Audio tokens by the Qwen2-Audio rule on 16-kHz audio: 100 mel frames a
	// second, halved twice: 25 a second (10 s → 250, 3.3 s → 82: 330
	// frames → 165 → 82).
	for _, c := range []struct {
		w, h, frames, seconds int
		rate, millis          uint32
		audio                 int
	}{{640, 360, 300, 10, 48000, 10000, 250}, {64, 64, 10, 1, 44100, 3300, 82}, {1920, 1080, 60, 2, 16000, 2000, 50}} {
		mp4 := mp4WithSound(c.w, c.h, uint32(c.frames), uint32(c.seconds), c.rate, c.millis)
		body := chatWithParts(text, video(mp4))
		plain := promptTokens(t, env.post("/v1/chat/completions", body))
		with := promptTokens(t, env.post("/v1/chat/completions", withKw(body, `{"use_audio_in_video":true}`)))
		if with-plain != c.audio+2 {
			t.Errorf("%dx%d with %d ms of sound: prompt_tokens %d with audio, %d without; want %d more", c.w, c.h, c.millis, with, plain, c.audio+2)
		}
	}
	silent := chatWithParts(text, video(mp4Video(640, 360, 300, 10)))
	r := env.post("/v1/chat/completions", withKw(silent, `{"use_audio_in_video":true}`))
	if msg, typ, _, _ := errorOf(t, r); r.Status != 400 || typ != "BadRequestError" || !strings.Contains(msg, "sound track") {
		t.Errorf("silent video: %d %s", r.Status, r.Body)
	}

	// The server's mm_processor_kwargs turn it on for every request.
	srv := startServer(t, map[string]any{"max_model_len": 32768, "mm_processor_model": "Qwen/Qwen2.5-Omni-7B",
		"mm_processor_kwargs": map[string]any{"use_audio_in_video": true}})
	body := chatWithParts(text, video(mp4WithSound(640, 360, 300, 10, 48000, 10000)))
	on := promptTokens(t, srv.post("/v1/chat/completions", body))
	want := promptTokens(t, env.post("/v1/chat/completions", withKw(body, `{"use_audio_in_video":true}`)))
	off := promptTokens(t, srv.post("/v1/chat/completions", withKw(body, `{"use_audio_in_video":false}`)))
	if on != want || on-off != 252 {
		t.Errorf("server-wide: %d (request-level %d), %d when the request turns it off", on, want, off)
	}
}
