package httperr

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// The constructors write the bytes encoding/json writes for the maps the
// endpoints answered with before (keys sorted, HTML escaped), for every
// kind of string.
func TestShapesMatchEncodingJSONMaps(t *testing.T) {
	for _, s := range []string{"", "Unauthorized", `"quoted" \back`, "<script>&amp;</script>",
		"line\nbreak\ttab\x00", "héllo 世界 🙂", "\u2028\u2029", "\xff\xfe bad"} {
		for _, param := range []string{"", "id", s} {
			var p any
			if param != "" {
				p = param
			}
			want, _ := json.Marshal(map[string]any{"error": map[string]any{
				"message": s, "type": "BadRequestError", "param": p, "code": 400}})
			if got := Nested(400, "BadRequestError", s, param); !bytes.Equal(got, want) {
				t.Errorf("Nested(%q, param %q)\n got %s\nwant %s", s, param, got, want)
			}
		}
		want, _ := json.Marshal(map[string]string{"error": s})
		if got := Flat(s); !bytes.Equal(got, want) {
			t.Errorf("Flat(%q)\n got %s\nwant %s", s, got, want)
		}
	}
}

// Write answers through a real server with the status, the JSON content
// type, the body's length and the body.
func TestWriteAnswersOverHTTP(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 5000) // beyond net/http's own Content-Length buffering
	for _, body := range [][]byte{Nested(404, "NotFoundError", "no recent request \"r\"", "id"), Flat(string(big))} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			Write(w, http.StatusNotFound, body)
		}))
		resp, err := http.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 404 || resp.Header.Get("Content-Type") != "application/json" ||
			resp.ContentLength != int64(len(body)) || len(resp.TransferEncoding) != 0 || !bytes.Equal(got, body) {
			t.Errorf("answer %d %q length %d %v %.80s; want 404 application/json %d, not chunked, the body",
				resp.StatusCode, resp.Header.Get("Content-Type"), resp.ContentLength, resp.TransferEncoding, got, len(body))
		}
	}
}
