package media

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// torchFacts is what torch 1.13 reported about each fixture it wrote
// (testdata/gen_torch.py).
func torchFacts(t testing.TB) map[string]struct {
	Shape []int
	Dtype string
	Type  string
} {
	b, err := os.ReadFile("testdata/torch_facts.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Files map[string]struct {
			Shape []int
			Dtype string
			Type  string
		}
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f.Files
}

func TestProbeEmbedsTorchSave(t *testing.T) {
	facts := torchFacts(t)
	if len(facts) < 8 {
		t.Fatalf("only %d torch fixtures", len(facts))
	}
	for name, want := range facts {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		it, err := ProbeEmbeds(b)
		switch {
		case want.Type != "": // not a tensor (the dict form)
			if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "dict") {
				t.Errorf("%s: %v, want ErrUnsupported naming the dict", name, err)
			}
		case want.Dtype == "int64" || want.Dtype == "int32":
			if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "LongStorage") {
				t.Errorf("%s: %v, want ErrUnsupported naming LongStorage", name, err)
			}
		case strings.Contains(name, "expand"):
			// A stride-0 view: a few stored bytes must not stand for
			// any number of tokens.
			if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "repeats elements") {
				t.Errorf("%s: %v, want ErrUnsupported (expanded view)", name, err)
			}
		case len(want.Shape) < 2:
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s: %v, want ErrCorrupt (1-D)", name, err)
			}
		default:
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			n := len(want.Shape)
			frames := 0
			if n == 3 {
				frames = want.Shape[0]
			}
			if it.Kind != KindEmbeds || it.EmbedTokens != want.Shape[n-2] || it.Frames != frames ||
				it.EmbedDtype != want.Dtype || it.Size != len(b) {
				t.Errorf("%s: %+v, torch says shape %v %s", name, it, want.Shape, want.Dtype)
			}
		}
	}
}

// rezip rewrites a torch.save archive with one entry's content changed.
func rezip(t *testing.T, src []byte, edit func(name string, body []byte) []byte) []byte {
	zr, err := zip.NewReader(bytes.NewReader(src), int64(len(src)))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	for _, f := range zr.File {
		rc, _ := f.Open()
		var body bytes.Buffer
		body.ReadFrom(rc)
		rc.Close()
		w, err := zw.CreateHeader(&zip.FileHeader{Name: f.Name, Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(edit(f.Name, body.Bytes()))
	}
	zw.Close()
	return out.Bytes()
}

func TestProbeEmbedsTorchRefusals(t *testing.T) {
	b, _ := os.ReadFile("testdata/embeds_4x8_f4.pt")
	same := func(_ string, body []byte) []byte { return body }
	if it, err := ProbeEmbeds(rezip(t, b, same)); err != nil || it.EmbedTokens != 4 {
		t.Fatalf("rezipped unchanged: %+v, %v", it, err)
	}
	pkl := func(from, to string) func(string, []byte) []byte {
		return func(name string, body []byte) []byte {
			if strings.HasSuffix(name, "data.pkl") {
				return bytes.Replace(body, []byte(from), []byte(to), 1)
			}
			return body
		}
	}
	cases := map[string]struct {
		data []byte
		want error
		msg  string
	}{
		"short storage": {rezip(t, b, func(name string, body []byte) []byte {
			if strings.HasSuffix(name, "data/0") {
				return body[:len(body)-4]
			}
			return body
		}), ErrCorrupt, "32 float32 elements"},
		// An arbitrary callable is refused by name, never called.
		"os.system":    {rezip(t, b, pkl("torch._utils\n_rebuild_tensor_v2", "posix\nsystem_____________________")), ErrUnsupported, "posix.system"},
		"numel lies":   {rezip(t, b, pkl("K\x20t", "K\x40t")), ErrCorrupt, "64 float32 elements"},
		"truncated":    {b[:len(b)/2], ErrCorrupt, ""},
		"zip no pkl":   {rezip(t, b, same)[:0], ErrUnsupported, ""},
		"legacy":       {[]byte("\x80\x02\x8a\x0alegacy torch pickle"), ErrUnsupported, "torch 1.6"},
		"junk zip":     {[]byte("PK\x03\x04 not really a zip"), ErrCorrupt, ""},
		"bad protocol": {rezip(t, b, pkl("\x80\x02", "\x80\x09")), ErrUnsupported, "protocol 9"},
	}
	for name, c := range cases {
		_, err := ProbeEmbeds(c.data)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want %v containing %q", name, err, c.want, c.msg)
		}
	}
	// A storage entry another name holds.
	moved := rezip(t, b, same)
	moved = bytes.ReplaceAll(moved, []byte("archive/data/0"), []byte("archive/data/9"))
	if _, err := ProbeEmbeds(moved); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "missing") {
		t.Errorf("moved storage: %v", err)
	}
}

