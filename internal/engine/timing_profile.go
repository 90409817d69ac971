package engine

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// Profile array names, used both as JSON keys and as NPZ member names, so
// one profile can be written in either format.
const (
	arrPrefillISL           = "prefill_isl"
	arrPrefillTTFTMs        = "prefill_ttft_ms"
	arrDecodeActiveKVTokens = "decode_active_kv_tokens"
	arrDecodeContextLength  = "decode_context_length"
	arrDecodeITL            = "decode_itl"
)

// Profile is measured timing data for the interpolated model
// (docs/timing-model.md). A nil array means "missing".
type Profile struct {
	// PrefillISL is the prefill axis: new prompt tokens in a pass. Strictly
	// increasing, at least 2 points.
	PrefillISL []float64 `json:"prefill_isl"`
	// PrefillTTFTMs is the prefill time in ms at each PrefillISL point.
	PrefillTTFTMs []float64 `json:"prefill_ttft_ms"`
	// DecodeActiveKVTokens is decode axis 1 (active KV tokens). Strictly
	// increasing, at least 2 points.
	DecodeActiveKVTokens []float64 `json:"decode_active_kv_tokens"`
	// DecodeContextLength is decode axis 2 (average context length).
	// Strictly increasing, at least 2 points.
	DecodeContextLength []float64 `json:"decode_context_length"`
	// DecodeITL is the decode time in ms: row i ↔ DecodeActiveKVTokens[i],
	// column j ↔ DecodeContextLength[j].
	DecodeITL [][]float64 `json:"decode_itl"`
}

// ProfileArrayError reports a problem with one named array of a profile.
type ProfileArrayError struct {
	// Array is the array's name, e.g. "decode_itl".
	Array string
	// Msg describes the problem.
	Msg string
}

func (e *ProfileArrayError) Error() string {
	return fmt.Sprintf("profile array %s: %s", e.Array, e.Msg)
}

func arrayErr(array, format string, args ...any) error {
	return &ProfileArrayError{Array: array, Msg: fmt.Sprintf(format, args...)}
}

// Validate checks the profile's shape and values: every array present, axes
// strictly increasing with at least 2 points, value arrays matching their
// axes, and no NaN or Inf anywhere. The error names the offending array.
func (p *Profile) Validate() error {
	if p == nil {
		return errors.New("profile: nil")
	}
	axes := []struct {
		name string
		v    []float64
	}{
		{arrPrefillISL, p.PrefillISL},
		{arrDecodeActiveKVTokens, p.DecodeActiveKVTokens},
		{arrDecodeContextLength, p.DecodeContextLength},
	}
	for _, a := range axes {
		if err := validateAxis(a.name, a.v); err != nil {
			return err
		}
	}
	if err := validateValues(arrPrefillTTFTMs, p.PrefillTTFTMs, len(p.PrefillISL), arrPrefillISL, ""); err != nil {
		return err
	}
	if p.DecodeITL == nil {
		return arrayErr(arrDecodeITL, "missing")
	}
	if len(p.DecodeITL) != len(p.DecodeActiveKVTokens) {
		return arrayErr(arrDecodeITL, "has %d rows, want %d (the length of %s)",
			len(p.DecodeITL), len(p.DecodeActiveKVTokens), arrDecodeActiveKVTokens)
	}
	for i, row := range p.DecodeITL {
		if err := validateValues(arrDecodeITL, row, len(p.DecodeContextLength), arrDecodeContextLength,
			fmt.Sprintf("row %d ", i)); err != nil {
			return err
		}
	}
	return nil
}

func validateAxis(name string, v []float64) error {
	if v == nil {
		return arrayErr(name, "missing")
	}
	if len(v) < 2 {
		return arrayErr(name, "has %d points, need at least 2", len(v))
	}
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return arrayErr(name, "element %d is %v (must be finite)", i, x)
		}
		if i > 0 && !(x > v[i-1]) {
			return arrayErr(name, "not strictly increasing: element %d (%v) <= element %d (%v)", i, x, i-1, v[i-1])
		}
	}
	return nil
}

func validateValues(name string, v []float64, want int, axis, where string) error {
	if v == nil && where == "" {
		return arrayErr(name, "missing")
	}
	if len(v) != want {
		return arrayErr(name, "%shas %d values, want %d (the length of %s)", where, len(v), want, axis)
	}
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return arrayErr(name, "%selement %d is %v (must be finite)", where, i, x)
		}
	}
	return nil
}

