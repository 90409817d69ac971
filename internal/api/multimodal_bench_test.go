package api

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/engine"
)

// gradientPNG is a w×h gray gradient: a real, compressible picture (a few
// kilobytes), not one color.
func gradientPNG(b testing.TB, w, h int, seed int) []byte {
	img := image.NewGray(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Pix[y*w+x] = uint8((x + y + seed) / 8)
		}
	}
	var out bytes.Buffer
	if err := png.Encode(&out, img); err != nil {
		b.Fatal(err)
	}
	return out.Bytes()
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkChatFourPNGs measures the process CPU (server, engine and the
// in-process client) of a chat request with four 1024×1024 PNG data URLs
// against the same request without them (cpu-µs/op); the difference is
// what the images cost: decoding their base64, probing headers, hashing
// (the processor cache skips probe and hash on a repeat, as here), the
// expansion to 4 × 1,369 tokens and those tokens' block hashes. Passes
// take no modeled time (speedup_ratio inf).
func BenchmarkChatFourPNGs(b *testing.B) {
	var images []any
	size := 0
	for i := range 4 {
		p := gradientPNG(b, 1024, 1024, i)
		size += len(p)
		images = append(images, map[string]any{"type": "image_url", "image_url": map[string]any{"url": dataURL("image/png", p)}})
	}
	text := map[string]any{"type": "text", "text": strings.Repeat("Compare these four pictures. ", 4)}
	body := func(withImages bool) string {
		parts := []any{text}
		if withImages {
			parts = append(images, text)
		}
		out, _ := json.Marshal(map[string]any{"max_tokens": 1, "messages": []any{map[string]any{"role": "user", "content": parts}}})
		return string(out)
	}
	for _, tc := range []struct {
		name   string
		images bool
	}{{"text", false}, {"four_1024px_pngs", true}} {
		b.Run(tc.name, func(b *testing.B) {
			env := startServerWith(b, testConfig(b, map[string]any{"speedup_ratio": "inf", "num_gpu_blocks": 65536}),
				func(r int) engine.Options { return engine.Options{Rank: r} }, settings.Deps{})
			req := body(tc.images)
			if r := env.post("/v1/chat/completions", req); r.Status != 200 {
				b.Fatalf("%d %s", r.Status, r.Body)
			}
			b.ReportAllocs()
			b.ResetTimer()
			start := cpuTime()
			for range b.N {
				if r := env.post("/v1/chat/completions", req); r.Status != 200 {
					b.Fatalf("%d %s", r.Status, r.Body)
				}
			}
			b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(b.N), "cpu-µs/op")
			if tc.images {
				b.ReportMetric(float64(size)/4, "png-bytes")
			}
		})
	}
}
