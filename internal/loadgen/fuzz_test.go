package loadgen

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http/httputil"
	"strings"
	"testing"
)

// FuzzSSEParser sends an arbitrary body through the load generator's
// stream path: chunked transfer encoding (written by net/http's own
// chunked writer, an independent implementation, at fuzz-chosen chunk
// sizes), the chunked reader, line assembly and Classify. The lines must
// come back exactly as bytes.SplitAfter cuts the body, each classified as
// the whole body's lines are. Raw bytes fed to the chunked reader must
// never panic.
func FuzzSSEParser(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n"), uint8(7))
	f.Add([]byte("data: {\"error\":{\"message\":\"x\",\"code\":503}}\n\ndata: [DONE]\n\n"), uint8(1))
	f.Add([]byte(": comment\r\nevent: x\r\ndata:[DONE]\r\n\r\n"+strings.Repeat("z", 300)), uint8(64))
	f.Add([]byte("5\r\nhello\r\n0\r\n\r\n"), uint8(0))
	f.Fuzz(func(t *testing.T, body []byte, chunk uint8) {
		// Raw bytes as a chunked body: errors are fine, panics are not.
		var raw chunkedReader
		raw.reset(bufio.NewReaderSize(bytes.NewReader(body), 16))
		_, _ = io.Copy(io.Discard, &raw)

		var wire bytes.Buffer
		cw := httputil.NewChunkedWriter(&wire)
		size := int(chunk) + 1
		for s := body; len(s) > 0; {
			n := min(size, len(s))
			if _, err := cw.Write(s[:n]); err != nil {
				t.Fatal(err)
			}
			s = s[n:]
		}
		_ = cw.Close()
		wire.WriteString("\r\n") // the empty trailer

		var cr chunkedReader
		cr.reset(bufio.NewReaderSize(&wire, 16))
		lr := bufio.NewReaderSize(&cr, 64)
		var scratch []byte
		want := bytes.SplitAfter(body, []byte("\n"))
		if len(want) > 0 && len(want[len(want)-1]) == 0 {
			want = want[:len(want)-1]
		}
		for i := 0; ; i++ {
			line, err := readLine(lr, &scratch)
			if len(line) > 0 {
				if i >= len(want) || !bytes.Equal(line, want[i]) {
					t.Fatalf("line %d = %q, want %q", i, line, want[min(i, len(want)-1)])
				}
				k1, p1 := Classify(line)
				k2, p2 := Classify(want[i])
				if k1 != k2 || !bytes.Equal(p1, p2) {
					t.Fatalf("line %q classified %v, reference %v", line, k1, k2)
				}
			} else {
				i--
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					t.Fatalf("reading a valid chunked body: %v", err)
				}
				if i+1 != len(want) {
					t.Fatalf("got %d lines, want %d", i+1, len(want))
				}
				return
			}
		}
	})
}
