// Package wire is what every HTTP surface reads and writes bodies with: the
// lazily decoded JSON object (Object, Num) and its typed accessors, the
// OpenAI-shaped error (APIError, its constructors and WriteError) and the
// hand-written JSON number appenders. It imports nothing of internal/api.
package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"unsafe"
)

// DecodeBody runs the body checks that come before any field is read
// (docs/http-api.md): content type, size (413), and "one JSON object". The fields come back as raw JSON
// for the typed getters of object, so that every type error names its field.
func DecodeBody(w http.ResponseWriter, r *http.Request, limit int64) (Object, *APIError) {
	ct := r.Header.Get("Content-Type")
	if !isJSONContentType(ct) {
		return Object{}, ErrBadRequest("", "Unsupported Media Type: Only 'application/json' is allowed")
	}
	if cs, ok := nonUTF8Charset(ct); ok {
		// The body would be read as UTF-8 whatever it is: refuse rather
		// than parse UTF-16 (or Latin-1) bytes into other text.
		return Object{}, ErrBadRequest("", "Unsupported Media Type: charset %q is not supported; the body must be UTF-8 JSON", cs)
	}
	tooLarge := &APIError{Status: http.StatusRequestEntityTooLarge, Type: typeTooLarge,
		Message: "Request body exceeds " + strconv.FormatInt(limit, 10) + " bytes"}
	if r.ContentLength > limit {
		return Object{}, tooLarge
	}
	if rb, ok := r.Body.(*Body); ok && int64(len(rb.b)) <= limit {
		if body, ok := rb.take(); ok {
			return parseObject(body)
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return Object{}, tooLarge
		}
		return Object{}, ErrBadRequest("", "Invalid JSON body: %v", err)
	}
	return parseObject(body)
}

// ParseObject parses body as exactly one JSON object: the object the
// shared phases read, for a front end that builds it from another
// encoding (gRPC's structured-output constraints). The Object's values
// (and its long strings) may alias body, which must not change afterwards.
func ParseObject(body []byte) (Object, *APIError) { return parseObject(body) }

// ObjectOf is the Object a body holding v (marshalled as JSON) would give:
// the form a front end that is not JSON (gRPC) hands the pipeline's phases
// that read the body, such as the constraint phase.
func ObjectOf(v any) (Object, *APIError) {
	b, err := json.Marshal(v)
	if err != nil {
		return Object{}, ErrInvalid("", "invalid request object: %v", err)
	}
	return parseObject(b)
}

// parseObject parses body as exactly one JSON object.
func parseObject(body []byte) (Object, *APIError) {
	var e *APIError
	if m, big, ok := splitBody(body); ok {
		return Object{M: m, Err: &e, big: big}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var m map[string]json.RawMessage
	if err := dec.Decode(&m); err != nil {
		var ute *json.UnmarshalTypeError
		switch {
		case errors.As(err, &ute):
			return Object{}, ErrBadRequest("", "Request body must be a JSON object")
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return Object{}, ErrBadRequest("", "Invalid JSON body: unexpected end of JSON input")
		}
		return Object{}, ErrBadRequest("", "Invalid JSON body: %v", err)
	}
	if m == nil { // the body was `null`
		return Object{}, ErrBadRequest("", "Request body must be a JSON object")
	}
	rest := bytes.TrimLeft(body[dec.InputOffset():], " \t\r\n")
	if len(rest) > 0 {
		return Object{}, ErrBadRequest("", "Invalid JSON body: invalid character %s after top-level value", quoteChar(rest[0]))
	}
	return Object{M: m, Err: &e}, nil
}

// splitBody is parseObject's path for a large body that is valid JSON and
// an object: one validating pass (validJSON) and a split of the top level,
// where encoding/json would scan the body byte by byte twice (its
// Decoder's read, then the decode) and copy it twice (into its buffer,
// then into each RawMessage). Members of splitMin bytes and more alias
// body; smaller ones are copied, so that a handler keeping a small field
// (a stored response keeps its metadata) does not keep the whole body.
// Anything else — an invalid body, a top level that is not an object, a
// key with escapes — is left to encoding/json and its errors.
func splitBody(body []byte) (map[string]json.RawMessage, bigStrings, bool) {
	if len(body) < splitMin {
		return nil, nil, false
	}
	ok, big := validJSON(body)
	if !ok {
		return nil, nil, false
	}
	m, ok := splitObject(body, big)
	if !ok {
		return nil, nil, false
	}
	for k, v := range m {
		if len(v) < splitMin {
			m[k] = bytes.Clone(v)
		}
	}
	return m, big, true
}

// quoteChar formats a byte like encoding/json's syntax errors do.
func quoteChar(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	s := strconv.Quote(string(c))
	return "'" + s[1:len(s)-1] + "'"
}

// nonUTF8Charset returns the charset parameter of a Content-Type when it
// names an encoding other than UTF-8 (or its subset ASCII).
func nonUTF8Charset(ct string) (string, bool) {
	_, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return "", false
	}
	cs, ok := params["charset"]
	if !ok {
		return "", false
	}
	switch strings.ToLower(strings.TrimSpace(cs)) {
	case "utf-8", "utf8", "us-ascii", "ascii":
		return "", false
	}
	return cs, true
}

