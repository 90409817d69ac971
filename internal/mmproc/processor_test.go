package mmproc

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/media"
)

func mustModel(t *testing.T, id string, files ModelFiles) *Processor {
	t.Helper()
	p, err := ForModel(id, files)
	if err != nil {
		t.Fatalf("ForModel(%q): %v", id, err)
	}
	return p
}

func img(w, h int) media.Item { return media.Item{Kind: media.KindImage, Width: w, Height: h} }

func TestReplacementShapes(t *testing.T) {
	cases := []struct {
		model string
		item  media.Item
		text  string // the replacement with runs written as token×n
		embed int
	}{
		{"Qwen/Qwen2.5-VL-7B-Instruct", img(56, 56), "<|image_pad|>×4", 4},
		{"google/gemma-3-4b-it", img(640, 480), "\n\n<start_of_image><image_soft_token>×256<end_of_image>\n\n", 256},
		{"llava-hf/llava-1.5-7b-hf", img(10, 10), "<image>×576", 576},
		// 40×20 pixels: two rows of three 16-px patches (the last ones partial).
		{"mistral-community/pixtral-12b", img(40, 20), "[IMG]×3[IMG_BREAK][IMG]×3[IMG_END]", 6},
		// One tile: no tile grid, only the global tile's patches.
		{"meta-llama/Llama-4-Scout-17B-16E-Instruct", img(300, 300), "<|image_start|><|image|><|patch|>×144<|image_end|>", 144},
		// 672×336 fits a 1×2 grid exactly.
		{"meta-llama/Llama-4-Scout-17B-16E-Instruct", img(672, 336), "<|image_start|><|patch|>×144<|tile_x_separator|><|patch|>×144<|tile_y_separator|><|image|><|patch|>×144<|image_end|>", 432},
	}
	for _, c := range cases {
		p := mustModel(t, c.model, ModelFiles{})
		r, err := p.Replace(c.item)
		if err != nil {
			t.Fatalf("%s: %v", c.model, err)
		}
		var b strings.Builder
		for _, pc := range r.Pieces {
			b.WriteString(pc.Token)
			if pc.Count > 1 {
				b.WriteString("×" + itoa(pc.Count))
			}
		}
		if got := b.String(); got != c.text {
			t.Errorf("%s %dx%d: got %q, want %q", c.model, c.item.Width, c.item.Height, got, c.text)
		}
		if r.Embeds() != c.embed || r.Target != p.Placeholder(media.KindImage) {
			t.Errorf("%s: embeds %d target %q, want %d %q", c.model, r.Embeds(), r.Target, c.embed, p.Placeholder(media.KindImage))
		}
		if n := strings.Count(r.Text(), r.Pieces[0].Token); n < r.Pieces[0].Count {
			t.Errorf("%s: Text() has %d copies of %q", c.model, n, r.Pieces[0].Token)
		}
	}
}

// The Pixtral example from its processor: a 1024×1024 image is 64×64
// patches of 16 px, so 64 rows of 64 [IMG] and one break or end each.
func TestPixtralFullSize(t *testing.T) {
	p := mustModel(t, "mistral-community/pixtral-12b", ModelFiles{})
	if n, err := p.Tokens(img(1024, 1024)); err != nil || n != 64*65 {
		t.Fatalf("got %d, %v; want %d", n, err, 64*65)
	}
	// A 2048×512 image is scaled to 1024×256 first.
	if n, _ := p.Tokens(img(2048, 512)); n != 16*65 {
		t.Fatalf("2048x512: got %d, want %d", n, 16*65)
	}
}