// zipMagic starts every ZIP archive with at least one member (local file
// header); zipEmptyMagic starts an empty one (end of central directory).
var (
	zipMagic      = []byte("PK\x03\x04")
	zipEmptyMagic = []byte("PK\x05\x06")
)

// LoadProfile reads and validates a profile file. The format is chosen by
// content, not extension: an NPZ archive (starts with PK\x03\x04) of
// "<name>.npy" members, or a JSON object with the five arrays as keys.
// Errors are wrapped with the path; validation errors name the array.
func LoadProfile(path string) (*Profile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load planner profile %q: %w", path, err)
	}
	var p *Profile
	switch {
	case bytes.HasPrefix(data, zipMagic), bytes.HasPrefix(data, zipEmptyMagic):
		p, err = parseNPZProfile(data)
	default:
		p, err = parseJSONProfile(data)
	}
	if err == nil {
		err = p.Validate()
	}
	if err != nil {
		return nil, fmt.Errorf("load planner profile %q: %w", path, err)
	}
	return p, nil
}

// parseJSONProfile decodes a JSON object holding the five arrays. Unknown
// keys are ignored; a missing or null key leaves its array nil (missing).
func parseJSONProfile(data []byte) (*Profile, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // UTF-8 BOM
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, errors.New("not an NPZ archive (PK\\x03\\x04) or a JSON object")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &raw); err != nil {
		return nil, fmt.Errorf("invalid JSON profile: %w", err)
	}
	p := &Profile{}
	for _, v := range p.vectors() {
		if msg, ok := raw[v.name]; ok {
			vec, err := jsonVector(msg)
			if err != nil {
				return nil, arrayErr(v.name, "want an array of numbers: %v", err)
			}
			*v.dst = vec
		}
	}
	if msg, ok := raw[arrDecodeITL]; ok {
		var rows []json.RawMessage
		if err := json.Unmarshal(msg, &rows); err != nil {
			return nil, arrayErr(arrDecodeITL, "want an array of arrays of numbers: %v", err)
		}
		if rows != nil {
			p.DecodeITL = make([][]float64, len(rows))
		}
		for i, r := range rows {
			vec, err := jsonVector(r)
			if err == nil && vec == nil {
				err = errors.New("null")
			}
			if err != nil {
				return nil, arrayErr(arrDecodeITL, "row %d: want an array of numbers: %v", i, err)
			}
			p.DecodeITL[i] = vec
		}
	}
	return p, nil
}

// jsonVector decodes a JSON array of numbers; null gives nil, and a null
// element is an error (encoding/json would silently turn it into 0).
func jsonVector(msg json.RawMessage) ([]float64, error) {
	var ptrs []*float64
	if err := json.Unmarshal(msg, &ptrs); err != nil {
		return nil, err
	}
	if ptrs == nil {
		return nil, nil
	}
	vec := make([]float64, len(ptrs))
	for i, x := range ptrs {
		if x == nil {
			return nil, fmt.Errorf("element %d is null", i)
		}
		vec[i] = *x
	}
	return vec, nil
}

// maxNPYMemberBytes bounds one decompressed .npy member (profiles are tiny).
const maxNPYMemberBytes = 64 << 20

// parseNPZProfile reads the five "<name>.npy" members of an NPZ archive.
// Other members are ignored; a missing member leaves its array nil.
func parseNPZProfile(data []byte) (*Profile, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("invalid NPZ archive: %w", err)
	}
	members := map[string]*zip.File{}
	for _, f := range zr.File {
		name, ok := strings.CutSuffix(f.Name, ".npy")
		if !ok {
			continue
		}
		if _, dup := members[name]; !dup {
			members[name] = f
		}
	}
	read := func(name string, dims int) (*npyArray, error) {
		f, ok := members[name]
		if !ok {
			return nil, nil
		}
		rc, err := f.Open()
		if err != nil {
			return nil, arrayErr(name, "open %s: %v", f.Name, err)
		}
		defer rc.Close()
		b, err := io.ReadAll(io.LimitReader(rc, maxNPYMemberBytes+1))
		if err != nil {
			return nil, arrayErr(name, "read %s: %v", f.Name, err)
		}
		if len(b) > maxNPYMemberBytes {
			return nil, arrayErr(name, "%s is larger than %d bytes", f.Name, maxNPYMemberBytes)
		}
		a, err := parseNPY(b)
		if err != nil {
			return nil, arrayErr(name, "%s: %v", f.Name, err)
		}
		if len(a.shape) != dims {
			return nil, arrayErr(name, "%s: want a %d-D array, got shape %v", f.Name, dims, a.shape)
		}
		return a, nil
	}
	p := &Profile{}
	for _, v := range p.vectors() {
		a, err := read(v.name, 1)
		if err != nil {
			return nil, err
		}
		if a != nil {
			*v.dst = a.data
		}
	}
	a, err := read(arrDecodeITL, 2)
	if err != nil {
		return nil, err
	}
	if a != nil {
		rows, cols := a.shape[0], a.shape[1]
		p.DecodeITL = make([][]float64, rows)
		for i := range rows {
			p.DecodeITL[i] = a.data[i*cols : (i+1)*cols : (i+1)*cols]
		}
	}
	return p, nil
}

