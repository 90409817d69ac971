package loadgen

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	const pre = `{"id":"chatcmpl-x","object":"chat.completion.chunk","created":1,"model":"m","choices":[`
	tests := []struct {
		name string
		line string
		want EventKind
	}{
		{"blank", "\n", EvNone},
		{"blank crlf", "\r\n", EvNone},
		{"comment", ": keep-alive\n", EvNone},
		{"event field", "event: message\n", EvNone},
		{"done", "data: [DONE]\n", EvDone},
		{"done no space", "data:[DONE]\r\n", EvDone},
		{"role", "data: " + pre + `{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}` + "\n", EvRole},
		{"content", "data: " + pre + `{"index":0,"delta":{"content":" puzo"},"logprobs":null,"finish_reason":null}]}` + "\n", EvToken},
		{"content mentioning role text", "data: " + pre + `{"index":0,"delta":{"content":"\"delta\":{\"role\""},"finish_reason":null}]}` + "\n", EvToken},
		{"final empty delta", "data: " + pre + `{"index":0,"delta":{},"logprobs":null,"finish_reason":"length","stop_reason":null}]}` + "\n", EvToken},
		{"completions", `data: {"id":"cmpl-x","object":"text_completion","choices":[{"index":0,"text":" a","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}` + "\n", EvToken},
		{"usage chat", "data: " + pre + `],"usage":{"prompt_tokens":5,"total_tokens":9,"completion_tokens":4}}` + "\n", EvUsage},
		{"usage completions", `data: {"id":"cmpl-x","object":"text_completion","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":5,"total_tokens":9,"completion_tokens":4}}` + "\n", EvUsage},
		{"error", `data: {"error":{"message":"boom","type":"InternalServerError","param":null,"code":500}}` + "\n", EvError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got, _ := Classify([]byte(tc.line)); got != tc.want {
				t.Errorf("Classify(%q) = %d, want %d", tc.line, got, tc.want)
			}
		})
	}
}

func TestParseUsage(t *testing.T) {
	tests := []struct {
		in            string
		prompt, compl int
	}{
		{`{"choices":[],"usage":{"prompt_tokens":5,"total_tokens":9,"completion_tokens":4}}`, 5, 4},
		{`{"usage":{"prompt_tokens": 12,"completion_tokens": 1000}}`, 12, 1000},
		{`{"usage":{"prompt_tokens":0,"completion_tokens":0}}`, 0, 0},
		{`{"usage":null}`, -1, -1},
		{`{"usage":{"prompt_tokens":x}}`, -1, -1},
	}
	for _, tc := range tests {
		p, c := ParseUsage([]byte(tc.in))
		if p != tc.prompt || c != tc.compl {
			t.Errorf("ParseUsage(%s) = %d, %d; want %d, %d", tc.in, p, c, tc.prompt, tc.compl)
		}
	}
}

func TestChunkedReader(t *testing.T) {
	tests := []struct {
		name, in, want string
		err            error
	}{
		{"two chunks", "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n", "hello world", nil},
		{"upper hex and trailer", "A\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n", "0123456789", nil},
		{"truncated", "5\r\nhel", "hel", io.ErrUnexpectedEOF},
		{"bad size", "zz\r\nhello\r\n", "", errBadChunk},
		{"missing crlf", "5\r\nhelloXX5\r\n", "hello", errBadChunk},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var cr chunkedReader
			cr.reset(bufio.NewReaderSize(strings.NewReader(tc.in), 16))
			got, err := io.ReadAll(&cr)
			if string(got) != tc.want || !errors.Is(err, tc.err) {
				t.Errorf("got %q, %v; want %q, %v", got, err, tc.want, tc.err)
			}
		})
	}
}

// A stream split at arbitrary chunk boundaries yields the same events, and
// lines longer than the buffer are assembled.
func TestStreamLinesAcrossChunks(t *testing.T) {
	long := "data: {\"choices\":[{\"delta\":{\"content\":\"" + strings.Repeat("x", 300) + "\"}}]}\n"
	events := "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n" +
		"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n" + long + "\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n"
	for _, size := range []int{1, 7, 64, 1000} {
		var b strings.Builder
		for s := events; len(s) > 0; {
			n := min(size, len(s))
			b.WriteString(strings.ToUpper(strings.TrimLeft(hex(n), "0")) + "\r\n" + s[:n] + "\r\n")
			s = s[n:]
		}
		b.WriteString("0\r\n\r\n")
		var cr chunkedReader
		cr.reset(bufio.NewReaderSize(strings.NewReader(b.String()), 16))
		lr := bufio.NewReaderSize(&cr, 64)
		var scratch []byte
		var kinds []EventKind
		for {
			line, err := readLine(lr, &scratch)
			if err != nil {
				if err != io.EOF {
					t.Fatal(err)
				}
				break
			}
			if k, _ := Classify(line); k != EvNone {
				kinds = append(kinds, k)
			}
		}
		want := []EventKind{EvRole, EvToken, EvToken, EvUsage, EvDone}
		if len(kinds) != len(want) {
			t.Fatalf("chunk %d: kinds %v, want %v", size, kinds, want)
		}
		for i := range want {
			if kinds[i] != want[i] {
				t.Fatalf("chunk %d: kinds %v, want %v", size, kinds, want)
			}
		}
	}
}

func hex(n int) string {
	const digits = "0123456789abcdef"
	s := ""
	for ; n > 0; n >>= 4 {
		s = string(digits[n&15]) + s
	}
	return s
}