func TestForModelFiles(t *testing.T) {
	// A model directory's own files win over the catalogue, in both of
	// the preprocessor's spellings of the pixel bounds.
	cfg := []byte(`{"architectures":["Qwen2_5_VLForConditionalGeneration"],"vision_config":{"depth":32,"hidden_size":1280,"intermediate_size":3420,"patch_size":14,"spatial_merge_size":2}}`)
	for _, pre := range []string{
		`{"min_pixels":200704,"max_pixels":1003520,"patch_size":14,"merge_size":2,"temporal_patch_size":2}`,
		`{"size":{"shortest_edge":200704,"longest_edge":1003520},"patch_size":14,"merge_size":2}`,
	} {
		p := mustModel(t, "/models/my-qwen", ModelFiles{Config: cfg, PreprocessorConfig: []byte(pre)})
		if p.Family() != FamilyQwen25VL || p.Model() != "/models/my-qwen" {
			t.Fatalf("got %s %s", p.Family(), p.Model())
		}
		// 4096×4096 clamps to max_pixels 1003520 = 1280 tokens of 28×28.
		if n, _ := p.Tokens(img(4096, 4096)); n != 1225 {
			t.Errorf("%s: 4096x4096 → %d, want 1225", pre, n)
		}
	}
	// Pixtral's patch_size is an object in its preprocessor config.
	p := mustModel(t, "x", ModelFiles{
		Config:             []byte(`{"architectures":["LlavaForConditionalGeneration"],"vision_config":{"model_type":"pixtral","patch_size":16,"image_size":1024}}`),
		PreprocessorConfig: []byte(`{"patch_size":{"height":16,"width":16},"size":{"longest_edge":1024}}`),
	})
	if p.Family() != FamilyPixtral {
		t.Fatalf("family %s", p.Family())
	}
	// model_type alone is enough.
	if p := mustModel(t, "y", ModelFiles{Config: []byte(`{"model_type":"gemma3"}`)}); p.Family() != FamilyGemma3 {
		t.Fatalf("family %s", p.Family())
	}
	// Ids are matched without regard to case.
	mustModel(t, "QWEN/qwen2.5-vl-7b-INSTRUCT", ModelFiles{})
}

func TestForModelErrors(t *testing.T) {
	cases := []struct {
		id    string
		files ModelFiles
		want  error
	}{
		{"Qwen/Qwen3-8B", ModelFiles{}, ErrUnknownModel},
		{"d", ModelFiles{Config: []byte(`{"architectures":["LlamaForCausalLM"],"model_type":"llama"}`)}, ErrUnknownModel},
		{"d", ModelFiles{Config: []byte(`{"architectures":`)}, ErrBadConfig},
		{"d", ModelFiles{Config: []byte(`{"model_type":"qwen2_5_vl"}`), PreprocessorConfig: []byte(`[1]`)}, ErrBadConfig},
		{"d", ModelFiles{Config: []byte(`{"model_type":"qwen2_5_vl"}`), PreprocessorConfig: []byte(`{"min_pixels":9000,"max_pixels":100}`)}, ErrBadConfig},
		{"d", ModelFiles{Config: []byte(`{"model_type":"gemma3"}`), PreprocessorConfig: []byte(`{"do_pan_and_scan":"yes"}`)}, ErrBadConfig},
		{"d", ModelFiles{Config: []byte(`{"model_type":"llava","vision_feature_select_strategy":"odd"}`)}, ErrBadConfig},
	}
	for _, c := range cases {
		if _, err := ForModel(c.id, c.files); !errors.Is(err, c.want) {
			t.Errorf("%s %s: got %v, want %v", c.id, c.files.Config, err, c.want)
		}
	}
	if len(Known()) < 15 {
		t.Errorf("catalogue has %d ids", len(Known()))
	}
	for _, id := range Known() {
		mustModel(t, id, ModelFiles{})
	}
}

