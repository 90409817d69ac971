package mmproc

import (
	"testing"

	"github.com/mocker-server/mocker-server/internal/media"
)

// LLaVA-OneVision, worked by hand: 384×384 is one crop, 27×27 features +
// 27 newlines + the base view's 729 = 1485. 1153×944 (vLLM's largest) takes
// 3×4 crops, 81×108 features whose width keeps int(round(1153·81/944, 7))
// = 98: 81×98 is 1.0999² × 9 crops' worth, under the 1.1 bound, so
// 7938 + 81 + 729 = 8748. 2304×2304 is 6×6 crops, 162×162 = 2² × 9 crops'
// worth: each side // 2 → 81×81 + 81 + 729 = 7371. A video is 196 pooled
// tokens a frame for the loader's 32 frames at most, and one newline.
func TestLlavaOneVision(t *testing.T) {
	p := mustModel(t, "llava-hf/llava-onevision-qwen2-7b-ov-hf", ModelFiles{})
	if p.Family() != FamilyLlavaOV || p.Placeholder(media.KindImage) != "<image>" || p.Placeholder(media.KindVideo) != "<video>" || !p.Supports(media.KindVideo) {
		t.Fatalf("family %s", p.Family())
	}
	for _, c := range []struct{ w, h, want int }{{384, 384, 1485}, {1153, 944, 8748}, {2304, 2304, 7371}} {
		if n, err := p.Tokens(img(c.w, c.h)); err != nil || n != c.want {
			t.Errorf("%dx%d: %d, %v; want %d", c.w, c.h, n, err, c.want)
		}
	}
	for _, c := range []struct{ frames, want int }{{1, 197}, {16, 3137}, {900, 6273}} {
		v := media.Item{Kind: media.KindVideo, Width: 640, Height: 360, Frames: c.frames}
		if n, err := p.Tokens(v); err != nil || n != c.want {
			t.Errorf("video of %d frames: %d, %v; want %d", c.frames, n, err, c.want)
		}
	}
	// The tower runs on every view: 36 crops and the base view cost 37
	// times one view; a 16-frame video 16 times.
	one, _ := p.EncoderFLOPs(img(384, 384))
	big, _ := p.EncoderFLOPs(img(2304, 2304))
	vid, _ := p.EncoderFLOPs(media.Item{Kind: media.KindVideo, Width: 640, Height: 360, Frames: 16})
	if big != 37*one/2 || vid != 16*one/2 {
		t.Errorf("encoder FLOPs: one view %g, 6×6 crops %g, 16 frames %g", one/2, big, vid)
	}
}

// Python's float // is not floor(a/b): 1 // 0.1 is 9.0 (0.1 is a little
// over a tenth), while 1/0.1 rounds to exactly 10.
func TestPyFloorDiv(t *testing.T) {
	for _, c := range []struct{ a, b, want float64 }{{1, 0.1, 9}, {162, 2, 81}, {7, 2.5, 2}, {0, 3, 0}, {108, 1.2000000000000002, 89}} {
		if got := pyFloorDiv(c.a, c.b); got != c.want {
			t.Errorf("%g // %g = %g, want %g", c.a, c.b, got, c.want)
		}
	}
}
