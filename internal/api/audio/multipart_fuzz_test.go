package audio

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
)

// FuzzDecodeMultipart: any body, well-formed or not, is read into fields
// or refused with a 4xx; never a panic, never a file over the limit.
func FuzzDecodeMultipart(f *testing.F) {
	wav, err := os.ReadFile("../../media/testdata/tone_1s_16k.wav")
	if err != nil {
		f.Fatal(err)
	}
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	_ = mw.SetBoundary("fuzzboundary")
	fw, _ := mw.CreateFormFile("file", "a.wav")
	_, _ = fw.Write(wav)
	_ = mw.WriteField("response_format", "verbose_json")
	_ = mw.WriteField("stream", "true")
	_ = mw.Close()
	f.Add(b.Bytes())
	f.Add([]byte("--fuzzboundary\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nx\r\n--fuzzboundary--\r\n"))
	f.Add([]byte("--fuzzboundary--\r\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest(http.MethodPost, "/v1/audio/transcriptions", bytes.NewReader(body))
		r.Header.Set("Content-Type", "multipart/form-data; boundary=fuzzboundary")
		o, e := DecodeMultipart(httptest.NewRecorder(), r, 1<<20)
		if e != nil {
			if e.Status < 400 || e.Status >= 500 {
				t.Fatalf("status %d: %s", e.Status, e.Message)
			}
			return
		}
		if _, ok := o.Raw(fileKey); !ok {
			t.Fatal("decoded without the file's facts")
		}
	})
}
