package media

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzProbe feeds Probe the fixtures and mutations of them: it must never
// panic, must return exactly one of its sentinel errors, and must not
// allocate in proportion to what a header declares.
func FuzzProbe(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.*")
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil && len(b) < 100_000 {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		it, err := Probe(data)
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
		if it.Size != len(data) || it.Kind == KindUnknown || it.Width < 0 || it.Height < 0 || it.Duration < 0 {
			t.Fatalf("bad item %+v", it)
		}
		if int64(it.Width)*int64(it.Height) > DefaultMaxPixels {
			t.Fatalf("item over the pixel limit: %+v", it)
		}
	})
}

// FuzzParseDataURL: never a panic, a result within the limit.
func FuzzParseDataURL(f *testing.F) {
	png, _ := os.ReadFile("testdata/rgb_97x61.png")
	f.Add("data:image/png;base64,"+base64.StdEncoding.EncodeToString(png), 1000)
	f.Add("data:,a%20b", 10)
	f.Add("data:;base64,====", 0)
	f.Fuzz(func(t *testing.T, s string, limit int) {
		_, data, err := ParseDataURL(s, limit)
		if err == nil && limit > 0 && len(data) > limit {
			t.Fatalf("%d bytes over the limit %d", len(data), limit)
		}
	})
}
