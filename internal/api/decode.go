package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// decodeBody runs the body checks that come before any field is read
// (docs/http-api.md): content type, size (413), and "one JSON object". The fields come back as raw JSON
// for the typed getters of object, so that every type error names its field.
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64) (object, *apiError) {
	if !isJSONContentType(r.Header.Get("Content-Type")) {
		return object{}, errBadRequest("", "Unsupported Media Type: Only 'application/json' is allowed")
	}
	tooLarge := &apiError{Status: http.StatusRequestEntityTooLarge, Type: typeTooLarge,
		Message: "Request body exceeds " + strconv.FormatInt(limit, 10) + " bytes"}
	if r.ContentLength > limit {
		return object{}, tooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return object{}, tooLarge
		}
		return object{}, errBadRequest("", "Invalid JSON body: %v", err)
	}
	return parseObject(body)
}

// parseObject parses body as exactly one JSON object.
func parseObject(body []byte) (object, *apiError) {
	dec := json.NewDecoder(bytes.NewReader(body))
	var m map[string]json.RawMessage
	if err := dec.Decode(&m); err != nil {
		var ute *json.UnmarshalTypeError
		switch {
		case errors.As(err, &ute):
			return object{}, errBadRequest("", "Request body must be a JSON object")
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return object{}, errBadRequest("", "Invalid JSON body: unexpected end of JSON input")
		}
		return object{}, errBadRequest("", "Invalid JSON body: %v", err)
	}
	if m == nil { // the body was `null`
		return object{}, errBadRequest("", "Request body must be a JSON object")
	}
	rest := bytes.TrimLeft(body[dec.InputOffset():], " \t\r\n")
	if len(rest) > 0 {
		return object{}, errBadRequest("", "Invalid JSON body: invalid character %s after top-level value", quoteChar(rest[0]))
	}
	var e *apiError
	return object{m: m, err: &e}, nil
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

// object reads the fields of one JSON object with typed getters. The first
// error is kept (sticky) in a slot shared with nested objects; getters do
// nothing once an error is recorded. A null field counts as absent.
type object struct {
	m    map[string]json.RawMessage
	path string // "" at top level, else e.g. "messages[0]"
	err  **apiError
}

// failed returns the first recorded error.
func (o object) failed() *apiError { return *o.err }

func (o object) fail(e *apiError) {
	if *o.err == nil {
		*o.err = e
	}
}

// name is the dotted path of key.
func (o object) name(key string) string {
	if o.path == "" {
		return key
	}
	return o.path + "." + key
}

// raw returns the field's JSON unless it is absent, null, or an error was
// already recorded.
func (o object) raw(key string) (json.RawMessage, bool) {
	if *o.err != nil {
		return nil, false
	}
	r, ok := o.m[key]
	if !ok || isNull(r) {
		return nil, false
	}
	return r, true
}

// has reports whether the field is present and not null.
func (o object) has(key string) bool {
	r, ok := o.m[key]
	return ok && !isNull(r)
}

func isNull(r json.RawMessage) bool { return len(r) == 4 && string(r) == "null" }

// num is an integer or number field with its JSON text (for messages that
// echo the value as sent).
type num struct {
	I   int64
	F   float64
	Raw string
	Set bool
}

// Int reads an integer field (floats with a fraction and values outside
// int64 are type errors).
func (o object) Int(key string) num {
	r, ok := o.raw(key)
	if !ok {
		return num{}
	}
	v, e := parseInt(r, o.name(key))
	if e != nil {
		o.fail(e)
	}
	return v
}

// Float reads a number field.
func (o object) Float(key string) num {
	r, ok := o.raw(key)
	if !ok {
		return num{}
	}
	v, e := parseFloat(r, o.name(key))
	if e != nil {
		o.fail(e)
	}
	return v
}

// Bool reads a boolean field; def is returned when it is absent.
func (o object) Bool(key string, def bool) bool {
	r, ok := o.raw(key)
	if !ok {
		return def
	}
	switch string(r) {
	case "true":
		return true
	case "false":
		return false
	}
	o.fail(errFieldType(o.name(key), "boolean"))
	return def
}

// String reads a string field.
func (o object) String(key string) (string, bool) {
	r, ok := o.raw(key)
	if !ok {
		return "", false
	}
	s, e := parseString(r, o.name(key))
	if e != nil {
		o.fail(e)
		return "", false
	}
	return s, true
}

// Array reads an array field as its raw elements.
func (o object) Array(key string) ([]json.RawMessage, bool) {
	r, ok := o.raw(key)
	if !ok {
		return nil, false
	}
	a, e := parseArray(r, o.name(key))
	if e != nil {
		o.fail(e)
		return nil, false
	}
	return a, true
}

// Object reads a nested object field.
func (o object) Object(key string) (object, bool) {
	r, ok := o.raw(key)
	if !ok {
		return object{}, false
	}
	return o.elem(r, o.name(key), "object")
}

// elem parses raw as an object at path, sharing o's error slot.
func (o object) elem(raw json.RawMessage, path, want string) (object, bool) {
	if len(raw) == 0 || raw[0] != '{' {
		o.fail(errFieldType(path, want))
		return object{}, false
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		o.fail(errFieldType(path, want))
		return object{}, false
	}
	return object{m: m, path: path, err: o.err}, true
}

// Kind checks that a present field has the given JSON kind without
// decoding it ("object", "array", "string", "integer", "number", "boolean").
func (o object) Kind(key, want string) (json.RawMessage, bool) {
	r, ok := o.raw(key)
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
		_, e := parseInt(r, "")
		good = e == nil
	case "number":
		_, e := parseFloat(r, "")
		good = e == nil
	}
	if !good {
		o.fail(errFieldType(o.name(key), want))
		return nil, false
	}
	return r, true
}