func TestModalities(t *testing.T) {
	vl := mustModel(t, "Qwen/Qwen2.5-VL-7B-Instruct", ModelFiles{})
	audio := mustModel(t, "Qwen/Qwen2-Audio-7B-Instruct", ModelFiles{})
	if !vl.Supports(media.KindImage) || !vl.Supports(media.KindVideo) || vl.Supports(media.KindAudio) {
		t.Errorf("qwen2.5-vl modalities %v", vl.Modalities())
	}
	if _, err := vl.Tokens(media.Item{Kind: media.KindAudio, Duration: time.Second}); !errors.Is(err, ErrModality) {
		t.Errorf("audio to a vision model: %v", err)
	}
	if _, err := audio.Tokens(img(10, 10)); !errors.Is(err, ErrModality) {
		t.Errorf("image to an audio model: %v", err)
	}
	if audio.Placeholder(media.KindImage) != "" || audio.Placeholder(media.KindAudio) != "<|AUDIO|>" {
		t.Errorf("placeholders %q %q", audio.Placeholder(media.KindImage), audio.Placeholder(media.KindAudio))
	}
	// Precomputed embeddings stand for their rows, with no encoder cost.
	emb := media.Item{Kind: media.KindEmbeds, EmbedTokens: 77}
	if n, err := vl.Tokens(emb); err != nil || n != 77 {
		t.Errorf("embeds: %d, %v", n, err)
	}
	if f, err := vl.EncoderFLOPs(emb); err != nil || f != 0 {
		t.Errorf("embeds flops: %v, %v", f, err)
	}
	if _, err := vl.Tokens(media.Item{Kind: media.KindEmbeds}); !errors.Is(err, ErrBadItem) {
		t.Errorf("embeds without rows: %v", err)
	}
	if _, err := vl.Tokens(media.Item{Kind: media.KindImage}); !errors.Is(err, ErrBadItem) {
		t.Errorf("image without a size: %v", err)
	}
	// Qwen2-Audio's range in vLLM includes the markers around the audio.
	if r, err := audio.Replace(media.Item{Kind: media.KindAudio, Duration: time.Second, SampleRate: 16000}); err != nil ||
		r.Len() != 25 || len(r.Before) != 1 || r.Before[0] != "<|audio_bos|>" || len(r.After) != 1 || r.After[0] != "<|audio_eos|>" {
		t.Errorf("qwen2-audio replacement %+v, %v", r, err)
	}
	if r, _ := vl.Replace(img(56, 56)); r.Before != nil || r.After != nil {
		t.Errorf("qwen2.5-vl range extends: %+v", r)
	}
	// Audio too short for one token is refused, as vLLM refuses it.
	if _, err := audio.Tokens(media.Item{Kind: media.KindAudio, Duration: time.Millisecond, SampleRate: 16000}); !errors.Is(err, ErrBadItem) {
		t.Errorf("1 ms of audio: %v", err)
	}
}

// Qwen2.5-VL video: 32 of the clip's frames by default, pairs of frames
// one temporal patch, each frame resized within the video pixel bounds.
func TestQwenVideo(t *testing.T) {
	p := mustModel(t, "Qwen/Qwen2.5-VL-7B-Instruct", ModelFiles{})
	v := media.Item{Kind: media.KindVideo, Width: 640, Height: 360, Frames: 300, Duration: 10 * time.Second}
	r, err := p.Replace(v)
	if err != nil {
		t.Fatal(err)
	}
	// 640×360 → smart_resize(360, 640, 28, 100352, 602112) = 364×644: 13×23 merged.
	if r.Target != "<|video_pad|>" || r.Len() != 16*13*23 {
		t.Fatalf("got %q × %d, want <|video_pad|> × %d", r.Target, r.Len(), 16*13*23)
	}
	v.Frames = 5 // a short clip: all five, padded to six
	if n, _ := p.Tokens(v); n != 3*13*23 {
		t.Fatalf("5 frames: %d, want %d", n, 3*13*23)
	}
}

