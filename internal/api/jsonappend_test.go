package api

import (
	"bytes"
	"encoding/json"
	"math"
	"os/exec"
	"strings"
	"testing"
	"unicode/utf8"
)

// encodingJSONString is encoding/json's encoding of s without HTML
// escaping, with U+2028 and U+2029 written raw: the one place where
// appendString deliberately differs (see its doc comment). The string is
// cut at those runes and each piece encoded on its own, so that a literal
// `\u2028` in s (which encoding/json writes as `\\u2028`) is left alone.
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

// FuzzAppendString: for any string, appendString writes what encoding/json
// writes (save U+2028/U+2029, written raw), and the bytes decode with
// encoding/json to the string encoding/json itself round-trips to (invalid
// UTF-8 becomes U+FFFD).
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "\b\f\n\r\t\x00\x1f\x7f", `"\`, "<a href='x'>&amp;</a>",
		"\u2028\u2029", `\u2028`, "\\\u2028", "\xff\xfe", "\xe2\x80", "\xe2\xe2\x80\xa8", "héllo 世界 🙂"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := appendString([]byte("prefix"), s)
		if !bytes.HasPrefix(got, []byte("prefix")) {
			t.Fatalf("appendString overwrote the buffer: %q", got)
		}
		got = got[len("prefix"):]
		if want := encodingJSONString(t, s); !bytes.Equal(got, want) {
			t.Errorf("appendString(%q)\n got %s\nwant %s (encoding/json)", s, got, want)
		}
		var decoded string
		if err := json.Unmarshal(got, &decoded); err != nil {
			t.Fatalf("appendString(%q) = %s: not JSON: %v", s, got, err)
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
			t.Errorf("appendString(%q) decodes to %q, encoding/json round-trips to %q", s, decoded, want)
		}
	})
}

// FuzzAppendFloat: finite floats are written byte for byte as encoding/json
// writes them and decode to the same bits; NaN and ±Inf become null.
func FuzzAppendFloat(f *testing.F) {
	for _, v := range []float64{0, math.Copysign(0, -1), 1, -1.5, 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, 123456789e13,
		-0.0001234, math.MaxFloat64, math.SmallestNonzeroFloat64, -9999.999, math.Inf(1), math.NaN()} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		got := appendFloat(nil, v)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			if string(got) != "null" {
				t.Errorf("appendFloat(%v) = %s, want null", v, got)
			}
			return
		}
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("appendFloat(%v) = %s, encoding/json writes %s", v, got, want)
		}
		var back float64
		if err := json.Unmarshal(got, &back); err != nil || math.Float64bits(back) != math.Float64bits(v) {
			t.Errorf("appendFloat(%v) = %s decodes to %v (%v)", v, got, back, err)
		}
	})
}

// FuzzAppendIntegers: token-id arrays and byte-value arrays are written as
// encoding/json writes []uint32 and []int.
func FuzzAppendIntegers(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1, 2, 3})
	f.Add([]byte("héllo"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		ids := make([]uint32, 0, len(raw)/4)
		for i := 0; i+4 <= len(raw); i += 4 {
			ids = append(ids, uint32(raw[i])|uint32(raw[i+1])<<8|uint32(raw[i+2])<<16|uint32(raw[i+3])<<24)
		}
		want, _ := json.Marshal(ids)
		if got := appendUint32s(nil, ids); !bytes.Equal(got, want) {
			t.Errorf("appendUint32s(%v) = %s, encoding/json writes %s", ids, got, want)
		}
		values := make([]int, len(raw))
		for i, c := range raw {
			values[i] = int(c)
		}
		want, _ = json.Marshal(values)
		if got := appendByteValues(nil, string(raw)); !bytes.Equal(got, want) {
			t.Errorf("appendByteValues(%q) = %s, encoding/json writes %s", raw, got, want)
		}
	})
}

// vLLM writes its JSON with Python (pydantic's model_dump_json, escaping as
// json.dumps with ensure_ascii=False does): the bytes of appendString must
// be Python's, byte for byte — control characters as \b \f \n \r \t or
// lowercase \u00xx, HTML characters and U+2028/U+2029 raw.
func TestAppendStringMatchesPython(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
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
		if got := string(appendString(nil, s)); got != lines[i] {
			t.Errorf("appendString(%q) = %s, Python writes %s", s, got, lines[i])
		}
	}
}
