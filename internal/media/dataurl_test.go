package media

import (
	"encoding/base64"
	"errors"
	"os"
	"strings"
	"testing"
)

func TestParseDataURL(t *testing.T) {
	png, _ := os.ReadFile("testdata/rgb_97x61.png")
	b64 := base64.StdEncoding.EncodeToString(png)
	cases := []struct {
		in       string
		mime     string
		data     string
		limit    int
		wantErr  error
		wantData []byte
	}{
		{in: "data:image/png;base64," + b64, mime: "image/png", wantData: png},
		{in: "DATA:Image/PNG;BASE64," + b64, mime: "image/png", wantData: png},
		{in: "data:image/png;base64," + strings.TrimRight(b64, "="), mime: "image/png", wantData: png},
		{in: "data:image/png;name=x.png;base64," + b64, mime: "image/png", wantData: png},
		{in: "data:,hello%20world", mime: "text/plain", wantData: []byte("hello world")},
		{in: "data:image/png;base64,", mime: "image/png", wantData: []byte{}},
		{in: "https://example.com/a.png", wantErr: ErrNotDataURL},
		{in: "data:image/png;base64", wantErr: ErrCorrupt},
		{in: "data:image/png;base64,@@@@", wantErr: ErrCorrupt},
		{in: "data:image/png;base64,aGVsbG8=aGVsbG8=", wantErr: ErrCorrupt},
		{in: "data:text/plain,%zz", wantErr: ErrCorrupt},
		{in: "data:image/png;base64," + b64, limit: len(png) - 1, wantErr: ErrTooLarge},
		{in: "data:image/png;base64," + b64, limit: len(png), mime: "image/png", wantData: png},
		{in: "data:text/plain," + strings.Repeat("a", 100), limit: 99, wantErr: ErrTooLarge},
	}
	for _, c := range cases {
		mime, data, err := ParseDataURL(c.in, c.limit)
		name := c.in[:min(len(c.in), 40)]
		if c.wantErr != nil {
			if !errors.Is(err, c.wantErr) {
				t.Errorf("%s: got %v, want %v", name, err, c.wantErr)
			}
			continue
		}
		if err != nil || mime != c.mime || string(data) != string(c.wantData) {
			t.Errorf("%s: got %q, %d bytes, %v; want %q, %d bytes", name, mime, len(data), err, c.mime, len(c.wantData))
		}
	}
}

// A 100 MB data URL over a 20 MB limit is refused before anything the
// size of the payload is allocated.
func TestParseDataURLHugeAllocatesNothing(t *testing.T) {
	huge := "data:image/png;base64," + strings.Repeat("A", 100<<20)
	allocs := testing.AllocsPerRun(3, func() {
		if _, _, err := ParseDataURL(huge, 20<<20); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("got %v", err)
		}
	})
	var ms1, ms2 runtimeMem
	ms1.read()
	_, _, _ = ParseDataURL(huge, 20<<20)
	ms2.read()
	if allocs > 5 || ms2.total-ms1.total > 1<<20 {
		t.Fatalf("%v allocations, %d bytes for a refused 100 MB URL", allocs, ms2.total-ms1.total)
	}
}
