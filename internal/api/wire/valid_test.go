package wire

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func valid(b []byte) bool {
	ok, _ := validJSON(b)
	return ok
}

var validCases = []string{
	`{}`, ` {} `, "\t[ ]\r\n", `0`, `-0`, `-0.5e+10`, `1E3`, `12.25`, `true`, `false`, `null`, `""`,
	`"\u00e9\"\\\/\b\f\n\r\t"`, `"é 😀"`, "\"\xff\xfe\"", // encoding/json takes invalid UTF-8 in strings
	`{"a":[1,{"b":"]}"}],"a":2}`, `[[[[]]]]`, `{"k":"` + strings.Repeat("A", 100) + `\"` + strings.Repeat("B", 33) + `"}`,
	// not valid
	``, ` `, `{`, `}`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[,1]`, `{,}`, `{"a":1 "b":2}`, `{a:1}`,
	`01`, `-`, `1.`, `.5`, `1e`, `1e+`, `+1`, `0x1`, `NaN`, `tru`, `nulll`, `"abc`, `"\x"`, `"\u12G4"`,
	`"\u12"`, "\"a\tb\"", "\"a\x00b\"", "\"a\x1fb\"", `{} {}`, `[] x`, `"\`, `["a"`, `{"a":1}}`,
}

// validJSON agrees with encoding/json's json.Valid on every case.
func TestValidJSONAgreesWithEncodingJSON(t *testing.T) {
	for _, doc := range validCases {
		if got, want := valid([]byte(doc)), json.Valid([]byte(doc)); got != want {
			t.Errorf("validJSON(%q) = %v, json.Valid = %v", doc, got, want)
		}
	}
}

// The eight-bytes-at-a-time string scan stops at every byte it must stop
// at, in every lane: each byte value at each position of a long string
// gives encoding/json's answer.
func TestValidJSONEveryByteEveryLane(t *testing.T) {
	for c := range 256 {
		for pos := range 40 {
			doc := []byte(`"` + strings.Repeat("a", 40) + `"`)
			doc[1+pos] = byte(c)
			if got, want := valid(doc), json.Valid(doc); got != want {
				t.Fatalf("byte %#x at %d: validJSON %v, json.Valid %v", c, pos, got, want)
			}
		}
	}
}

// Nesting deeper than encoding/json's limit is left to encoding/json.
func TestValidJSONDepth(t *testing.T) {
	if !valid([]byte(strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth))) {
		t.Error("the deepest nesting encoding/json takes was refused")
	}
	if valid([]byte(strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1))) {
		t.Error("nesting beyond encoding/json's limit was accepted")
	}
}

// A large body takes splitBody's path and gives the members encoding/json
// gives; small members are copies, large ones alias the body.
func TestParseObjectLargeBody(t *testing.T) {
	big := strings.Repeat("QUJD", 2000)
	body := []byte(` {"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,` +
		big + `"}},{"type":"text","text":"hi \"there\""}]}],"n":1e2,"model":"m2"} `)
	if _, _, ok := splitBody(body); !ok {
		t.Fatal("a valid large object did not take the fast path")
	}
	o, e := ParseObject(body)
	if e != nil {
		t.Fatal(e)
	}
	var want map[string]json.RawMessage
	if err := json.Unmarshal(body, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(normRaw(o.M), normRaw(want)) {
		t.Fatalf("members %v, want %v", normRaw(o.M), normRaw(want))
	}
	if &o.M["messages"][0] != &body[strings.Index(string(body), "[")] {
		t.Error("the large member was copied")
	}
	o.M["model"][1] = 'X'
	if strings.Contains(string(body), `"X2"`) {
		t.Error("a small member aliases the body")
	}
	// Invalid or non-object large bodies get encoding/json's errors.
	for doc, msg := range map[string]string{
		`[` + `"` + big + `"]`:        "Request body must be a JSON object",
		`{"a":"` + big + `",}`:        "Invalid JSON body: invalid character '}' looking for beginning of object key string",
		`{"a":"` + big + `"} x`:       "Invalid JSON body: invalid character 'x' after top-level value",
		`{"a\u0062":"` + big + `"}`:   "",
		"{\"a\xff\":\"" + big + "\"}": "",
	} {
		o, e := ParseObject([]byte(doc))
		switch {
		case msg == "" && e != nil:
			t.Errorf("%.40q: %v", doc, e)
		case msg == "":
			var want map[string]json.RawMessage
			_ = json.Unmarshal([]byte(doc), &want)
			if !reflect.DeepEqual(normRaw(o.M), normRaw(want)) {
				t.Errorf("%.40q: keys differ from encoding/json's", doc)
			}
		case e == nil || e.Message != msg:
			t.Errorf("%.40q: error %v, want %q", doc, e, msg)
		}
	}
}

// FuzzValidJSON: validJSON says what json.Valid says, and where the fast
// path splits an object its members are encoding/json's.
func FuzzValidJSON(f *testing.F) {
	for _, c := range validCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ok, big := validJSON(b)
		if ok != json.Valid(b) {
			t.Fatalf("validJSON(%q) = %v, json.Valid disagrees", b, ok)
		}
		if !ok {
			return
		}
		m, split := splitObject(b, big)
		if !split {
			return
		}
		var want map[string]json.RawMessage
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("split %q, encoding/json: %v", b, err)
		}
		if !reflect.DeepEqual(normRaw(m), normRaw(want)) {
			t.Fatalf("%q: split %v, encoding/json %v", b, normRaw(m), normRaw(want))
		}
	})
}

