package main

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
)

// e2eMP4 is a minimal MP4 (ftyp, mdat, moov with one w×h video track of n
// samples over seconds): the boxes the server's header reader needs.
func e2eMP4(w, h int, n, seconds uint32) string {
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
	mp4 := append(append(box("ftyp", []byte("isom"), u32s(512)), box("mdat", make([]byte, 1000))...), box("moov", trak)...)
	return "data:video/mp4;base64," + base64.StdEncoding.EncodeToString(mp4)
}

// TestE2E_Qwen3VLVideoTimestamps: a chat video_url to a server with the
// real Qwen3 tokenizer and Qwen3-VL's processor. The expected prompt is
// built here from the reference tokenizer (transformers.js): the template's
// <|vision_start|><|video_pad|><|vision_end|> replaced, per temporal
// patch, by the reference's encoding of "<t seconds>" then
// <|vision_start|>, the patch's pads and <|vision_end|>, as vLLM's
// Qwen3-VL processor does. The rule, transcribed for these two clips:
//
//   - 300 frames over 10 s (30 fps): vLLM's loader keeps 32, at
//     int(i·299/31); 16 patches; each 640×360 frame → 640×352 → 220 tokens;
//   - 10 frames over 1 s: read whole, then sampled by the processor at
//     2 fps, raised to its 4-frame minimum: frames 0, 3, 6, 9; 2 patches.
func TestE2E_Qwen3VLVideoTimestamps(t *testing.T) {
	dir := tokenizerFiles(t, qwen3Package)
	const text = "What happens in this clip?"
	srv := e2eStartProduction(t, loadConfig(t, map[string]any{
		"tokenizer": dir, "served_model_name": []string{"qwen"}, "mm_processor_model": "Qwen/Qwen3-VL-8B-Instruct",
		"max_model_len": 16384, "log_level": "error",
	}))
	for _, c := range []struct {
		frames, seconds uint32
		idx             []int
		perPatch        int
	}{
		{300, 10, func() []int {
			var idx []int
			for i := range 32 {
				idx = append(idx, int(float64(i)*(299.0/31)))
			}
			idx[31] = 299
			return idx
		}(), 220},
		{10, 1, []int{0, 3, 6, 9}, 220},
	} {
		fps := float64(c.frames) / float64(c.seconds)
		var stamps []string
		for i := 0; i < len(c.idx); i += 2 {
			stamps = append(stamps, fmt.Sprintf("<%.1f seconds>", (float64(c.idx[i])/fps+float64(c.idx[i+1])/fps)/2))
		}
		req := refRequest{
			Chats: []refChat{{Messages: []map[string]any{{"role": "user",
				"content": "<|vision_start|><|video_pad|><|vision_end|>\n" + text}}}},
			Encode: []refEncode{{Text: "<|vision_start|>"}, {Text: "<|video_pad|>"}, {Text: "<|vision_end|>"}},
		}
		for _, s := range stamps {
			req.Encode = append(req.Encode, refEncode{Text: s})
		}
		ref := runTextRef(t, dir, req)
		start, pad, end := ref.Encode[0].IDs[0], ref.Encode[1].IDs[0], ref.Encode[2].IDs[0]
		var repl []uint32
		for k := range stamps {
			repl = append(repl, ref.Encode[3+k].IDs...)
			repl = append(repl, start)
			repl = append(repl, slices.Repeat([]uint32{pad}, c.perPatch)...)
			repl = append(repl, end)
		}
		tmpl := ref.Chats[0].IDs
		at := slices.Index(tmpl, pad)
		if at < 1 || tmpl[at-1] != start || tmpl[at+1] != end {
			t.Fatalf("the reference prompt has no marker-wrapped <|video_pad|>: %v", tmpl)
		}
		want := slices.Concat(tmpl[:at-1], repl, tmpl[at+2:])

		var ans chatAnswer
		status, raw := srv.postJSON(t, "/v1/chat/completions", map[string]any{"model": "qwen", "max_tokens": 1,
			"return_token_ids": true, "messages": []any{map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "video_url", "video_url": map[string]any{"url": e2eMP4(640, 360, c.frames, c.seconds)}},
				map[string]any{"type": "text", "text": text}}}}}, &ans)
		if status != 200 {
			t.Fatalf("chat: %d %s", status, raw)
		}
		if ans.Usage.PromptTokens != len(want) || !slices.Equal(ans.PromptTokenIDs, want) {
			t.Errorf("%d frames over %d s: prompt_tokens %d, want %d\n got %v\nwant %v", c.frames, c.seconds,
				ans.Usage.PromptTokens, len(want), ans.PromptTokenIDs, want)
		}
		t.Logf("%d frames over %d s: timestamps %v, prompt %d tokens", c.frames, c.seconds, stamps, len(want))
	}
}
