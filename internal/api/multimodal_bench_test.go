package api

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"image"
	"image/png"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zeebo/blake3"

	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/media"
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

// photoPNG is a 1024×1024 RGB picture that deflate can hardly compress, as
// a photograph: a color gradient with every sample jittered by a generator
// seeded with seed (about 2.1 MB; BestSpeed keeps the setup short, the
// size is the same as the default level's).
func photoPNG(b testing.TB, seed uint64) []byte {
	im := image.NewNRGBA(image.Rect(0, 0, 1024, 1024))
	r := rand.New(rand.NewPCG(seed, 31))
	for y := range 1024 {
		for x := range 1024 {
			i := im.PixOffset(x, y)
			v := [3]int{x / 4, y / 4, (x + y) / 8}
			for c := range 3 {
				im.Pix[i+c] = byte(v[c] + r.IntN(24))
			}
			im.Pix[i+3] = 255
		}
	}
	var out bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&out, im); err != nil {
		b.Fatal(err)
	}
	return out.Bytes()
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchPrompt is the text of every benchmark request.
var benchPrompt = strings.Repeat("Compare these four pictures. ", 4)

// chatWithImages is a one-token chat request with pngs as data URLs before
// the text.
func chatWithImages(pngs [][]byte) string {
	var parts []any
	for _, p := range pngs {
		parts = append(parts, map[string]any{"type": "image_url", "image_url": map[string]any{"url": dataURL("image/png", p)}})
	}
	parts = append(parts, map[string]any{"type": "text", "text": benchPrompt})
	out, _ := json.Marshal(map[string]any{"max_tokens": 1, "messages": []any{map[string]any{"role": "user", "content": parts}}})
	return string(out)
}

// BenchmarkChatFourPNGs measures the process CPU (server, engine and a
// raw in-process client, rawClient) of a chat request with four 1024×1024
// PNG data URLs against the same request without them (cpu-µs/op); the
// difference is
// what the images cost: reading the body, decoding their base64, probing
// headers, hashing, the expansion to 4 × 1,369 tokens and those tokens'
// block hashes. Passes take no modeled time (speedup_ratio inf).
//
// smooth_repeat sends four gradient PNGs of about 4 KB; photo_first and
// photo_repeat four photo-like PNGs of about 2.1 MB each (an 11 MB body).
// _repeat sends one body again and again, so the processor cache skips
// the decode, probe and hash after the first; photo_first rotates over two
// bodies of four different pictures each with a processor cache of three
// items, so that every item is a miss, as on its first sight.
// BenchmarkFourPhotoPNGsFloor is what any server must spend on the
// photo-like body.
func BenchmarkChatFourPNGs(b *testing.B) {
	var smooth, photos [][]byte
	for i := range 4 {
		smooth = append(smooth, gradientPNG(b, 1024, 1024, i))
	}
	for i := range 8 {
		photos = append(photos, photoPNG(b, uint64(i)))
	}
	// 0.02 GiB holds three 1024×1024 items (6 MiB each as
	// media.ProcessedBytes charges them); 4 is the default.
	const firstSightCache, defaultCache = 0.02, 4.0
	for _, tc := range []struct {
		name    string
		bodies  []string
		cacheGB float64
		pngs    [][]byte
	}{
		{"text", []string{chatWithImages(nil)}, defaultCache, nil},
		{"smooth_repeat", []string{chatWithImages(smooth)}, defaultCache, smooth},
		{"photo_first", []string{chatWithImages(photos[:4]), chatWithImages(photos[4:])}, firstSightCache, photos},
		{"photo_repeat", []string{chatWithImages(photos[:4])}, defaultCache, photos[:4]},
	} {
		b.Run(tc.name, func(b *testing.B) {
			env := startServerWith(b, testConfig(b, map[string]any{"speedup_ratio": "inf", "num_gpu_blocks": 65536,
				"mm_processor_cache_gb": tc.cacheGB, "max_request_body_bytes": 32 << 20}),
				func(r int) engine.Options { return engine.Options{Rank: r} }, settings.Deps{})
			c := newRawClient(b, env.URL)
			var reqs [][]byte
			for _, body := range tc.bodies {
				reqs = append(reqs, c.request("/v1/chat/completions", body))
				c.do(reqs[len(reqs)-1])
			}
			b.ReportAllocs()
			b.ResetTimer()
			start := cpuTime()
			for i := range b.N {
				c.do(reqs[i%len(reqs)])
			}
			b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(b.N), "cpu-µs/op")
			if len(tc.pngs) > 0 {
				size := 0
				for _, p := range tc.pngs {
					size += len(p)
				}
				b.ReportMetric(float64(size)/float64(len(tc.pngs)), "png-bytes")
			}
		})
	}
}

