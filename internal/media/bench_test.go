package media

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/png"
	"math/rand/v2"
	"testing"
)

// benchPNG is a 1024×1024 RGB PNG: smooth (a screenshot-like gradient,
// compresses well) or noisy (photo-like: every pixel jittered).
func benchPNG(b *testing.B, noisy bool) []byte {
	b.Helper()
	im := image.NewNRGBA(image.Rect(0, 0, 1024, 1024))
	r := rand.New(rand.NewPCG(1, 2))
	for y := range 1024 {
		for x := range 1024 {
			i := im.PixOffset(x, y)
			v := [3]int{x / 4, y / 4, (x + y) / 8}
			for c := range 3 {
				if noisy {
					v[c] += r.IntN(24)
				}
				im.Pix[i+c] = byte(v[c])
			}
			im.Pix[i+3] = 255
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, im); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkImageDataURL is one 1024×1024 PNG data URL from the request's
// string to its facts and vLLM's hash: the base64 decode, the header probe
// and the blake3 hash, each alone and together.
func BenchmarkImageDataURL(b *testing.B) {
	for _, kind := range []struct {
		name  string
		noisy bool
	}{{"smooth", false}, {"noisy", true}} {
		raw := benchPNG(b, kind.noisy)
		url := "data:image/png;base64," + base64.StdEncoding.EncodeToString(raw)
		b.Run(kind.name+"/decode", func(b *testing.B) {
			b.SetBytes(int64(len(url)))
			for b.Loop() {
				if _, _, err := ParseDataURL(url, 20<<20); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(kind.name+"/probe", func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if it, err := Probe(raw); err != nil || it.Width != 1024 {
					b.Fatal(it, err)
				}
			}
		})
		b.Run(kind.name+"/hash", func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if _, _, err := Hash(KindImage, raw, HashOptions{ModelID: "Qwen/Qwen2.5-VL-7B-Instruct"}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(kind.name+"/all", func(b *testing.B) {
			b.ReportMetric(float64(len(raw)), "png-bytes")
			for b.Loop() {
				_, data, err := ParseDataURL(url, 20<<20)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := Probe(data); err != nil {
					b.Fatal(err)
				}
				if _, _, err := Hash(KindImage, data, HashOptions{ModelID: "Qwen/Qwen2.5-VL-7B-Instruct"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchNpy is a .npy array of 1369 × 3584 float16 (one 1024×1024 image's
// embeddings for a 7B Qwen2.5-VL, 9.8 MB), in C or Fortran order.
func benchNpy(fortran bool) []byte {
	const rows, cols = 1369, 3584
	order := "False"
	if fortran {
		order = "True"
	}
	header := "{'descr': '<f2', 'fortran_order': " + order + ", 'shape': (1369, 3584), }"
	header += string(bytes.Repeat([]byte{' '}, 63-(10+len(header))%64)) + "\n"
	out := append([]byte("\x93NUMPY\x01\x00"), byte(len(header)), byte(len(header)>>8))
	out = append(out, header...)
	body := make([]byte, rows*cols*2)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range body {
		body[i] = byte(r.Uint32())
	}
	return append(out, body...)
}

// BenchmarkHashEmbeds is vLLM's hash of an embeddings payload: read the
// tensor and hash its C-order bytes (a contiguous array is hashed in
// place; a Fortran-order one is gathered into C order first).
func BenchmarkHashEmbeds(b *testing.B) {
	for _, tc := range []struct {
		name    string
		fortran bool
	}{{"contiguous", false}, {"fortran", true}} {
		data := benchNpy(tc.fortran)
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, exact, err := Hash(KindEmbeds, data, HashOptions{}); err != nil || exact != Exact {
					b.Fatal(exact, err)
				}
			}
		})
	}
}
