package mmproc

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/media"
)

// refCase is one row of testdata/cases.json, whose expected counts come
// from testdata/ref.py: the processors' rules evaluated in Python.
type refCase struct {
	Model     string   `json:"model"`
	Kind      string   `json:"kind"`
	Width     int      `json:"width"`
	Height    int      `json:"height"`
	Sizes     [][2]int `json:"sizes,omitempty"`
	MinPixels int      `json:"min_pixels,omitempty"`
	MaxPixels int      `json:"max_pixels,omitempty"`
	MaxTiles  int      `json:"max_dynamic_patch,omitempty"`
	Seconds   float64  `json:"seconds,omitempty"`
	Rate      int      `json:"rate,omitempty"`
	Tokens    *int     `json:"tokens"`
	Windows   int      `json:"windows,omitempty"`
	Frames    int      `json:"frames,omitempty"`
	PanScan   bool     `json:"do_pan_and_scan,omitempty"`
	FPS       float64  `json:"fps,omitempty"`
	// AudioInVideo: the video's sound track (Seconds at Rate) is used
	// (Qwen2.5-Omni's use_audio_in_video).
	AudioInVideo bool `json:"use_audio_in_video,omitempty"`
}

func (c refCase) String() string {
	switch c.Kind {
	case "audio":
		return fmt.Sprintf("%s audio %gs@%d", c.Model, c.Seconds, c.Rate)
	case "transcription":
		return fmt.Sprintf("%s transcription of %gs", c.Model, c.Seconds)
	case "images":
		return fmt.Sprintf("%s images %v", c.Model, c.Sizes)
	case "video":
		if c.AudioInVideo {
			return fmt.Sprintf("%s video %dx%d, %d frames, with %gs@%d of audio", c.Model, c.Width, c.Height, c.Frames, c.Seconds, c.Rate)
		}
		return fmt.Sprintf("%s video %dx%d, %d frames at %g fps", c.Model, c.Width, c.Height, c.Frames, c.FPS)
	}
	s := fmt.Sprintf("%s %dx%d", c.Model, c.Width, c.Height)
	if c.MinPixels > 0 {
		s += fmt.Sprintf(" pixels [%d, %d]", c.MinPixels, c.MaxPixels)
	}
	if c.MaxTiles > 0 {
		s += fmt.Sprintf(" max_dynamic_patch %d", c.MaxTiles)
	}
	if c.PanScan {
		s += " do_pan_and_scan"
	}
	return s
}

