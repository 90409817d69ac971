package media

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/mocker-server/mocker-server/internal/testutil"
)

// TestTensorHashVectors checks HashEmbeds (and Hash of an embeddings
// payload) against testdata/tensor_hash_vectors.json: hashes Python
// computed from the tensors Debian's torch loads from the same files, as
// vLLM's hasher serializes them (testdata/hashref.py tensors).
func TestTensorHashVectors(t *testing.T) {
	b, err := os.ReadFile("testdata/tensor_hash_vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Modality  string        `json:"modality"`
		Fixture   string        `json:"fixture"`
		Index     *int          `json:"index"`
		Grid      string        `json:"grid"`
		ModelID   string        `json:"model_id"`
		Scheme    string        `json:"scheme"`
		Algorithm HashAlgorithm `json:"algorithm"`
		Hash      string        `json:"hash"`
	}
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 20 {
		t.Fatalf("only %d vectors", len(cases))
	}
	read := func(name string) ([]byte, Tensor) {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		tt, err := ReadTensor(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return data, tt
	}
	for _, c := range cases {
		opt := HashOptions{Algorithm: c.Algorithm, ModelID: c.ModelID}
		if c.Scheme == "framed" {
			opt.Scheme = SchemeFramed
		}
		data, tt := read(c.Fixture)
		parts := []NamedTensor{{Tensor: tt}}
		if c.Index != nil {
			if parts[0].Tensor, err = tt.Index(*c.Index); err != nil {
				t.Fatal(err)
			}
		}
		if c.Grid != "" {
			_, g := read(c.Grid)
			parts = []NamedTensor{{Name: "image_embeds", Tensor: tt}, {Name: "image_grid_thw", Tensor: g}}
		}
		got, err := HashEmbeds(c.Modality, parts, opt)
		if err != nil {
			t.Fatal(err)
		}
		name := c.Fixture + " " + c.Grid + " " + c.Modality + " " + c.Scheme + " " + string(c.Algorithm)
		if got != c.Hash {
			t.Errorf("%s: got %s, want %s", name, got, c.Hash)
		}
		if c.Index != nil || c.Grid != "" {
			continue
		}
		// Hash of the payload as sent gives the same value, exact.
		kind := KindEmbeds
		if c.Modality == "audio" {
			kind = KindAudioEmbeds
		}
		h, exact, err := Hash(kind, data, opt)
		if err != nil || h != c.Hash || exact != Exact {
			t.Errorf("%s: Hash gives %s (%s, %v), want %s exact", name, h, exact, err, c.Hash)
		}
	}
}

// TestTensorHashVectorsRegenerate reruns the Python reference with torch
// and checks it still produces the committed tensor vectors.
func TestTensorHashVectorsRegenerate(t *testing.T) {
	py := testutil.DebianPython(t, "numpy", "torch")
	if _, err := exec.LookPath("b3sum"); err != nil {
		testutil.SkipOrFail(t, "b3sum missing (scripts/ensure-deps.sh --python installs it)")
	}
	cmd := exec.Command(py, "hashref.py", "tensors")
	cmd.Dir = "testdata"
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hashref.py tensors: %v", err)
	}
	want, err := os.ReadFile("testdata/tensor_hash_vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, want) {
		t.Fatal("testdata/hashref.py tensors no longer produces testdata/tensor_hash_vectors.json")
	}
}

// TestTensorContiguity checks that a view's C-order bytes do not depend on
// how it is laid out: the transposed fixture's bytes are those of its
// contiguous copy, built here by hand from the storage.
func TestTensorContiguity(t *testing.T) {
	b, _ := os.ReadFile("testdata/embeds_T_8x4_f4.pt")
	tt, err := ReadTensor(b)
	if err != nil {
		t.Fatal(err)
	}
	if tt.view.contiguous() || tt.Shape[0] != 8 || tt.Shape[1] != 4 {
		t.Fatalf("transposed fixture read as %v contiguous=%v", tt.Shape, tt.view.contiguous())
	}
	got := tt.view.cBytes()
	// Element (i, j) of the 8×4 transpose is element (j, i) of the stored 4×8.
	var want []byte
	for i := 0; i < 8; i++ {
		for j := 0; j < 4; j++ {
			p := (j*8 + i) * 4
			want = append(want, tt.view.storage[p:p+4]...)
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the transposed view's C-order bytes are wrong")
	}
	// Index(0) of a (1, 4, 8) tensor is its (4, 8) slice.
	b, _ = os.ReadFile("testdata/embeds_1x4x8_f4.pt")
	tt, _ = ReadTensor(b)
	row, err := tt.Index(0)
	if err != nil || len(row.Shape) != 2 || row.Shape[0] != 4 || !bytes.Equal(row.view.cBytes(), tt.view.cBytes()) {
		t.Fatalf("Index(0): %v %v", row.Shape, err)
	}
	if _, err := tt.Index(1); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Index(1) of a batch of one: %v", err)
	}
}

func TestReadTensorGrid(t *testing.T) {
	for name, want := range map[string]string{
		"grid_1x4x4.pt": "[1 4 4]", "grid_i4_1x4x4.pt": "[1 4 4]", "grid_2x3.pt": "[1 4 4 1 4 4]",
	} {
		b, _ := os.ReadFile(filepath.Join("testdata", name))
		tt, err := ReadTensor(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		v, err := tt.Ints()
		if err != nil || fmt.Sprint(v) != want {
			t.Errorf("%s: %v %v, want %s", name, v, err, want)
		}
	}
	b, _ := os.ReadFile("testdata/grid_f4_1x4x4.pt")
	tt, err := ReadTensor(b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tt.Ints(); !errors.Is(err, ErrUnsupported) {
		t.Errorf("a float grid read as integers: %v", err)
	}
}