// npyArray is a decoded .npy array: float64 values in C (row-major) order.
type npyArray struct {
	shape []int
	data  []float64
}

// npyMagic starts every .npy file.
const npyMagic = "\x93NUMPY"

// parseNPY decodes a .npy file (format versions 1.0, 2.0 and 3.0) holding a
// little-endian <f8, <f4, <i8 or <i4 array, converting values to float64.
// Fortran-order arrays are transposed to C order.
func parseNPY(b []byte) (*npyArray, error) {
	if len(b) < 10 || string(b[:6]) != npyMagic {
		return nil, errors.New("not a .npy file (bad magic)")
	}
	major, minor := b[6], b[7]
	var hlen, off int
	switch major {
	case 1:
		hlen, off = int(binary.LittleEndian.Uint16(b[8:10])), 10
	case 2, 3:
		if len(b) < 12 {
			return nil, errors.New("truncated .npy preamble")
		}
		hlen, off = int(binary.LittleEndian.Uint32(b[8:12])), 12
	default:
		return nil, fmt.Errorf("unsupported .npy format version %d.%d", major, minor)
	}
	if hlen > len(b)-off {
		return nil, fmt.Errorf("truncated .npy header (%d bytes declared, %d present)", hlen, len(b)-off)
	}
	descr, fortran, shape, err := parseNPYHeader(string(b[off : off+hlen]))
	if err != nil {
		return nil, fmt.Errorf("bad .npy header: %w", err)
	}
	var size int
	var conv func([]byte) float64
	switch descr {
	case "<f8":
		size, conv = 8, func(p []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(p)) }
	case "<f4":
		size, conv = 4, func(p []byte) float64 { return float64(math.Float32frombits(binary.LittleEndian.Uint32(p))) }
	case "<i8":
		size, conv = 8, func(p []byte) float64 { return float64(int64(binary.LittleEndian.Uint64(p))) }
	case "<i4":
		size, conv = 4, func(p []byte) float64 { return float64(int32(binary.LittleEndian.Uint32(p))) }
	default:
		return nil, fmt.Errorf("unsupported dtype descr %q (want <f8, <f4, <i8 or <i4)", descr)
	}
	body := b[off+hlen:]
	count := 1
	for _, d := range shape {
		if d != 0 && count > len(body)/d {
			return nil, fmt.Errorf("shape %v needs more data than the %d bytes present", shape, len(body))
		}
		count *= d
	}
	if len(body) < count*size {
		return nil, fmt.Errorf("truncated data: shape %v of %s needs %d bytes, %d present", shape, descr, count*size, len(body))
	}
	data := make([]float64, count)
	for i := range data {
		data[i] = conv(body[i*size : (i+1)*size])
	}
	if fortran && len(shape) == 2 {
		// Column-major: element (i, j) is stored at j*rows + i.
		rows, cols := shape[0], shape[1]
		c := make([]float64, count)
		for i := range rows {
			for j := range cols {
				c[i*cols+j] = data[j*rows+i]
			}
		}
		data = c
	} else if fortran && len(shape) > 2 {
		return nil, fmt.Errorf("fortran_order arrays of %d dimensions are not supported", len(shape))
	}
	return &npyArray{shape: shape, data: data}, nil
}

