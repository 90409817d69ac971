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
		limit    int
		wantErr  error
		wantData []byte
	}{
		{in: "data:image/png;base64," + b64, mime: "image/png", wantData: png},
		{in: "DATA:Image/PNG;base64," + b64, mime: "image/png", wantData: png},
		{in: "data:image/png;name=x.png;base64," + b64, mime: "image/png", wantData: png},
		{in: "data:;base64,aGk=", mime: "", wantData: []byte("hi")},
		{in: "data:image/png;base64,", mime: "image/png", wantData: []byte{}},
		{in: "https://example.com/a.png", wantErr: ErrNotDataURL},
		{in: "data:image/png;base64", wantErr: ErrCorrupt},
		// vLLM reads base64 only, spelled exactly so, as the last parameter.
		{in: "data:,hello%20world", wantErr: ErrUnsupported},
		{in: "data:image/png;BASE64," + b64, wantErr: ErrUnsupported},
		{in: "data:image/png;base64;x=y," + b64, wantErr: ErrUnsupported},
		// pybase64.b64decode(validate=True): padding, alphabet, no newlines.
		{in: "data:image/png;base64," + strings.TrimRight(b64, "="), wantErr: ErrCorrupt},
		{in: "data:image/png;base64,@@@@", wantErr: ErrCorrupt},
		{in: "data:image/png;base64,aGVs\nbG8", wantErr: ErrCorrupt},
		// Go's decoder would skip these and decode "hello" and "hi".
		{in: "data:image/png;base64,aGVs\n\n\r\nbG8=", wantErr: ErrCorrupt},
		{in: "data:image/png;base64,aGk=\r\n\r\n", wantErr: ErrCorrupt},
		{in: "data:image/png;base64,\r\n\r\naGk=", wantErr: ErrCorrupt},
		{in: "data:image/png;base64,aGVsbG8=aGVsbG8=", wantErr: ErrCorrupt},
		{in: "data:image/png;base64," + b64, limit: len(png) - 1, wantErr: ErrTooLarge},
		{in: "data:image/png;base64," + b64, limit: len(png), mime: "image/png", wantData: png},
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
// size of the payload is allocated: only the error's few bytes.
func TestParseDataURLHugeAllocatesNothing(t *testing.T) {
	huge := "data:image/png;base64," + strings.Repeat("A", 100<<20)
	var before, after runtimeMem
	before.read()
	for range 3 {
		if _, _, err := ParseDataURL(huge, 20<<20); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("got %v", err)
		}
	}
	after.read()
	if n := after.total - before.total; n > 64<<10 {
		t.Fatalf("%d bytes allocated for three refused 100 MB URLs", n)
	}
}