// ParseString's eight-bytes-at-a-time fast path gives encoding/json's
// string for each byte value in each lane of a long string.
func TestParseStringEveryByteEveryLane(t *testing.T) {
	for c := range 256 {
		for pos := range 20 {
			raw := []byte(`"` + strings.Repeat("a", 20) + `"`)
			raw[1+pos] = byte(c)
			var want string
			werr := json.Unmarshal(raw, &want)
			got, e := ParseString(raw, "s")
			if (werr != nil) != (e != nil) || got != want {
				t.Fatalf("byte %#x at %d: %q %v, encoding/json %q %v", c, pos, got, e, want, werr)
			}
		}
	}
}

// The long strings a body's validation remembers give the nested levels
// encoding/json's values: plain ones without a second scan, ones with
// escapes or non-ASCII bytes through the usual path.
func TestBigStringsNested(t *testing.T) {
	plain := strings.Repeat("QUJD", 3000)
	escaped := strings.Repeat(`a\"b\\`, 1999)
	utf := strings.Repeat("é", 5000)
	body := []byte(`{"messages":[{"role":"user","content":[` +
		`{"type":"image_url","image_url":{"url":"` + plain + `"}},` +
		`{"type":"text","text":"` + escaped + `"},` +
		`{"type":"text","text":"` + utf + `"}]}],"small":"x"}`)
	ok, big := validJSON(body)
	if !ok || len(big) != 3 {
		t.Fatalf("valid %v, %d long strings remembered, want 3", ok, len(big))
	}
	for _, s := range big {
		if s.plain != (s.n == len(plain)+2) {
			t.Errorf("string of %d bytes: plain %v", s.n, s.plain)
		}
	}
	o, e := ParseObject(body)
	if e != nil {
		t.Fatal(e)
	}
	var want struct {
		Messages []struct {
			Content []struct {
				Text     string
				ImageURL struct{ URL string } `json:"image_url"`
			}
		}
	}
	if err := json.Unmarshal(body, &want); err != nil {
		t.Fatal(err)
	}
	msgs, e := o.ArrayOf(o.M["messages"], "messages")
	if e != nil {
		t.Fatal(e)
	}
	m, _ := o.Elem(msgs[0], "messages[0]", "object")
	parts, _ := m.Array("content")
	img, _ := o.Elem(parts[0], "p0", "object")
	iu, _ := img.Object("image_url")
	url, _ := iu.String("url")
	var texts []string
	for i, p := range parts[1:] {
		po, _ := o.Elem(p, "p"+Itoa(i+1), "object")
		s, _ := po.String("text")
		texts = append(texts, s)
	}
	if o.Failed() != nil {
		t.Fatal(o.Failed())
	}
	c := want.Messages[0].Content
	if url != c[0].ImageURL.URL || texts[0] != c[1].Text || texts[1] != c[2].Text {
		t.Errorf("nested strings differ from encoding/json's")
	}
}