func isNumberStart(c byte) bool { return c == '-' || (c >= '0' && c <= '9') }

// parseInt parses an integer JSON value: a number without fraction (5.0 is
// accepted as 5) inside int64.
func parseInt(r json.RawMessage, path string) (num, *apiError) {
	if len(r) == 0 || !isNumberStart(r[0]) {
		return num{}, errFieldType(path, "integer")
	}
	s := string(r)
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return num{I: i, F: float64(i), Raw: s, Set: true}, nil
	}
	if !strings.ContainsAny(s, ".eE") {
		return num{}, errFieldType(path, "integer") // out of int64
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || f < -(1<<63) || f >= 1<<63 {
		return num{}, errFieldType(path, "integer")
	}
	return num{I: int64(f), F: f, Raw: s, Set: true}, nil
}

// parseUint64 parses an integer JSON value inside [0, 2^64).
func parseUint64(r json.RawMessage, path string) (uint64, *apiError) {
	if len(r) == 0 || !isNumberStart(r[0]) {
		return 0, errFieldType(path, "integer")
	}
	v, err := strconv.ParseUint(string(r), 10, 64)
	if err != nil {
		return 0, errFieldType(path, "integer")
	}
	return v, nil
}

func parseFloat(r json.RawMessage, path string) (num, *apiError) {
	if len(r) == 0 || !isNumberStart(r[0]) {
		return num{}, errFieldType(path, "number")
	}
	s := string(r)
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return num{}, errFieldType(path, "number")
	}
	return num{F: f, I: int64(f), Raw: s, Set: true}, nil
}

func parseString(r json.RawMessage, path string) (string, *apiError) {
	if len(r) == 0 || r[0] != '"' {
		return "", errFieldType(path, "string")
	}
	var s string
	if err := json.Unmarshal(r, &s); err != nil {
		return "", errFieldType(path, "string")
	}
	return s, nil
}

func parseArray(r json.RawMessage, path string) ([]json.RawMessage, *apiError) {
	if len(r) == 0 || r[0] != '[' {
		return nil, errFieldType(path, "array")
	}
	var a []json.RawMessage
	if err := json.Unmarshal(r, &a); err != nil {
		return nil, errFieldType(path, "array")
	}
	return a, nil
}

// unknownKeys returns the keys of o that are not in known.
func (o object) unknownKeys(known map[string]bool) []string {
	var out []string
	for k := range o.m {
		if !known[k] {
			out = append(out, k)
		}
	}
	return out
}

// String formats a validated number for a message: the JSON text as sent.
func (n num) String() string { return n.Raw }
