package worker

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/testutil/testcfg"
)

// qwenCase is the token count cases.json (mmproc's Python reference of
// Qwen2.5-VL's smart_resize) gives a w×h image within [lo, hi] pixels
// (lo = 0: the processor's own bounds).
func qwenCase(t *testing.T, w, h, lo, hi int) int {
	t.Helper()
	b, err := os.ReadFile("../mmproc/testdata/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		Model         string
		Kind          string
		Width, Height int
		MinPixels     int `json:"min_pixels"`
		MaxPixels     int `json:"max_pixels"`
		Tokens        *int
	}
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Model == "Qwen/Qwen2.5-VL-7B-Instruct" && r.Kind == "image" && r.Width == w && r.Height == h &&
			r.MinPixels == lo && r.MaxPixels == hi && r.Tokens != nil {
			return *r.Tokens
		}
	}
	t.Fatalf("no case %dx%d in [%d, %d]", w, h, lo, hi)
	return 0
}

// TestMMProcessorKwargsConfigureTheServedProcessor: a worker built as
// production builds it (its processor loaded and configured by
// --mm-processor-kwargs) gives an image the count of Qwen's rule within
// the flag's bounds, and a request's kwargs override them.
func TestMMProcessorKwargsConfigureTheServedProcessor(t *testing.T) {
	img := image.NewGray(image.Rect(0, 0, 1024, 1024))
	img.Pix[0] = 9
	var pb bytes.Buffer
	if err := png.Encode(&pb, img); err != nil {
		t.Fatal(err)
	}
	msgs := `"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,` +
		base64.StdEncoding.EncodeToString(pb.Bytes()) + `"}}]}]`
	count := func(url, extra string) int {
		t.Helper()
		resp, err := http.Post(url+"/tokenize", "application/json", strings.NewReader("{"+extra+msgs+"}"))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var got struct{ Count int }
		if resp.StatusCode != 200 || json.Unmarshal(b, &got) != nil {
			t.Fatalf("tokenize: %d %s", resp.StatusCode, b)
		}
		return got.Count
	}
	counts := make([]int, 2)
	for i, overlay := range []map[string]any{
		{"log_level": "warn"},
		{"log_level": "warn", "mm_processor_kwargs": `{"min_pixels": 100000, "max_pixels": 200000}`},
	} {
		cfg := testcfg.Load(t, overlay)
		opts, err := Production(cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		w := New(cfg, opts)
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		counts[i] = count(w.URL(), "")
		if i == 1 {
			if got, want := count(w.URL(), `"mm_processor_kwargs":{"min_pixels":3136,"max_pixels":12544},`),
				counts[1]-qwenCase(t, 1024, 1024, 100000, 200000)+qwenCase(t, 1024, 1024, 3136, 12544); got != want {
				t.Errorf("request kwargs over the flag's: %d tokens, want %d", got, want)
			}
		}
		w.Stop()
		http.DefaultClient.CloseIdleConnections()
	}
	if got, want := counts[1]-counts[0], qwenCase(t, 1024, 1024, 100000, 200000)-qwenCase(t, 1024, 1024, 0, 0); got != want {
		t.Errorf("--mm-processor-kwargs changed the image by %d tokens, want %d (%v)", got, want, counts)
	}
}

// TestMMProcessorKwargsWithoutAProcessorSaysSo: with no multimodal
// processor (--mm-processor-model none, a text model) the flag has nothing
// to configure; the worker says so once at startup instead of nothing, and
// says nothing when a processor takes the flag.
func TestMMProcessorKwargsWithoutAProcessorSaysSo(t *testing.T) {
	for _, tc := range []struct {
		overlay map[string]any
		warns   bool
	}{
		{map[string]any{"mm_processor_model": "none", "mm_processor_kwargs": `{"max_pixels": 200000}`}, true},
		{map[string]any{"mm_processor_kwargs": `{"max_pixels": 200000}`}, false},
	} {
		var log bytes.Buffer
		cfg := testcfg.Load(t, tc.overlay)
		opts, err := Production(cfg, Options{Stderr: &log})
		if err != nil {
			t.Fatal(err)
		}
		w := New(cfg, opts)
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		w.Stop()
		said := strings.Contains(log.String(), "no effect without a multimodal processor (--mm-processor-model none): --mm-processor-kwargs")
		if said != tc.warns {
			t.Errorf("%v: warned %v, want %v\n%s", tc.overlay, said, tc.warns, log.String())
		}
	}
}
