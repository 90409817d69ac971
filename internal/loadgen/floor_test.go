package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http/httputil"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The writer and the reader over real loopback connections: every byte
// written arrives, the counts add up and the per-write figures are set.
func TestFloorWriterReader(t *testing.T) {
	for _, writers := range []int{1, 2} {
		t.Run("writers "+strconv.Itoa(writers), func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			cfg := FloorDefaults()
			cfg.Addr = ln.Addr().String()
			cfg.Conns, cfg.Ticks, cfg.Interval, cfg.Writers = 50, 5, 10*time.Millisecond, writers // Warmup: the default 5
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()

			type readOut struct {
				n   int64
				err error
			}
			read := make(chan readOut, 1)
			go func() {
				n, err := RunFloorReader(ctx, cfg)
				read <- readOut{n, err}
			}()
			wcfg := cfg
			wcfg.Listener = ln
			res, err := RunFloorWriter(ctx, wcfg)
			if err != nil {
				t.Fatalf("RunFloorWriter: %v", err)
			}
			got := <-read
			if got.err != nil {
				t.Fatalf("RunFloorReader: %v", got.err)
			}
			want := int64(cfg.Conns) * int64(cfg.Warmup+cfg.Ticks) * int64(cfg.ChunkBytes)
			if got.n != want || cfg.ExpectedBytes() != want {
				t.Errorf("reader got %d bytes, want %d (ExpectedBytes %d)", got.n, want, cfg.ExpectedBytes())
			}
			if res.BytesWritten != want {
				t.Errorf("BytesWritten = %d, want %d", res.BytesWritten, want)
			}
			if res.Writes != int64(cfg.Conns*cfg.Ticks) || len(res.TickWriteMs) != cfg.Ticks {
				t.Errorf("Writes = %d, %d tick times; want %d, %d", res.Writes, len(res.TickWriteMs), cfg.Conns*cfg.Ticks, cfg.Ticks)
			}
			if res.Config.Writers != writers || res.Config.Addr != cfg.Addr {
				t.Errorf("config writers %d addr %q, want %d %q", res.Config.Writers, res.Config.Addr, writers, cfg.Addr)
			}
			if !(res.WriteUsP50 > 0 && res.WriteUsP10 > 0 && res.WriteUsP10 <= res.WriteUsP50 && res.WriteUsP50 <= res.WriteUsP90) {
				t.Errorf("µs/write p10 %v p50 %v p90 %v", res.WriteUsP10, res.WriteUsP50, res.WriteUsP90)
			}
			if !(res.TickWriteMsP50 > 0 && res.TickWriteMsP50 <= res.TickWriteMsP99 && res.TickWriteMsP99 <= res.TickWriteMsMax) {
				t.Errorf("tick write p50 %v p99 %v max %v", res.TickWriteMsP50, res.TickWriteMsP99, res.TickWriteMsMax)
			}
			if res.FloorLagP99Ms != 0.99*res.TickWriteMsP50 {
				t.Errorf("floor lag p99 %v, want 0.99 × %v", res.FloorLagP99Ms, res.TickWriteMsP50)
			}
			if !(res.WriteLagMsP50 > 0 && res.WriteLagMsP50 <= res.WriteLagMsP99) {
				t.Errorf("measured write lag p50 %v p99 %v", res.WriteLagMsP50, res.WriteLagMsP99)
			}
			if res.CPUUsPerWrite < 0 {
				t.Errorf("cpu µs/write %v", res.CPUUsPerWrite)
			}
			var tbl, js bytes.Buffer
			res.WriteTable(&tbl)
			if err := res.WriteJSON(&js); err != nil || !bytes.Contains(js.Bytes(), []byte(`"floor_lag_p99_ms"`)) {
				t.Errorf("WriteJSON: %v\n%s", err, js.Bytes())
			}
			t.Logf("\n%s", tbl.Bytes())
		})
	}
}

// The writer gives up when the connections do not all arrive, and the
// listener it was given is closed.
func TestFloorWriterCancelledBeforeAccept(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := RunFloorWriter(ctx, FloorConfig{Listener: ln, Conns: 3}); err == nil {
		t.Fatal("RunFloorWriter succeeded without connections")
	}
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Error("listener still accepts after the writer returned")
	}
}

// The chunk is exactly the asked size and a well-formed HTTP/1.1 chunk
// carrying one data: event.
func TestFloorChunk(t *testing.T) {
	for _, n := range []int{minFloorChunk, 15, 100, 200, 270, 271, 272, 280, 4096, 4100, 70000} {
		b := floorChunk(n)
		if len(b) != n {
			t.Errorf("floorChunk(%d): %d bytes", n, len(b))
			continue
		}
		i := bytes.Index(b, []byte("\r\n"))
		size, err := strconv.ParseInt(string(b[:max(i, 0)]), 16, 64)
		if i < 0 || err != nil || int(size) != n-i-4 || !bytes.HasSuffix(b, []byte("\n\n\r\n")) ||
			!bytes.HasPrefix(b[i+2:], []byte("data: ")) {
			t.Errorf("floorChunk(%d) is not a chunk of one event: %q", n, b)
		}
		if n >= 280 && !bytes.Contains(b, []byte(`"object":"chat.completion.chunk"`)) {
			t.Errorf("floorChunk(%d) does not hold a chat.completion.chunk: %q", n, b)
		}
		// net/http's own chunked reader, followed by the terminating
		// chunk, reads back exactly one event; from 280 bytes on it is
		// JSON as the server's chunks are.
		body, err := io.ReadAll(httputil.NewChunkedReader(io.MultiReader(bytes.NewReader(b), strings.NewReader("0\r\n\r\n"))))
		if err != nil || !bytes.HasPrefix(body, []byte("data: ")) || !bytes.HasSuffix(body, []byte("\n\n")) {
			t.Errorf("floorChunk(%d): net/http reads %q, %v", n, body, err)
			continue
		}
		if n >= 280 && !json.Valid(bytes.TrimSuffix(bytes.TrimPrefix(body, []byte("data: ")), []byte("\n\n"))) {
			t.Errorf("floorChunk(%d): the event is not JSON: %q", n, body)
		}
	}
}