// parseNPYHeader extracts descr, fortran_order and shape from a .npy header,
// a Python dict literal such as
// {'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }.
func parseNPYHeader(h string) (descr string, fortran bool, shape []int, err error) {
	p := &pyLiteral{s: h}
	v, err := p.value()
	if err != nil {
		return "", false, nil, err
	}
	p.skipSpace()
	if p.i != len(p.s) {
		return "", false, nil, fmt.Errorf("unexpected %q after the dict", p.s[p.i:])
	}
	d, ok := v.(map[string]any)
	if !ok {
		return "", false, nil, errors.New("header is not a dict")
	}
	if descr, ok = d["descr"].(string); !ok {
		return "", false, nil, errors.New("'descr' missing or not a string")
	}
	if fortran, ok = d["fortran_order"].(bool); !ok {
		return "", false, nil, errors.New("'fortran_order' missing or not a bool")
	}
	dims, ok := d["shape"].([]any)
	if !ok {
		return "", false, nil, errors.New("'shape' missing or not a tuple")
	}
	shape = make([]int, len(dims))
	for i, x := range dims {
		n, ok := x.(int)
		if !ok || n < 0 {
			return "", false, nil, fmt.Errorf("'shape' element %d is not a non-negative integer", i)
		}
		shape[i] = n
	}
	return descr, fortran, shape, nil
}

// pyLiteral parses the subset of Python literals .npy headers use: dicts,
// tuples, lists, quoted strings, integers (with an optional Python 2 "L"
// suffix), True, False and None.
type pyLiteral struct {
	s string
	i int
}

func (p *pyLiteral) skipSpace() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *pyLiteral) value() (any, error) {
	p.skipSpace()
	if p.i >= len(p.s) {
		return nil, errors.New("unexpected end of header")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		p.i++
		d := map[string]any{}
		for {
			p.skipSpace()
			if p.i < len(p.s) && p.s[p.i] == '}' {
				p.i++
				return d, nil
			}
			k, err := p.value()
			if err != nil {
				return nil, err
			}
			key, ok := k.(string)
			if !ok {
				return nil, errors.New("dict key is not a string")
			}
			p.skipSpace()
			if p.i >= len(p.s) || p.s[p.i] != ':' {
				return nil, fmt.Errorf("missing ':' after key %q", key)
			}
			p.i++
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			d[key] = v
			if err := p.separator('}'); err != nil {
				return nil, err
			}
		}
	case c == '(' || c == '[':
		end := byte(')')
		if c == '[' {
			end = ']'
		}
		p.i++
		seq := []any{}
		for {
			p.skipSpace()
			if p.i < len(p.s) && p.s[p.i] == end {
				p.i++
				return seq, nil
			}
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			seq = append(seq, v)
			if err := p.separator(end); err != nil {
				return nil, err
			}
		}
	case c == '\'' || c == '"':
		p.i++
		var sb strings.Builder
		for p.i < len(p.s) {
			ch := p.s[p.i]
			p.i++
			switch {
			case ch == c:
				return sb.String(), nil
			case ch == '\\' && p.i < len(p.s):
				sb.WriteByte(p.s[p.i])
				p.i++
			default:
				sb.WriteByte(ch)
			}
		}
		return nil, errors.New("unterminated string")
	case c == '-' || c == '+' || (c >= '0' && c <= '9'):
		start := p.i
		p.i++
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
		}
		n, err := strconv.Atoi(p.s[start:p.i])
		if err != nil {
			return nil, fmt.Errorf("bad integer %q", p.s[start:p.i])
		}
		if p.i < len(p.s) && (p.s[p.i] == 'L' || p.s[p.i] == 'l') {
			p.i++
		}
		return n, nil
	default:
		for _, kw := range []struct {
			word string
			v    any
		}{{"True", true}, {"False", false}, {"None", nil}} {
			if strings.HasPrefix(p.s[p.i:], kw.word) {
				p.i += len(kw.word)
				return kw.v, nil
			}
		}
		return nil, fmt.Errorf("unexpected %q", p.s[p.i:])
	}
}

// separator consumes the ',' after a container element, or accepts the
// container's closing byte (left for the caller's loop to consume).
func (p *pyLiteral) separator(end byte) error {
	p.skipSpace()
	if p.i < len(p.s) && p.s[p.i] == ',' {
		p.i++
		return nil
	}
	if p.i < len(p.s) && p.s[p.i] == end {
		return nil
	}
	return fmt.Errorf("expected ',' or %q", end)
}

// profileVector names one 1-D array of a Profile and where it is stored.
type profileVector struct {
	name string
	dst  *[]float64
}

// vectors lists the profile's four 1-D arrays in file order, so both file
// formats fill them the same way.
func (p *Profile) vectors() []profileVector {
	return []profileVector{
		{arrPrefillISL, &p.PrefillISL},
		{arrPrefillTTFTMs, &p.PrefillTTFTMs},
		{arrDecodeActiveKVTokens, &p.DecodeActiveKVTokens},
		{arrDecodeContextLength, &p.DecodeContextLength},
	}
}