func isJSONContentType(ct string) bool {
	if ct == "" {
		return false
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		// Be lenient with malformed parameters: compare the part before ';'.
		mt, _, _ = strings.Cut(ct, ";")
		mt = strings.ToLower(strings.TrimSpace(mt))
	}
	return mt == "application/json"
}

// Object reads the fields of one JSON object with typed getters. The first
// error is kept (sticky) in a slot shared with nested objects; getters do
// nothing once an error is recorded. A null field counts as absent.
type Object struct {
	M    map[string]json.RawMessage
	path string // "" at top level, else e.g. "messages[0]"
	Err  **APIError
	big  bigStrings // the long strings of a large body, shared with nested objects
}

// Failed returns the first recorded error.
func (o Object) Failed() *APIError { return *o.Err }

func (o Object) Fail(e *APIError) {
	if *o.Err == nil {
		*o.Err = e
	}
}

// Name is the dotted path of key.
func (o Object) Name(key string) string {
	if o.path == "" {
		return key
	}
	return o.path + "." + key
}

// Raw returns the field's JSON unless it is absent, null, or an error was
// already recorded.
func (o Object) Raw(key string) (json.RawMessage, bool) {
	if *o.Err != nil {
		return nil, false
	}
	r, ok := o.M[key]
	if !ok || IsNull(r) {
		return nil, false
	}
	return r, true
}

// Has reports whether the field is present and not null.
func (o Object) Has(key string) bool {
	r, ok := o.M[key]
	return ok && !IsNull(r)
}

func IsNull(r json.RawMessage) bool { return len(r) == 4 && string(r) == "null" }

// Num is an integer or number field with its JSON text (for messages that
// echo the value as sent).
type Num struct {
	I   int64
	F   float64
	Raw string
	Set bool
}

// Int reads an integer field (floats with a fraction and values outside
// int64 are type errors).
func (o Object) Int(key string) Num {
	r, ok := o.Raw(key)
	if !ok {
		return Num{}
	}
	v, e := ParseInt(r, o.Name(key))
	if e != nil {
		o.Fail(e)
	}
	return v
}

// Float reads a number field.
func (o Object) Float(key string) Num {
	r, ok := o.Raw(key)
	if !ok {
		return Num{}
	}
	v, e := parseFloat(r, o.Name(key))
	if e != nil {
		o.Fail(e)
	}
	return v
}

// Bool reads a boolean field; def is returned when it is absent.
func (o Object) Bool(key string, def bool) bool {
	r, ok := o.Raw(key)
	if !ok {
		return def
	}
	switch string(r) {
	case "true":
		return true
	case "false":
		return false
	}
	o.Fail(ErrFieldType(o.Name(key), "boolean"))
	return def
}

// String reads a string field.
func (o Object) String(key string) (string, bool) {
	r, ok := o.Raw(key)
	if !ok {
		return "", false
	}
	s, e := parseString(r, o.Name(key), o.big)
	if e != nil {
		o.Fail(e)
		return "", false
	}
	return s, true
}

// Array reads an array field as its raw elements.
func (o Object) Array(key string) ([]json.RawMessage, bool) {
	r, ok := o.Raw(key)
	if !ok {
		return nil, false
	}
	a, e := parseArray(r, o.Name(key), o.big)
	if e != nil {
		o.Fail(e)
		return nil, false
	}
	return a, true
}

// Object reads a nested object field.
func (o Object) Object(key string) (Object, bool) {
	r, ok := o.Raw(key)
	if !ok {
		return Object{}, false
	}
	return o.Elem(r, o.Name(key), "object")
}

// Elem parses raw as an object at path, sharing o's error slot.
func (o Object) Elem(raw json.RawMessage, path, want string) (Object, bool) {
	if len(raw) == 0 || raw[0] != '{' {
		o.Fail(ErrFieldType(path, want))
		return Object{}, false
	}
	if len(raw) >= splitMin {
		if m, ok := splitObject(raw, o.big); ok {
			return Object{M: m, path: path, Err: o.Err, big: o.big}, true
		}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		o.Fail(ErrFieldType(path, want))
		return Object{}, false
	}
	return Object{M: m, path: path, Err: o.Err}, true
}

// Kind checks that a present field has the given JSON kind without
// decoding it ("object", "array", "string", "integer", "number", "boolean").
func (o Object) Kind(key, want string) (json.RawMessage, bool) {
	r, ok := o.Raw(key)
	if !ok {
		return nil, false
	}
	var good bool
	switch want {
	case "object":
		good = r[0] == '{'
	case "array":
		good = r[0] == '['
	case "string":
		good = r[0] == '"'
	case "boolean":
		good = r[0] == 't' || r[0] == 'f'
	case "integer":
		_, e := ParseInt(r, "")
		good = e == nil
	case "number":
		_, e := parseFloat(r, "")
		good = e == nil
	}
	if !good {
		o.Fail(ErrFieldType(o.Name(key), want))
		return nil, false
	}
	return r, true
}

func isNumberStart(c byte) bool { return c == '-' || (c >= '0' && c <= '9') }

