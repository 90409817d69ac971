package jsonenc

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mocker-server/mocker-server/internal/testutil"
)

// encodingJSONString is encoding/json's encoding of s without HTML
// escaping, with U+2028 and U+2029 written raw: the one place where
// AppendString deliberately differs (see the package comment). The string
// is cut at those runes and each piece encoded on its own, so that a
// literal `\u2028` in s (which encoding/json writes as `\\u2028`) is left
// alone.
func encodingJSONString(t *testing.T, s string) []byte {
	t.Helper()
	var out bytes.Buffer
	out.WriteByte('"')
	for {
		i := strings.IndexAny(s, "\u2028\u2029")
		piece := s
		if i >= 0 {
			piece = s[:i]
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(piece); err != nil {
			t.Fatalf("encoding/json: %v", err)
		}
		quoted := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		out.Write(quoted[1 : len(quoted)-1])
		if i < 0 {
			break
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		out.WriteString(s[i : i+size])
		s = s[i+size:]
	}
	out.WriteByte('"')
	return out.Bytes()
}

// FuzzAppendString: for any string, AppendString writes what encoding/json
// writes without HTML escaping (save U+2028/U+2029, written raw), the bytes
// decode with encoding/json to the string encoding/json itself round-trips
// to (the string itself for valid UTF-8; invalid bytes become U+FFFD), and
// AppendStringContent writes the same bytes without the quotes.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "\b\f\n\r\t\x00\x1f\x7f", `"\`, "<a href='x'>&amp;</a>",
		"\u2028\u2029", `\u2028`, "\\\u2028", "\xff\xfe", "\xe2\x80", "\xe2\xe2\x80\xa8", "héllo 世界 🙂"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := AppendString([]byte("prefix"), s)
		if !bytes.HasPrefix(got, []byte("prefix")) {
			t.Fatalf("AppendString overwrote the buffer: %q", got)
		}
		got = got[len("prefix"):]
		if want := encodingJSONString(t, s); !bytes.Equal(got, want) {
			t.Errorf("AppendString(%q)\n got %s\nwant %s (encoding/json)", s, got, want)
		}
		if content := AppendStringContent(nil, s); !bytes.Equal(content, got[1:len(got)-1]) {
			t.Errorf("AppendStringContent(%q) = %s, AppendString %s", s, content, got)
		}
		var decoded string
		if err := json.Unmarshal(got, &decoded); err != nil {
			t.Fatalf("AppendString(%q) = %s: not JSON: %v", s, got, err)
		}
		reference, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var want string
		if err := json.Unmarshal(reference, &want); err != nil {
			t.Fatal(err)
		}
		if decoded != want {
			t.Errorf("AppendString(%q) decodes to %q, encoding/json round-trips to %q", s, decoded, want)
		}
		if utf8.ValidString(s) && decoded != s {
			t.Errorf("AppendString(%q) decodes to %q: a valid string must come back unchanged", s, decoded)
		}
	})
}

// vLLM writes its JSON with Python (pydantic's model_dump_json, escaping as
// json.dumps with ensure_ascii=False does): the bytes of AppendString must
// be Python's, byte for byte — control characters as \b \f \n \r \t or
// lowercase \u00xx, HTML characters and U+2028/U+2029 raw.
func TestAppendStringMatchesPython(t *testing.T) {
	python := testutil.DebianPython(t, "json")
	var cases []string
	for c := range 0x80 {
		cases = append(cases, "<"+string(rune(c))+">")
	}
	cases = append(cases, "", `"quoted" \back\slash`, "<script>alert('x')&amp;</script>",
		"line\u2028sep\u2029para", `\u2028 literally`, "héllo 世界 🙂", "\u00a0\u0085\ufeff\U0010ffff")
	input, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	// One line per case: Python's encoding of the decoded string.
	script := `import json, sys
for s in json.load(sys.stdin):
    sys.stdout.write(json.dumps(s, ensure_ascii=False) + "\n")`
	cmd := exec.Command(python, "-c", script)
	cmd.Stdin = bytes.NewReader(input)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(cases) {
		t.Fatalf("python3 wrote %d lines for %d cases:\n%s", len(lines), len(cases), out)
	}
	for i, s := range cases {
		if got := string(AppendString(nil, s)); got != lines[i] {
			t.Errorf("AppendString(%q) = %s, Python writes %s", s, got, lines[i])
		}
	}
}

// Appending into a buffer with room allocates nothing: the SSE hot path
// renders every token's chunk through it.
func TestAppendStringDoesNotAllocate(t *testing.T) {
	buf := make([]byte, 0, 256)
	s := "héllo \"world\"\n\xff<tag>"
	if n := testing.AllocsPerRun(100, func() { buf = AppendString(buf[:0], s) }); n != 0 {
		t.Errorf("AppendString allocates %v times per call", n)
	}
}
