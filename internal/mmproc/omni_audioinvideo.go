package mmproc

import (
	"fmt"

	"github.com/mocker-server/mocker-server/internal/media"
)

// videoWithAudio is a video's replacement under use_audio_in_video (vLLM's
// omni_get_updates_use_audio_in_video): <|audio_bos|>, then per chunk of
// secondsPerChunk the chunk's frames' <|VIDEO|> tokens followed by up to
// one chunk's worth of <|AUDIO|> tokens of the video's sound track, the
// audio left over after the last chunk, then <|audio_eos|>. The audio is
// counted as a clip of the sound track's length would be.
func (o *qwenOmni) videoWithAudio(it media.Item) (Replacement, error) {
	if it.AudioDuration <= 0 {
		return Replacement{}, fmt.Errorf("%w: use_audio_in_video needs a video with a sound track; this one has none", ErrBadItem)
	}
	t, h, w, err := o.vision.grid(it)
	if err != nil {
		return Replacement{}, err
	}
	audioLen := o.audioTokens(media.Item{Kind: media.KindAudio, Duration: it.AudioDuration, SampleRate: it.AudioSampleRate})
	perT := h * w / (o.vision.merge * o.vision.merge)
	// Temporal patch i sits at position int(i × seconds_per_grid ×
	// tokens_per_second); chunk k holds the positions in [k·n, (k+1)·n).
	// vLLM reads seconds_per_grid from mm_processor_kwargs'
	// second_per_grid_ts, which the processor does not set: 1 s.
	const secondsPerGrid = 1.0
	perChunk := int(o.tokensPerSecond * o.secondsPerChunk)
	if perChunk <= 0 {
		return Replacement{}, fmt.Errorf("%w: %g s chunks at %g tokens a second", ErrBadConfig, o.secondsPerChunk, o.tokensPerSecond)
	}
	chunks := int(float64(t-1)*secondsPerGrid*o.tokensPerSecond)/perChunk + 1
	frames := make([]int, chunks)
	for i := range t {
		frames[int(float64(i)*secondsPerGrid*o.tokensPerSecond)/perChunk]++
	}
	r := Replacement{Target: "<|VIDEO|>", Pieces: []Piece{{Token: "<|audio_bos|>", Count: 1}}}
	add := func(tok string, n int) {
		if n > 0 {
			r.Pieces = append(r.Pieces, Piece{Token: tok, Count: n, Embed: true})
		}
	}
	added := 0
	for _, n := range frames {
		add("<|VIDEO|>", n*perT)
		a := min(perChunk, audioLen-added)
		add("<|AUDIO|>", a)
		added += a
	}
	add("<|AUDIO|>", audioLen-added)
	r.Pieces = append(r.Pieces, Piece{Token: "<|audio_eos|>", Count: 1})
	return r, nil
}

// audioTokens is the audio rule's count without its too-short refusal:
// vLLM's interleaving takes whatever the sound track yields, even none.
func (o *qwenOmni) audioTokens(it media.Item) int {
	a := o.audio
	n := min(resampled(it, a.rate), a.nSamples)
	frames := (n + a.hop - 1) / a.hop
	conv := floorDiv(frames-1, 2) + 1
	return max(floorDiv(conv-2, 2)+1, 0)
}