// ParseInt parses an integer JSON value: a number without fraction (5.0 is
// accepted as 5) inside int64.
func ParseInt(r json.RawMessage, path string) (Num, *APIError) {
	if len(r) == 0 || !isNumberStart(r[0]) {
		return Num{}, ErrFieldType(path, "integer")
	}
	s := string(r)
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return Num{I: i, F: float64(i), Raw: s, Set: true}, nil
	}
	if !strings.ContainsAny(s, ".eE") {
		return Num{}, ErrFieldType(path, "integer") // out of int64
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || f < -(1<<63) || f >= 1<<63 {
		return Num{}, ErrFieldType(path, "integer")
	}
	return Num{I: int64(f), F: f, Raw: s, Set: true}, nil
}

// ParseUint64 parses an integer JSON value inside [0, 2^64).
func ParseUint64(r json.RawMessage, path string) (uint64, *APIError) {
	if len(r) == 0 || !isNumberStart(r[0]) {
		return 0, ErrFieldType(path, "integer")
	}
	v, err := strconv.ParseUint(string(r), 10, 64)
	if err != nil {
		return 0, ErrFieldType(path, "integer")
	}
	return v, nil
}

func parseFloat(r json.RawMessage, path string) (Num, *APIError) {
	if len(r) == 0 || !isNumberStart(r[0]) {
		return Num{}, ErrFieldType(path, "number")
	}
	s := string(r)
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return Num{}, ErrFieldType(path, "number")
	}
	return Num{F: f, I: int64(f), Raw: s, Set: true}, nil
}

// ParseString parses a string JSON value.
func ParseString(r json.RawMessage, path string) (string, *APIError) {
	return parseString(r, path, nil)
}

func parseString(r json.RawMessage, path string, big bigStrings) (string, *APIError) {
	if len(r) == 0 || r[0] != '"' {
		return "", ErrFieldType(path, "string")
	}
	if s, ok := big.at(r, 0); ok && s.n == len(r) && s.plain {
		// The body's validation has checked every byte, and the body is
		// never written after it is read: the string can be its bytes
		// rather than a copy of megabytes. It keeps the body alive while it
		// lives, as a retained RawMessage of the body does.
		return unsafe.String(&r[1], len(r)-2), nil
	}
	if s, ok := plainString(r); ok {
		return s, nil
	}
	var s string
	if err := json.Unmarshal(r, &s); err != nil {
		return "", ErrFieldType(path, "string")
	}
	return s, nil
}

// plainString is the fast path of ParseString: a string of printable
// ASCII without escapes is its bytes between the quotes (a multimodal data
// URL is megabytes of such text, which encoding/json would scan twice);
// it checks eight bytes at a time.
func plainString(r []byte) (string, bool) {
	n := len(r)
	if n < 2 || r[n-1] != '"' {
		return "", false
	}
	body := r[1 : n-1]
	i := 0
	for ; i+8 <= len(body); i += 8 {
		x := binary.LittleEndian.Uint64(body[i:])
		if stringStop(x)|x&lanes8 != 0 {
			return "", false
		}
	}
	for _, c := range body[i:] {
		if c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			return "", false
		}
	}
	return string(body), true
}

// ParseArray parses an array JSON value into its raw elements.
func ParseArray(r json.RawMessage, path string) ([]json.RawMessage, *APIError) {
	return parseArray(r, path, nil)
}

// ArrayOf parses raw, a value of o's body at path, as an array: ParseArray
// with what o knows of its body's long strings.
func (o Object) ArrayOf(raw json.RawMessage, path string) ([]json.RawMessage, *APIError) {
	return parseArray(raw, path, o.big)
}

func parseArray(r json.RawMessage, path string, big bigStrings) ([]json.RawMessage, *APIError) {
	if len(r) == 0 || r[0] != '[' {
		return nil, ErrFieldType(path, "array")
	}
	if len(r) >= splitMin {
		if a, ok := splitArray(r, big); ok {
			return a, nil
		}
	}
	var a []json.RawMessage
	if err := json.Unmarshal(r, &a); err != nil {
		return nil, ErrFieldType(path, "array")
	}
	return a, nil
}

// CountArray returns the number of elements of r, a JSON array already
// checked as part of a valid body, without decoding them; -1 when r is not
// an array.
func CountArray(r json.RawMessage) int {
	if len(r) == 0 || r[0] != '[' {
		return -1
	}
	n, depth, inString, escaped, empty := 0, 0, false, false, true
	for _, c := range r {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			if depth == 1 {
				continue
			}
		case c == ']' || c == '}':
			depth--
		case c == ',' && depth == 1:
			n++
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		}
		if depth >= 1 {
			empty = false
		}
	}
	if empty {
		return 0
	}
	return n + 1
}

// UnknownKeys returns the keys of o that are not in known.
func (o Object) UnknownKeys(known map[string]bool) []string {
	var out []string
	for k := range o.M {
		if !known[k] {
			out = append(out, k)
		}
	}
	return out
}

// String formats a validated number for a message: the JSON text as sent.
func (n Num) String() string { return n.Raw }

func SetOf(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}
