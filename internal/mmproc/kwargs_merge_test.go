package mmproc

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/mocker-server/mocker-server/internal/media"
)

func fields(t *testing.T, s string) []media.Field {
	t.Helper()
	fs, err := media.FieldsFromJSON([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// TestMergeKwargsIsPythonsDictUnion: base | over keeps base's order,
// replaces whole values (nested mappings are not merged) and appends
// over's new keys.
func TestMergeKwargsIsPythonsDictUnion(t *testing.T) {
	got := MergeKwargs(fields(t, `{"a": 1, "images_kwargs": {"x": 1, "y": 2}, "b": 2}`),
		fields(t, `{"c": 3, "images_kwargs": {"y": 5}, "a": 4}`))
	want := `[{a 4} {images_kwargs [{y 5}]} {b 2} {c 3}]`
	if s := fmt.Sprint(got); s != want {
		t.Errorf("merged %s, want %s", s, want)
	}
	if got := MergeKwargs(nil, fields(t, `{"a": 1}`)); len(got) != 1 {
		t.Errorf("over nothing: %v", got)
	}
}

// TestWithKwargsOverTheServers: a request's kwargs merge over the server's
// and apply to the processor as loaded; the counts are cases.json's (the
// Python reference of Qwen's smart_resize with those bounds).
func TestWithKwargsOverTheServers(t *testing.T) {
	p := mustModel(t, "Qwen/Qwen2.5-VL-7B-Instruct", ModelFiles{})
	want := map[[4]int]int{}
	for _, c := range loadCases(t) {
		if c.Model == "Qwen/Qwen2.5-VL-7B-Instruct" && c.Kind == "image" && c.MinPixels > 0 && c.Tokens != nil {
			want[[4]int{c.Width, c.Height, c.MinPixels, c.MaxPixels}] = *c.Tokens
		}
	}
	count := func(q *Processor, w, h int) int {
		n, err := q.Tokens(img(w, h))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	server, err := p.WithKwargsJSON([]byte(`{"min_pixels": 3136, "max_pixels": 12544}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, w := count(server, 1024, 1024), want[[4]int{1024, 1024, 3136, 12544}]; got != w || w == 0 {
		t.Errorf("server kwargs: %d, want %d", got, w)
	}
	if a, _ := server.TextHiddenSize(); a != 3584 || server.Model() != p.Model() || server.Family() != p.Family() {
		t.Errorf("configured: hidden %d, model %s, family %s — the loaded processor's facts must stay", a, server.Model(), server.Family())
	}
	// Both bounds from the request.
	req, err := server.WithKwargs(fields(t, `{"max_pixels": 200000, "min_pixels": 100000}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range [][2]int{{28, 28}, {1024, 1024}, {4096, 4096}} {
		if got, w := count(req, size[0], size[1]), want[[4]int{size[0], size[1], 100000, 200000}]; got != w || w == 0 {
			t.Errorf("%v over the server's: %d, want %d", size, got, w)
		}
	}
	if !slices.EqualFunc(req.Kwargs(), fields(t, `{"min_pixels": 100000, "max_pixels": 200000}`),
		func(a, b media.Field) bool { return a.Key == b.Key && fmt.Sprint(a.Value) == fmt.Sprint(b.Value) }) {
		t.Errorf("merged kwargs %v", req.Kwargs())
	}
	// One bound from the request, the other from the server: min 3136
	// with max 1003520 is the 200704..1003520 case for images this large.
	req, err = server.WithKwargs(fields(t, `{"max_pixels": 1003520}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, w := count(req, 4096, 4096), want[[4]int{4096, 4096, 200704, 1003520}]; got != w || w == 0 {
		t.Errorf("max from the request: %d, want %d", got, w)
	}
	if count(server, 4096, 4096) != 16 {
		t.Errorf("the server's processor changed")
	}
	// A request's images_kwargs replaces the server's whole images_kwargs
	// (a shallow union): the server's max_pixels there is gone.
	s2, err := p.WithKwargsJSON([]byte(`{"images_kwargs": {"max_pixels": 12544}}`))
	if err != nil {
		t.Fatal(err)
	}
	r2, err := s2.WithKwargs(fields(t, `{"images_kwargs": {"min_pixels": 3136}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, w := count(r2, 1024, 1024), count(p, 1024, 1024); got != w {
		t.Errorf("images_kwargs replaced: %d, want the default %d", got, w)
	}
	// A value the processor refuses, from either side.
	if _, err := server.WithKwargs(fields(t, `{"min_pixels": 20000}`)); !errors.Is(err, ErrBadConfig) {
		t.Errorf("min over the server's max: %v", err)
	}
	if _, err := p.WithKwargsJSON([]byte(`[1]`)); !errors.Is(err, ErrBadConfig) {
		t.Errorf("not an object: %v", err)
	}
	g := mustModel(t, "google/gemma-3-4b-it", ModelFiles{})
	gs, err := g.WithKwargsJSON([]byte(`{"do_pan_and_scan": false}`))
	if err != nil {
		t.Fatal(err)
	}
	// A request's true over the server's false turns pan-and-scan on: a
	// 1000×500 image (ratio 2) gains two 500-px crops: 260 + 16 text tokens
	// and 261 a crop (a space and the crop's sequence).
	on, err := gs.WithKwargs(fields(t, `{"do_pan_and_scan": true}`))
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := on.Tokens(img(1000, 500)); n != 276+2*261 {
		t.Errorf("pan and scan from a request: %d tokens, want %d", n, 276+2*261)
	}
	if n, _ := gs.Tokens(img(1000, 500)); n != 260 {
		t.Errorf("the server's false: %d tokens, want 260", n)
	}
	if _, err := gs.WithKwargs(fields(t, `{"do_pan_and_scan": "yes"}`)); !errors.Is(err, ErrBadConfig) {
		t.Errorf("a string do_pan_and_scan: %v", err)
	}
}