func TestEncoderFLOPs(t *testing.T) {
	p := mustModel(t, "Qwen/Qwen2.5-VL-7B-Instruct", ModelFiles{})
	prev := 0.0
	for _, s := range []int{56, 224, 448, 1024, 2048} {
		f, err := p.EncoderFLOPs(img(s, s))
		if err != nil || f <= prev {
			t.Fatalf("%d px: %g (%v), not above %g", s, f, err, prev)
		}
		prev = f
	}
	// A 1024×1024 image: 1036×1036 → 74×74 = 5476 patches through a
	// 32-layer, 1280-wide tower: about 2 × 5476 × 32 × (4·1280² + 3·1280·3420)
	// ≈ 7.8 TFLOP in the projections, plus attention and the merger.
	f, _ := p.EncoderFLOPs(img(1024, 1024))
	if f < 7.5e12 || f > 9.5e12 {
		t.Errorf("1024x1024: %.3g FLOP, want about 8e12", f)
	}
	g := mustModel(t, "google/gemma-3-4b-it", ModelFiles{})
	a, _ := g.EncoderFLOPs(img(10, 10))
	b, _ := g.EncoderFLOPs(img(4000, 3000))
	if a != b || a < 1e12 {
		t.Errorf("gemma3: %g and %g, want equal (fixed 896×896 input)", a, b)
	}
	au := mustModel(t, "Qwen/Qwen2-Audio-7B-Instruct", ModelFiles{})
	x, _ := au.EncoderFLOPs(media.Item{Kind: media.KindAudio, Duration: time.Second, SampleRate: 16000})
	y, _ := au.EncoderFLOPs(media.Item{Kind: media.KindAudio, Duration: 20 * time.Second, SampleRate: 16000})
	if x != y || x <= 0 {
		t.Errorf("qwen2-audio: %g and %g, want equal (the window is always padded to 30 s)", x, y)
	}
}

func TestWithKwargs(t *testing.T) {
	p := mustModel(t, "Qwen/Qwen2.5-VL-7B-Instruct", ModelFiles{})
	for _, kw := range []string{
		`{"min_pixels": 200704, "max_pixels": 1003520}`,
		`{"images_kwargs": {"max_pixels": 1003520.0}, "max_pixels": 5}`,
		`{"size": {"shortest_edge": 3136, "longest_edge": 1003520}, "fps": 2}`,
	} {
		fs, err := media.FieldsFromJSON([]byte(kw))
		if err != nil {
			t.Fatal(err)
		}
		q, err := p.WithKwargs(fs)
		if err != nil {
			t.Fatalf("%s: %v", kw, err)
		}
		if n, _ := q.Tokens(img(4096, 4096)); n != 1225 {
			t.Errorf("%s: 4096x4096 → %d, want 1225", kw, n)
		}
	}
	if n, _ := p.Tokens(img(4096, 4096)); n != 16384 {
		t.Errorf("the receiver changed: %d", n)
	}
	for _, kw := range []string{`{"min_pixels": "x"}`, `{"max_pixels": 1.5}`, `{"min_pixels": 9000, "max_pixels": 10}`, `{"max_pixels": -1}`} {
		fs, _ := media.FieldsFromJSON([]byte(kw))
		if _, err := p.WithKwargs(fs); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%s: %v", kw, err)
		}
	}
	g := mustModel(t, "google/gemma-3-4b-it", ModelFiles{})
	for _, kw := range []string{`{"do_pan_and_scan": 1}`, `{"pan_and_scan_max_num_crops": 0}`, `{"pan_and_scan_min_ratio_to_activate": "x"}`} {
		fs, _ := media.FieldsFromJSON([]byte(kw))
		if _, err := g.WithKwargs(fs); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%s: %v", kw, err)
		}
	}
	// Keys a family does not take are dropped, as vLLM drops them.
	fs, _ := media.FieldsFromJSON([]byte(`{"min_pixels": 1}`))
	if q, err := mustModel(t, "llava-hf/llava-1.5-7b-hf", ModelFiles{}).WithKwargs(fs); err != nil || q == nil {
		t.Errorf("llava: %v", err)
	}
}

