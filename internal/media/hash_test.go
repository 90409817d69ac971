package media

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestHashVectors checks Hash against testdata/hash_vectors.json, computed
// by an independent Python implementation (testdata/hashref.py: NumPy for
// the scalar encodings, hashlib and b3sum for the digests).
func TestHashVectors(t *testing.T) {
	b, err := os.ReadFile("testdata/hash_vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Fixture   string          `json:"fixture"`
		ModelID   string          `json:"model_id"`
		Kwargs    json.RawMessage `json:"mm_processor_kwargs"`
		Scheme    string          `json:"scheme"`
		Algorithm HashAlgorithm   `json:"algorithm"`
		Hash      string          `json:"hash"`
	}
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 20 {
		t.Fatalf("only %d vectors", len(cases))
	}
	for _, c := range cases {
		data, err := os.ReadFile(filepath.Join("testdata", c.Fixture))
		if err != nil {
			t.Fatal(err)
		}
		opt := HashOptions{Algorithm: c.Algorithm, ModelID: c.ModelID}
		if c.Scheme == "framed" {
			opt.Scheme = SchemeFramed
		}
		if string(c.Kwargs) != "null" {
			if opt.MMProcessorKwargs, err = FieldsFromJSON(c.Kwargs); err != nil {
				t.Fatal(err)
			}
		}
		got, exact, err := Hash(KindImage, data, opt)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.Hash || exact != Exact {
			t.Errorf("%s %s %s kwargs=%s: got %s (%s), want %s", c.Fixture, c.Scheme, c.Algorithm, c.Kwargs, got, exact, c.Hash)
		}
	}
}

func TestHashDistinguishes(t *testing.T) {
	png, _ := os.ReadFile("testdata/rgb_97x61.png")
	base, _, _ := Hash(KindImage, png, HashOptions{ModelID: "m"})
	other := map[string]HashOptions{
		"model":  {ModelID: "n"},
		"scheme": {ModelID: "m", Scheme: SchemeFramed},
		"kwargs": {ModelID: "m", MMProcessorKwargs: []Field{{"max_pixels", json.Number("1000")}}},
	}
	for name, opt := range other {
		if h, _, _ := Hash(KindImage, png, opt); h == base {
			t.Errorf("%s: same hash", name)
		}
	}
	// Another modality's kwargs group does not change an image's hash;
	// its own group does.
	vid, _ := FieldsFromJSON([]byte(`{"videos_kwargs": {"fps": 2}}`))
	if h, _, _ := Hash(KindImage, png, HashOptions{ModelID: "m", MMProcessorKwargs: vid}); h != base {
		t.Error("videos_kwargs changed an image's hash")
	}
	own, _ := FieldsFromJSON([]byte(`{"images_kwargs": {"max_pixels": 1000}}`))
	if h, _, _ := Hash(KindImage, png, HashOptions{ModelID: "m", MMProcessorKwargs: own}); h == base {
		t.Error("images_kwargs did not change an image's hash")
	}
	if h, _, _ := Hash(KindImage, png[:len(png)-1], HashOptions{ModelID: "m"}); h == base {
		t.Error("different bytes, same hash")
	}
	if h, _, _ := Hash(KindImage, png, HashOptions{ModelID: "m"}); h != base {
		t.Error("not deterministic")
	}
	if h, e, _ := Hash(KindAudio, png, HashOptions{ModelID: "m"}); h == base || e != BytesOnly {
		t.Errorf("audio: %s %s", h, e)
	}
	if _, _, err := Hash(KindImage, png, HashOptions{Algorithm: "md5"}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("md5: %v", err)
	}
}

func TestFieldsFromJSON(t *testing.T) {
	fs, err := FieldsFromJSON([]byte(`{"b": 1, "a": {"y": [1.5, "s"], "x": null}, "b": 2}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 2 || fs[0].Key != "b" || fs[0].Value != json.Number("2") || fs[1].Key != "a" {
		t.Fatalf("got %#v", fs)
	}
	for _, bad := range []string{`[1]`, `{"a":`, `{} {}`, `"x"`} {
		if _, err := FieldsFromJSON([]byte(bad)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