func loadCases(t testing.TB) []refCase {
	t.Helper()
	b, err := os.ReadFile("testdata/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cs []refCase
	if err := json.Unmarshal(b, &cs); err != nil {
		t.Fatal(err)
	}
	return cs
}

func processorFor(t testing.TB, c refCase) *Processor {
	t.Helper()
	files := ModelFiles{}
	if c.MinPixels > 0 {
		k := catalogue[lower(c.Model)]
		files.Config = []byte(k.config)
		files.PreprocessorConfig = fmt.Appendf(nil, `{"min_pixels":%d,"max_pixels":%d,"patch_size":14,"merge_size":2,"temporal_patch_size":2}`, c.MinPixels, c.MaxPixels)
	}
	if c.MaxTiles > 0 {
		// The model's config.json with another max_dynamic_patch.
		cfg := map[string]any{}
		if err := json.Unmarshal([]byte(catalogue[lower(c.Model)].config), &cfg); err != nil {
			t.Fatal(err)
		}
		cfg["max_dynamic_patch"] = c.MaxTiles
		files.Config, _ = json.Marshal(cfg)
	}
	p, err := ForModel(c.Model, files)
	if err != nil {
		t.Fatalf("%s: %v", c.Model, err)
	}
	if c.PanScan {
		if p, err = p.WithKwargsJSON([]byte(`{"do_pan_and_scan": true}`)); err != nil {
			t.Fatal(err)
		}
	}
	if c.AudioInVideo {
		if p, err = p.WithKwargsJSON([]byte(`{"use_audio_in_video": true}`)); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// TestTokenTable checks every case of testdata/cases.json: images from 1×1
// to 4096×4096 with odd aspect ratios for Qwen2-VL, Qwen2.5-VL, Qwen3-VL,
// Gemma 3, LLaVA-1.5, Pixtral, Mistral Small 3.1 and Llama 4; min/max
// pixel clamps; several images per prompt; Qwen2-Audio from 1 ms to 5 min
// at three sample rates. A null count is a case the processor refuses.
func TestTokenTable(t *testing.T) {
	cases := loadCases(t)
	if len(cases) < 250 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, c := range cases {
		p := processorFor(t, c)
		var (
			got int
			err error
		)
		switch c.Kind {
		case "image":
			got, err = p.Tokens(media.Item{Kind: media.KindImage, Width: c.Width, Height: c.Height})
		case "images":
			for _, s := range c.Sizes {
				n, e := p.Tokens(media.Item{Kind: media.KindImage, Width: s[0], Height: s[1]})
				got, err = got+n, errors.Join(err, e)
			}
		case "video":
			v := media.Item{Kind: media.KindVideo, Width: c.Width, Height: c.Height, Frames: c.Frames, FPS: c.FPS}
			if c.AudioInVideo {
				v.AudioDuration, v.AudioSampleRate = time.Duration(c.Seconds*float64(time.Second)), c.Rate
			}
			got, err = p.Tokens(v)
		case "audio":
			d := time.Duration(c.Seconds * float64(time.Second))
			got, err = p.Tokens(media.Item{Kind: media.KindAudio, Duration: d, SampleRate: c.Rate})
		case "transcription":
			tr, ok := p.Transcription()
			if !ok {
				t.Fatalf("%s: not a transcription model", c)
			}
			got = tr.AudioTokens(c.Seconds)
			if w := tr.Windows(c.Seconds); w != c.Windows {
				t.Errorf("%s: %d windows, want %d", c, w, c.Windows)
			}
		default:
			t.Fatalf("kind %q", c.Kind)
		}
		switch {
		case c.Tokens == nil && !errors.Is(err, ErrBadItem):
			t.Errorf("%s: got %d, %v; want ErrBadItem", c, got, err)
		case c.Tokens != nil && (err != nil || got != *c.Tokens):
			t.Errorf("%s: got %d, %v; want %d", c, got, err, *c.Tokens)
		}
	}
}

// ApplyMergesIndexed fuses the pairs and maps every original
// position to its token after the fusion: a Gemma-like prompt "u \n" +
// [\n\n B S S E \n\n] + "\n t" keeps a 6-token range starting at the fused
// "\n\n\n" and ending at the other one.
func TestApplyMergesIndexed(t *testing.T) {
	vocab := map[string]uint32{"u": 1, "\n": 2, "\n\n": 3, "\n\n\n": 4, "\n\n\n\n": 5, "B": 6, "S": 7, "E": 8, "t": 9}
	id := func(s string) (uint32, bool) { v, ok := vocab[s]; return v, ok }
	ids := []uint32{1, 2, 3, 6, 7, 7, 8, 3, 2, 9}
	out, pos := ApplyMergesIndexed(ids, gemmaNewlineMerges, id)
	if want := []uint32{1, 4, 6, 7, 7, 8, 4, 9}; !slices.Equal(out, want) {
		t.Fatalf("merged %v, want %v", out, want)
	}
	if want := []int{0, 1, 1, 2, 3, 4, 5, 6, 6, 7}; !slices.Equal(pos, want) {
		t.Errorf("positions %v, want %v", pos, want)
	}
	// The range of the replacement (original [2, 8)) starts at pos[2] = 1 and
	// its 6 tokens end on the second fused token.
	if s := out[pos[2] : pos[2]+6]; s[0] != 4 || s[5] != 4 {
		t.Errorf("range %v", s)
	}
}