// Qwen3-VL video: a 10-s clip of 300 frames at 30 fps is 32 loader frames,
// 16 temporal patches, each "<t seconds>" then its pads between markers;
// a clip of 10 frames at 10 fps is resampled at 2 fps to the 4-frame
// minimum; a single frame is refused, as the video processor refuses it.
func TestQwen3Video(t *testing.T) {
	p := mustModel(t, "Qwen/Qwen3-VL-8B-Instruct", ModelFiles{})
	r, err := p.Replace(media.Item{Kind: media.KindVideo, Width: 640, Height: 360, Frames: 300, FPS: 30})
	if err != nil {
		t.Fatal(err)
	}
	// 32 frames of 640×360 within 25,165,824 px: 640×352 → 40×22 patches, 220 tokens a patch.
	if r.Target != "<|vision_start|><|video_pad|><|vision_end|>" || r.Embeds() != 16*220 {
		t.Fatalf("target %q, %d embeds; want 16×220", r.Target, r.Embeds())
	}
	// Frames 0 and 9 (linspace(0, 299, 32) truncated): (0 + 0.3)/2 = 0.15 s → "0.1".
	if got := r.Pieces[0].Token + r.Pieces[1].Token + r.Pieces[2].Token + r.Pieces[3].Token + r.Pieces[4].Token + r.Pieces[5].Token; got != "<0.1 seconds>" {
		t.Errorf("first timestamp %q", got)
	}
	if !strings.HasSuffix(r.Text(), "<9.8 seconds><|vision_start|>"+strings.Repeat("<|video_pad|>", 220)+"<|vision_end|>") {
		t.Errorf("last patch: …%q", r.Text()[len(r.Text())-120:])
	}
	short, err := p.Tokens(media.Item{Kind: media.KindVideo, Width: 640, Height: 360, Frames: 10, FPS: 10})
	// 4 frames, 0 3 6 9: min_pixels 4096 … 640×352; stamps 0.1 s and 0.8 s.
	if want := 2 * (6 + 1 + 220 + 1); err != nil || short != want {
		t.Errorf("10 frames at 10 fps: %d, %v; want %d", short, err, want)
	}
	if _, err := p.Tokens(media.Item{Kind: media.KindVideo, Width: 640, Height: 360, Frames: 1, FPS: 1}); !errors.Is(err, ErrBadItem) {
		t.Errorf("one frame: %v, want ErrBadItem", err)
	}
}

// A request's fps kwarg resamples a clip the loader read whole: 10 frames
// over 1 s at 8 fps are 8 frames (4 patches), at 0.5 fps the 4-frame
// minimum; a clip the loader sampled (over 32 frames) keeps its 32.
func TestQwen3VideoFPSKwarg(t *testing.T) {
	p := mustModel(t, "Qwen/Qwen3-VL-8B-Instruct", ModelFiles{})
	short := media.Item{Kind: media.KindVideo, Width: 640, Height: 360, Frames: 10, FPS: 10}
	long := media.Item{Kind: media.KindVideo, Width: 640, Height: 360, Frames: 300, FPS: 30}
	base, _ := p.Replace(long)
	for _, c := range []struct {
		kw      string
		patches int
	}{{`{"fps": 8}`, 4}, {`{"videos_kwargs": {"fps": 0.5}}`, 2}, {`{"fps": 2}`, 2}} {
		q, err := p.WithKwargsJSON([]byte(c.kw))
		if err != nil {
			t.Fatal(err)
		}
		r, err := q.Replace(short)
		if err != nil || strings.Count(r.Text(), "<|vision_start|>") != c.patches {
			t.Errorf("%s: %d patches, %v; want %d", c.kw, strings.Count(r.Text(), "<|vision_start|>"), err, c.patches)
		}
		if l, _ := q.Replace(long); l.Text() != base.Text() {
			t.Errorf("%s changed a loader-sampled clip", c.kw)
		}
	}
	if _, err := p.WithKwargsJSON([]byte(`{"fps": -1}`)); !errors.Is(err, ErrBadConfig) {
		t.Errorf("fps -1: %v", err)
	}
}