// TestProbeEmbedsTorchBounded: a pickle declaring a huge string or a
// deep stack costs no more than its own bytes.
func TestProbeEmbedsTorchBounded(t *testing.T) {
	b, _ := os.ReadFile("testdata/embeds_4x8_f4.pt")
	huge := rezip(t, b, func(name string, body []byte) []byte {
		if strings.HasSuffix(name, "data.pkl") {
			return []byte("\x80\x02X\xff\xff\xff\x7fabc")
		}
		return body
	})
	deep := rezip(t, b, func(name string, body []byte) []byte {
		if strings.HasSuffix(name, "data.pkl") {
			return bytes.Repeat([]byte("("), 10000)
		}
		return body
	})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, e1 := ProbeEmbeds(huge)
	_, e2 := ProbeEmbeds(deep)
	runtime.ReadMemStats(&after)
	if !errors.Is(e1, ErrUnsupported) || !errors.Is(e2, ErrUnsupported) {
		t.Fatalf("huge string: %v; deep stack: %v", e1, e2)
	}
	if d := after.TotalAlloc - before.TotalAlloc; d > 256<<10 {
		t.Errorf("refusing two small archives allocated %d bytes", d)
	}
}

func FuzzProbeEmbedsTorch(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.pt")
	for _, n := range files {
		b, _ := os.ReadFile(n)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		it, err := ProbeEmbeds(data)
		if err != nil {
			n := 0
			for _, e := range []error{ErrUnsupported, ErrCorrupt, ErrTooLarge} {
				if errors.Is(err, e) {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("error %v wraps %d sentinels", err, n)
			}
			return
		}
		if it.Kind != KindEmbeds || it.EmbedTokens <= 0 || it.Size != len(data) {
			t.Fatalf("bad item %+v", it)
		}
		// What the probe accepts hashes exactly, without panicking on
		// any view it let through.
		if _, exact, err := Hash(KindEmbeds, data, HashOptions{}); err != nil || exact != Exact {
			t.Fatalf("accepted tensor hashes %v, %v", exact, err)
		}
	})
}

// FuzzUnpickleTensor fuzzes the pickle reader on its own: mutations of a
// whole archive mostly fail the ZIP's CRC before reaching it.
func FuzzUnpickleTensor(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.pt")
	for _, n := range files {
		b, _ := os.ReadFile(n)
		zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			f.Fatal(err)
		}
		for _, e := range zr.File {
			if strings.HasSuffix(e.Name, "data.pkl") {
				rc, _ := e.Open()
				var body bytes.Buffer
				body.ReadFrom(rc)
				rc.Close()
				f.Add(body.Bytes())
			}
		}
	}
	f.Fuzz(func(t *testing.T, code []byte) {
		tn, err := unpickleTensor(code)
		if err != nil {
			n := 0
			for _, e := range []error{ErrUnsupported, ErrCorrupt, ErrTooLarge} {
				if errors.Is(err, e) {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("error %v wraps %d sentinels", err, n)
			}
			return
		}
		if len(tn.shape) != len(tn.stride) || tn.storage.size == 0 || tn.storage.key == "" {
			t.Fatalf("bad tensor %+v", tn)
		}
	})
}
