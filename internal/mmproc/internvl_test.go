package mmproc

import (
	"errors"
	"testing"

	"github.com/mocker-server/mocker-server/internal/media"
)

func TestInternVL(t *testing.T) {
	p := mustModel(t, "OpenGVLab/InternVL3-8B", ModelFiles{})
	if p.Family() != FamilyInternVL || p.Placeholder(media.KindImage) != "<image>" || p.Supports(media.KindAudio) {
		t.Fatalf("family %s placeholder %q", p.Family(), p.Placeholder(media.KindImage))
	}
	// 1344×448 is a 3×1 grid exactly: three crops and the thumbnail.
	r, err := p.Replace(img(1344, 448))
	if err != nil {
		t.Fatal(err)
	}
	want := []Piece{{"<img>", 1, false}, {"<IMG_CONTEXT>", 4 * 256, true}, {"</img>", 1, false}}
	if len(r.Pieces) != 3 || r.Pieces[0] != want[0] || r.Pieces[1] != want[1] || r.Pieces[2] != want[2] || r.Target != "<image>" {
		t.Fatalf("got %+v", r)
	}
	// One crop has no thumbnail.
	if n, _ := p.Tokens(img(448, 448)); n != 258 {
		t.Errorf("448x448: %d, want 258", n)
	}
	// Embeddings stand for their rows, between the markers.
	if n, err := p.Tokens(media.Item{Kind: media.KindEmbeds, EmbedTokens: 512}); err != nil || n != 514 {
		t.Errorf("embeds: %d, %v", n, err)
	}
	// mm_processor_kwargs: max_dynamic_patch, dynamic_image_size.
	for _, c := range []struct {
		kw   string
		want int
	}{
		{`{"max_dynamic_patch": 1}`, 258},
		{`{"dynamic_image_size": false}`, 258},
		{`{"max_dynamic_patch": 2}`, 2 + 3*256}, // 2×1 and the thumbnail
		{`{"min_dynamic_patch": 4, "max_dynamic_patch": 4}`, 2 + 5*256},
	} {
		fs, err := media.FieldsFromJSON([]byte(c.kw))
		if err != nil {
			t.Fatal(err)
		}
		q, err := p.WithKwargs(fs)
		if err != nil {
			t.Fatalf("%s: %v", c.kw, err)
		}
		if n, _ := q.Tokens(img(1344, 448)); n != c.want {
			t.Errorf("%s: %d, want %d", c.kw, n, c.want)
		}
	}
	for _, kw := range []string{`{"min_dynamic_patch": 5, "max_dynamic_patch": 2}`, `{"max_dynamic_patch": 0.5}`} {
		fs, _ := media.FieldsFromJSON([]byte(kw))
		if _, err := p.WithKwargs(fs); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%s: %v", kw, err)
		}
	}
	// The encoder runs once per crop: five crops cost five times one.
	one, _ := p.EncoderFLOPs(img(448, 448))
	five, _ := p.EncoderFLOPs(img(896, 896))
	if one <= 0 || five != 5*one {
		t.Errorf("flops: one crop %g, five %g", one, five)
	}
	// A crop: 1025 positions through 24 layers of width 1024 ≈ 2·1025·302M
	// ≈ 0.62 TFLOP, plus attention and mlp1 (256 × (4096·3584 + 3584²)).
	if one < 0.6e12 || one > 0.75e12 {
		t.Errorf("one crop: %.3g FLOP", one)
	}
}