// BenchmarkSurfacesFourPhotoPNGs is BenchmarkChatFourPNGs' photo_first
// request on the other surfaces that take images: Anthropic's Messages
// (base64 image blocks) and the Responses API (input_image data URLs),
// beside chat, in process CPU per request. Both surfaces translate their
// content into chat messages with encoding/json (decode, re-encode,
// parse again), which costs several passes over the megabytes of base64
// that chat's path reads once (docs/multimodal.md, "Measured cost").
func BenchmarkSurfacesFourPhotoPNGs(b *testing.B) {
	var photos [][]byte
	for i := range 8 {
		photos = append(photos, photoPNG(b, uint64(i)))
	}
	anth := func(p [][]byte) string {
		var parts []any
		for _, x := range p {
			parts = append(parts, map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": base64.StdEncoding.EncodeToString(x)}})
		}
		parts = append(parts, map[string]any{"type": "text", "text": benchPrompt})
		out, _ := json.Marshal(map[string]any{"model": "mocker-model", "max_tokens": 1, "messages": []any{map[string]any{"role": "user", "content": parts}}})
		return string(out)
	}
	resp := func(p [][]byte) string {
		var parts []any
		for _, x := range p {
			parts = append(parts, map[string]any{"type": "input_image", "image_url": dataURL("image/png", x)})
		}
		parts = append(parts, map[string]any{"type": "input_text", "text": benchPrompt})
		out, _ := json.Marshal(map[string]any{"max_output_tokens": 1, "store": false, "input": []any{map[string]any{"role": "user", "content": parts}}})
		return string(out)
	}
	for _, tc := range []struct {
		name, path string
		bodies     []string
	}{
		{"anthropic", "/v1/messages", []string{anth(photos[:4]), anth(photos[4:])}},
		{"responses", "/v1/responses", []string{resp(photos[:4]), resp(photos[4:])}},
		{"chat", "/v1/chat/completions", []string{chatWithImages(photos[:4]), chatWithImages(photos[4:])}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			env := startServerWith(b, testConfig(b, map[string]any{"speedup_ratio": "inf", "num_gpu_blocks": 65536,
				"mm_processor_cache_gb": 0.02, "max_request_body_bytes": 32 << 20}),
				func(r int) engine.Options { return engine.Options{Rank: r} }, settings.Deps{})
			c := newRawClient(b, env.URL)
			var reqs [][]byte
			for _, body := range tc.bodies {
				reqs = append(reqs, c.request(tc.path, body))
				c.do(reqs[len(reqs)-1])
			}
			b.ResetTimer()
			start := cpuTime()
			for i := range b.N {
				c.do(reqs[i%len(reqs)])
			}
			b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// rawClient sends pre-rendered HTTP/1.1 requests on one keep-alive
// connection and reads the answers: the least a client can cost, so that
// the process CPU of a benchmark is the server's (and the kernel's
// transfer), not net/http's client copying an 11 MB body through its
// buffers.
type rawClient struct {
	b    testing.TB
	host string
	conn net.Conn
	br   *bufio.Reader
}

func newRawClient(b testing.TB, url string) *rawClient {
	host := strings.TrimPrefix(url, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	return &rawClient{b: b, host: host, conn: conn, br: bufio.NewReader(conn)}
}

// request renders a JSON POST.
func (c *rawClient) request(path, body string) []byte {
	return []byte("POST " + path + " HTTP/1.1\r\nHost: " + c.host + "\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}

// do sends req and reads the whole answer, which must be a 200.
func (c *rawClient) do(req []byte) {
	if _, err := c.conn.Write(req); err != nil {
		c.b.Fatal(err)
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		c.b.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		c.b.Fatalf("%d %.300s %v", resp.StatusCode, body, err)
	}
}

// BenchmarkFourPhotoPNGsFloor is the least CPU any server spends to take
// BenchmarkChatFourPNGs' photo-like body and produce vLLM's four image
// hashes, with the stdlib and the blake3 module the server uses: a client
// goroutine writes the 11 MB body on a loopback TCP connection (as the
// rawClient of BenchmarkChatFourPNGs does), the other end reads it
// into a buffer of its known length (no HTTP, no growth), finds the data
// URLs (skipping strings with bytes.IndexByte, validating nothing),
// base64-decodes each payload and hashes it in vLLM's layout, and answers
// one byte. Each stage is a sub-benchmark that adds to the one before:
//
//	read          the transfer alone
//	scan          + finding the four strings
//	decode        + encoding/base64 into one reused buffer per payload
//	hash          + blake3 over the decoded payload (the floor, whole)
//	hash_chunked  the same in 48 KiB chunks of base64, each decoded into a
//	              36 KiB buffer and hashed while in cache
//
// Every hash is checked against media.Hash, so the floor computes the
// server's answer.
func BenchmarkFourPhotoPNGsFloor(b *testing.B) {
	var pngs [][]byte
	for i := range 4 {
		pngs = append(pngs, photoPNG(b, uint64(i)))
	}
	body := []byte(chatWithImages(pngs))
	const model = "Qwen/Qwen2.5-VL-7B-Instruct"
	var want []string
	for _, p := range pngs {
		h, _, err := media.Hash(media.KindImage, p, media.HashOptions{ModelID: model})
		if err != nil {
			b.Fatal(err)
		}
		want = append(want, h)
	}
	for _, stage := range []floorStage{floorRead, floorScan, floorDecode, floorHash, floorHashChunked} {
		b.Run(stage.String(), func(b *testing.B) {
			f := newFloorRig(b, stage, model, len(body))
			b.SetBytes(int64(len(body)))
			b.ResetTimer()
			start := cpuTime()
			for range b.N {
				f.roundTrip(body)
			}
			b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(b.N), "cpu-µs/op")
			b.StopTimer()
			if stage >= floorHash && !slices.Equal(f.hashes, want) {
				b.Fatalf("hashes %v, want %v", f.hashes, want)
			}
		})
	}
}

type floorStage int

const (
	floorRead floorStage = iota
	floorScan
	floorDecode
	floorHash
	floorHashChunked
)

func (s floorStage) String() string {
	return [...]string{"read", "scan", "decode", "hash", "hash_chunked"}[s]
}

// floorRig is one loopback TCP connection with a reader that does a
// floorStage's work on each body.
type floorRig struct {
	b      testing.TB
	stage  floorStage
	model  string
	client net.Conn
	server net.Conn
	buf    []byte // the body
	dec    []byte // a decoded payload
	hashes []string
	done   chan struct{}
}

func newFloorRig(b testing.TB, stage floorStage, model string, n int) *floorRig {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	server := <-accepted
	if server == nil {
		b.Fatal("accept failed")
	}
	f := &floorRig{b: b, stage: stage, model: model, client: client, server: server,
		buf: make([]byte, n), dec: make([]byte, 0, 4<<20), done: make(chan struct{})}
	go f.serve()
	b.Cleanup(func() {
		client.Close()
		<-f.done
		server.Close()
	})
	return f
}

// roundTrip sends body and waits for the one-byte answer.
func (f *floorRig) roundTrip(body []byte) {
	if _, err := f.client.Write(body); err != nil {
		f.b.Fatal(err)
	}
	var ack [1]byte
	if _, err := io.ReadFull(f.client, ack[:]); err != nil {
		f.b.Fatal(err)
	}
}

func (f *floorRig) serve() {
	defer close(f.done)
	for {
		if _, err := io.ReadFull(f.server, f.buf); err != nil {
			return
		}
		if f.stage >= floorScan {
			f.hashes = f.hashes[:0]
			for _, payload := range floorDataURLs(f.buf) {
				f.payload(payload)
			}
		}
		if _, err := f.server.Write([]byte{1}); err != nil {
			return
		}
	}
}

// floorDataURLs returns the base64 payloads of the data URLs among the
// strings of a JSON body, finding each string's end with bytes.IndexByte
// (a data URL has no escapes).
func floorDataURLs(body []byte) [][]byte {
	var out [][]byte
	prefix := []byte("data:image/png;base64,")
	for i := 0; i < len(body); {
		q := bytes.IndexByte(body[i:], '"')
		if q < 0 {
			break
		}
		start := i + q + 1
		end := bytes.IndexByte(body[start:], '"')
		if end < 0 {
			break
		}
		if s := body[start : start+end]; bytes.HasPrefix(s, prefix) {
			out = append(out, s[len(prefix):])
		}
		i = start + end + 1
	}
	return out
}

// payload decodes (and from floorHash on, hashes) one base64 payload.
func (f *floorRig) payload(p []byte) {
	enc := base64.StdEncoding
	switch f.stage {
	case floorScan:
		return
	case floorDecode, floorHash:
		n, err := enc.Decode(f.dec[:cap(f.dec)], p)
		if err != nil {
			f.b.Error(err)
			return
		}
		if f.stage == floorHash {
			h := f.hasher()
			h.Write(f.dec[:n])
			f.hashes = append(f.hashes, f.sum(h))
		}
	case floorHashChunked:
		const chunk = 48 << 10 // base64 characters: 36 KiB decoded
		h := f.hasher()
		for len(p) > 0 {
			c := p[:min(chunk, len(p))]
			n, err := enc.Decode(f.dec[:cap(f.dec)], c)
			if err != nil {
				f.b.Error(err)
				return
			}
			h.Write(f.dec[:n])
			p = p[len(c):]
		}
		f.hashes = append(f.hashes, f.sum(h))
	}
}

// hasher starts vLLM's keyed-layout hash of an image (media.Hash with the
// default options): the keyword "image", the MediaWithBytes item's key
// "image", then the bytes.
func (f *floorRig) hasher() *blake3.Hasher {
	h := blake3.New()
	h.WriteString("imageimage")
	return h
}

// sum ends it: the key "model_id" and the model id.
func (f *floorRig) sum(h *blake3.Hasher) string {
	h.WriteString("model_id")
	h.WriteString(f.model)
	return hex.EncodeToString(h.Sum(nil))
}
