package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// benchBody is a chat body with four 2 MiB random payloads as data URLs
// (11 MB), the shape of BenchmarkChatFourPNGs' photo-like request.
func benchBody() []byte {
	raw := make([]byte, 2<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range raw {
		raw[i] = byte(r.Uint32())
	}
	s := base64.StdEncoding.EncodeToString(raw)
	var b bytes.Buffer
	b.WriteString(`{"messages":[{"role":"user","content":[`)
	for i := range 4 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"type":"image_url","image_url":{"url":"data:image/png;base64,` + s + `"}}`)
	}
	b.WriteString(`]}]}`)
	return b.Bytes()
}

// BenchmarkValidJSON is the validating pass over a large body that
// replaces encoding/json's two (splitBody), beside one of encoding/json's
// (json.Valid, the same scanner its Decoder runs).
func BenchmarkValidJSON(b *testing.B) {
	body := benchBody()
	b.Run("validJSON", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if ok, _ := validJSON(body); !ok {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if !json.Valid(body) {
				b.Fatal("invalid")
			}
		}
	})
}