// LLaVA-NeXT: the canvas choice and the unpadding, worked by hand. A 1×2
// canvas (336×672) for a square image keeps 24×24 of its 24×48 features;
// 2000×3000 (w×h) takes 672×672 (2×2 crops), 48×48 features, of which the
// width keeps int(round(2000·48/3000, 7)) = 32 → padding 8 a side → 48×32
// + 48 newlines + the base 576 = 2160. Embeddings count their rows.
func TestLlavaNext(t *testing.T) {
	for _, id := range []string{"llava-hf/llava-v1.6-mistral-7b-hf", "llava-hf/llava-v1.6-vicuna-7b-hf"} {
		p := mustModel(t, id, ModelFiles{})
		if p.Family() != FamilyLlavaNext || p.Placeholder(media.KindImage) != "<image>" || p.Supports(media.KindVideo) {
			t.Fatalf("%s: family %s", id, p.Family())
		}
		for _, c := range []struct{ w, h, want int }{{336, 336, 1176}, {2000, 3000, 2160}} {
			if n, err := p.Tokens(img(c.w, c.h)); err != nil || n != c.want {
				t.Errorf("%s %dx%d: %d, %v; want %d", id, c.w, c.h, n, err, c.want)
			}
		}
		if n, err := p.Tokens(media.Item{Kind: media.KindEmbeds, EmbedTokens: 2928}); err != nil || n != 2928 {
			t.Errorf("embeds: %d, %v", n, err)
		}
	}
	// A model directory's own canvases: one 336×336 canvas leaves the base
	// view and one crop: 576 + 24·24 + 24.
	p, err := ForModel("dir", ModelFiles{Config: []byte(`{"architectures":["LlavaNextForConditionalGeneration"],"image_grid_pinpoints":[[336,336]]}`)})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := p.Tokens(img(1000, 1000)); n != 1176 {
		t.Errorf("one canvas: %d, want 1176", n)
	}
	if _, err := ForModel("dir", ModelFiles{Config: []byte(`{"architectures":["LlavaNextForConditionalGeneration"],"image_grid_pinpoints":[[336]]}`)}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("a bad canvas: %v", err)
	}
}

// A Qwen3-VL directory's video_preprocessor_config.json sets the video
// bounds and the sampling: at fps 1 with min_frames 2, 10 frames over 1 s
// are 2 frames, one temporal patch; max_pixels 2·256·256 makes each
// 640×360 frame 320×192 (10×6 merged tokens).
func TestQwen3VideoDirectoryConfig(t *testing.T) {
	k := catalogue["qwen/qwen3-vl-8b-instruct"]
	p, err := ForModel("dir", ModelFiles{Config: []byte(k.config), PreprocessorConfig: []byte(k.preprocessor),
		VideoPreprocessorConfig: []byte(`{"size":{"shortest_edge":4096,"longest_edge":131072},"fps":1,"min_frames":2,"max_frames":768}`)})
	if err != nil {
		t.Fatal(err)
	}
	r, err := p.Replace(media.Item{Kind: media.KindVideo, Width: 640, Height: 360, Frames: 10, FPS: 10})
	if err != nil {
		t.Fatal(err)
	}
	// Frames 0 and 9: (0/10 + 9/10)/2 is a double just above 0.45, so "0.5",
	// as Python's "%.1f" prints it.
	if want := "<0.5 seconds><|vision_start|>" + strings.Repeat("<|video_pad|>", 60) + "<|vision_end|>"; r.Text() != want {
		t.Errorf("got %q…, want %q…", r.Text()[:40], want[:40])
	}
}
