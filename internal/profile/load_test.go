package profile

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/testutil"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// handCheckedProfile is a small profile whose interpolation can be checked
// by hand: prefill slope 0.2 ms/token (10 ms at 100, 30 at 200, 70 at 400);
// decode grid rows kv 1000/2000/4000, columns ctx 100/300. It is decoded
// from interpTestProfileJSON with encoding/json straight into the struct,
// a reference independent of this package's JSON reader.
func handCheckedProfile() *engine.Profile {
	p := &engine.Profile{}
	if err := json.Unmarshal([]byte(interpTestProfileJSON), p); err != nil {
		panic(err)
	}
	return p
}

// npyMember describes one .npy member of a test NPZ archive. Values are
// given in C (row-major) order; the encoder writes them column-major when
// fortran is set.
type npyMember struct {
	name    string // member name inside the zip, e.g. "prefill_isl.npy"
	descr   string // "<f8", "<f4", "<i8", "<i4" (or an unsupported one)
	shape   []int
	fortran bool
	major   byte // .npy format version major: 1, 2 or 3
	values  []float64
	raw     []byte // when set, written as the member verbatim
}

// encodeNPY writes a .npy file by hand (no numpy here).
func encodeNPY(t testing.TB, m npyMember) []byte {
	t.Helper()
	if m.raw != nil {
		return m.raw
	}
	dims := make([]string, len(m.shape))
	for i, d := range m.shape {
		dims[i] = fmt.Sprint(d)
	}
	shape := "(" + strings.Join(dims, ", ") + ")"
	if len(m.shape) == 1 {
		shape = "(" + dims[0] + ",)"
	}
	fortran := "False"
	if m.fortran {
		fortran = "True"
	}
	header := fmt.Sprintf("{'descr': '%s', 'fortran_order': %s, 'shape': %s, }", m.descr, fortran, shape)
	major := m.major
	if major == 0 {
		major = 1
	}
	var b bytes.Buffer
	vals := m.values
	if m.fortran && len(m.shape) == 2 {
		rows, cols := m.shape[0], m.shape[1]
		vals = make([]float64, len(m.values))
		for i := range rows {
			for j := range cols {
				vals[j*rows+i] = m.values[i*cols+j]
			}
		}
	}
	for _, v := range vals {
		var err error
		switch m.descr {
		case "<f8":
			err = binary.Write(&b, binary.LittleEndian, v)
		case "<f4":
			err = binary.Write(&b, binary.LittleEndian, float32(v))
		case "<i8":
			err = binary.Write(&b, binary.LittleEndian, int64(v))
		case "<i4":
			err = binary.Write(&b, binary.LittleEndian, int32(v))
		default: // unsupported descr in error tests: write big-endian f8
			err = binary.Write(&b, binary.BigEndian, v)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return rawNPY(major, header, b.Bytes())
}

// writeNPZ writes the members into a zip archive at dir/name with the given
// compression method and returns its path.
func writeNPZ(t testing.TB, dir, name string, method uint16, members []npyMember) string {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, m := range members {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: m.name, Method: method})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(encodeNPY(t, m)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// profileMembers returns handCheckedProfile as five .npy members with the
// given dtypes (axes, values) and format version.
func profileMembers(axisDescr, valueDescr string, major byte, fortranITL bool) []npyMember {
	p := handCheckedProfile()
	var itl []float64
	for _, row := range p.DecodeITL {
		itl = append(itl, row...)
	}
	return []npyMember{
		{name: "prefill_isl.npy", descr: axisDescr, shape: []int{3}, major: major, values: p.PrefillISL},
		{name: "prefill_ttft_ms.npy", descr: valueDescr, shape: []int{3}, major: major, values: p.PrefillTTFTMs},
		{name: "decode_active_kv_tokens.npy", descr: axisDescr, shape: []int{3}, major: major, values: p.DecodeActiveKVTokens},
		{name: "decode_context_length.npy", descr: axisDescr, shape: []int{2}, major: major, values: p.DecodeContextLength},
		{name: "decode_itl.npy", descr: valueDescr, shape: []int{3, 2}, major: major, fortran: fortranITL, values: itl},
	}
}

// replaceMember returns members with the one named name replaced by m (or
// removed when m is nil).
func replaceMember(members []npyMember, name string, m *npyMember) []npyMember {
	var out []npyMember
	for _, x := range members {
		if x.name == name {
			if m != nil {
				out = append(out, *m)
			}
			continue
		}
		out = append(out, x)
	}
	return out
}

func TestLoadNPZ(t *testing.T) {
	withExtras := append(profileMembers("<f8", "<f8", 1, false),
		npyMember{name: "notes.txt", raw: []byte("measured on an H100")},
		npyMember{name: "batch_size.npy", raw: []byte("not even a npy file")},
		npyMember{name: "sub/prefill_isl.npy.bak", raw: []byte("x")},
	)
	tests := []struct {
		name    string
		method  uint16
		members []npyMember
	}{
		{"f8 v1.0 deflated", zip.Deflate, profileMembers("<f8", "<f8", 1, false)},
		{"f8 v1.0 stored", zip.Store, profileMembers("<f8", "<f8", 1, false)},
		{"f4 v2.0 stored", zip.Store, profileMembers("<f4", "<f4", 2, false)},
		{"i8 axes with f8 values v3.0 deflated", zip.Deflate, profileMembers("<i8", "<f8", 3, false)},
		{"i4 everywhere v2.0 deflated", zip.Deflate, profileMembers("<i4", "<i4", 2, false)},
		{"fortran-order decode_itl is transposed", zip.Deflate, profileMembers("<f8", "<f8", 1, true)},
		{"fortran-order f4 decode_itl v2.0 stored", zip.Store, profileMembers("<i4", "<f4", 2, true)},
		{"extra members are ignored", zip.Deflate, withExtras},
		{"member order does not matter", zip.Deflate, func() []npyMember {
			m := profileMembers("<f8", "<f8", 1, false)
			for i, j := 0, len(m)-1; i < j; i, j = i+1, j-1 {
				m[i], m[j] = m[j], m[i]
			}
			return m
		}()},
		{"fortran_order True on a 1-D array is plain order", zip.Store, func() []npyMember {
			m := profileMembers("<f8", "<f8", 1, false)
			m[0].fortran = true
			return m
		}()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeNPZ(t, t.TempDir(), "profile.npz", tc.method, tc.members)
			got, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if want := handCheckedProfile(); !reflect.DeepEqual(got, want) {
				t.Errorf("profile = %+v, want %+v", got, want)
			}
		})
	}
}

func TestLoadNPZErrors(t *testing.T) {
	good := profileMembers("<f8", "<f8", 1, false)
	truncated := encodeNPY(t, npyMember{descr: "<f8", shape: []int{2}, values: []float64{100, 300}})
	truncated = truncated[:len(truncated)-3]
	badMagic := encodeNPY(t, npyMember{descr: "<f8", shape: []int{3}, values: []float64{10, 30, 70}})
	badMagic[1] = 'X'
	v4 := encodeNPY(t, npyMember{descr: "<f8", shape: []int{3}, major: 2, values: []float64{1000, 2000, 4000}})
	v4[6] = 4
	shortHeader := encodeNPY(t, npyMember{descr: "<f8", shape: []int{3}, values: []float64{100, 200, 400}})[:20]
	rawV1 := func(header string) []byte {
		b := []byte("\x93NUMPY\x01\x00")
		b = binary.LittleEndian.AppendUint16(b, uint16(len(header)))
		return append(b, header...)
	}
	badHeader := rawV1("{'descr': <f8 }\n")
	noShape := rawV1("{'descr': '<f8', 'fortran_order': False}\n")

	tests := []struct {
		name    string
		members []npyMember
		array   string // the array the error must name
		wantMsg string
	}{
		{"missing member", replaceMember(good, "decode_itl.npy", nil), "decode_itl", "missing"},
		{"member without .npy suffix does not count", replaceMember(good, "prefill_isl.npy",
			&npyMember{name: "prefill_isl", descr: "<f8", shape: []int{3}, values: []float64{100, 200, 400}}), "prefill_isl", "missing"},
		{"big-endian dtype", replaceMember(good, "prefill_isl.npy",
			&npyMember{name: "prefill_isl.npy", descr: ">f8", shape: []int{3}, values: []float64{100, 200, 400}}), "prefill_isl", "descr"},
		{"float16 dtype", replaceMember(good, "prefill_ttft_ms.npy",
			&npyMember{name: "prefill_ttft_ms.npy", descr: "<f2", shape: []int{3}, values: []float64{1, 2, 3}}), "prefill_ttft_ms", "descr"},
		{"1-D decode_itl", replaceMember(good, "decode_itl.npy",
			&npyMember{name: "decode_itl.npy", descr: "<f8", shape: []int{6}, values: []float64{5, 7, 9, 11, 13, 19}}), "decode_itl", "2-D"},
		{"2-D axis", replaceMember(good, "decode_active_kv_tokens.npy",
			&npyMember{name: "decode_active_kv_tokens.npy", descr: "<f8", shape: []int{1, 3}, values: []float64{1000, 2000, 4000}}), "decode_active_kv_tokens", "1-D"},
		{"decode_itl columns do not match the context axis", replaceMember(good, "decode_itl.npy",
			&npyMember{name: "decode_itl.npy", descr: "<f8", shape: []int{2, 3}, values: []float64{5, 7, 9, 11, 13, 19}}), "decode_itl", "rows"},
		{"truncated data", replaceMember(good, "decode_context_length.npy",
			&npyMember{name: "decode_context_length.npy", raw: truncated}), "decode_context_length", "truncated"},
		{"bad magic", replaceMember(good, "prefill_ttft_ms.npy",
			&npyMember{name: "prefill_ttft_ms.npy", raw: badMagic}), "prefill_ttft_ms", "magic"},
		{"unsupported format version", replaceMember(good, "decode_active_kv_tokens.npy",
			&npyMember{name: "decode_active_kv_tokens.npy", raw: v4}), "decode_active_kv_tokens", "version 4.0"},
		{"header longer than the file", replaceMember(good, "prefill_isl.npy",
			&npyMember{name: "prefill_isl.npy", raw: shortHeader}), "prefill_isl", "truncated"},
		{"header that is not a literal", replaceMember(good, "prefill_isl.npy",
			&npyMember{name: "prefill_isl.npy", raw: badHeader}), "prefill_isl", "header"},
		{"header without shape", replaceMember(good, "prefill_isl.npy",
			&npyMember{name: "prefill_isl.npy", raw: noShape}), "prefill_isl", "shape"},
		{"NaN value", replaceMember(good, "prefill_ttft_ms.npy",
			&npyMember{name: "prefill_ttft_ms.npy", descr: "<f8", shape: []int{3}, values: []float64{10, math.NaN(), 70}}), "prefill_ttft_ms", "finite"},
		{"non-increasing integer axis", replaceMember(good, "prefill_isl.npy",
			&npyMember{name: "prefill_isl.npy", descr: "<i4", shape: []int{3}, values: []float64{100, 100, 400}}), "prefill_isl", "increasing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeNPZ(t, t.TempDir(), "profile.npz", zip.Deflate, tc.members)
			_, err := Load(path)
			if err == nil {
				t.Fatal("no error")
			}
			var ae *engine.ProfileArrayError
			if !errors.As(err, &ae) || ae.Array != tc.array {
				t.Errorf("error %q does not name array %q (ProfileArrayError: %+v)", err, tc.array, ae)
			}
			for _, s := range []string{tc.array, tc.wantMsg, path} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
}

func TestLoadCorruptZip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "profile.npz")
	if err := os.WriteFile(path, []byte("PK\x03\x04 this is not really a zip archive"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "NPZ") {
		t.Errorf("err = %v, want an NPZ error mentioning %s", err, path)
	}
}

func TestLoadFormatChosenByContent(t *testing.T) {
	dir := t.TempDir()
	npzNamedJSON := writeNPZ(t, dir, "profile.json", zip.Deflate, profileMembers("<f8", "<f8", 1, false))
	jsonNamedNPZ := filepath.Join(dir, "profile.npz")
	if err := os.WriteFile(jsonNamedNPZ, []byte(interpTestProfileJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{npzNamedJSON, jsonNamedNPZ} {
		got, err := Load(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if !reflect.DeepEqual(got, handCheckedProfile()) {
			t.Errorf("%s: profile = %+v", path, got)
		}
	}
}

// interpTestProfileJSON is handCheckedProfile in JSON form.
const interpTestProfileJSON = `{
  "prefill_isl": [100, 200, 400],
  "prefill_ttft_ms": [10, 30, 70],
  "decode_active_kv_tokens": [1000, 2000, 4000],
  "decode_context_length": [100, 300],
  "decode_itl": [[5, 7], [9, 11], [13, 19]]
}`

func TestLoadJSON(t *testing.T) {
	tests := []struct {
		name    string
		content string
		array   string // "" = success
		wantMsg string
	}{
		{"all five arrays", interpTestProfileJSON, "", ""},
		{"unknown keys are ignored", `{"gpu": "H100", "tp": 1,` + interpTestProfileJSON[1:], "", ""},
		{"leading BOM and whitespace", "\xef\xbb\xbf \n\t" + interpTestProfileJSON, "", ""},
		{"missing key", strings.Replace(interpTestProfileJSON, `"prefill_ttft_ms"`, `"prefill_ttft"`, 1), "prefill_ttft_ms", "missing"},
		{"null array is missing", strings.Replace(interpTestProfileJSON, `[100, 300]`, `null`, 1), "decode_context_length", "missing"},
		{"null decode_itl is missing", strings.Replace(interpTestProfileJSON, `[[5, 7], [9, 11], [13, 19]]`, `null`, 1), "decode_itl", "missing"},
		{"null element", strings.Replace(interpTestProfileJSON, `[10, 30, 70]`, `[10, null, 70]`, 1), "prefill_ttft_ms", "null"},
		{"null decode_itl row", strings.Replace(interpTestProfileJSON, `[9, 11]`, `null`, 1), "decode_itl", "row 1"},
		{"null decode_itl element", strings.Replace(interpTestProfileJSON, `[9, 11]`, `[9, null]`, 1), "decode_itl", "row 1"},
		{"string instead of array", strings.Replace(interpTestProfileJSON, `[1000, 2000, 4000]`, `"1000,2000,4000"`, 1), "decode_active_kv_tokens", "array of numbers"},
		{"flat decode_itl", strings.Replace(interpTestProfileJSON, `[[5, 7], [9, 11], [13, 19]]`, `[5, 7, 9, 11, 13, 19]`, 1), "decode_itl", "array of numbers"},
		{"ragged decode_itl", strings.Replace(interpTestProfileJSON, `[9, 11]`, `[9, 11, 12]`, 1), "decode_itl", "row 1 has 3 values"},
		{"one-point axis", strings.Replace(interpTestProfileJSON, `[100, 300]`, `[100]`, 1), "decode_context_length", "at least 2"},
		{"cached coefficient not a number", `{"prefill_cached_ms_per_mtok": [1],` + interpTestProfileJSON[1:], "prefill_cached_ms_per_mtok", "want a number"},
		{"cached coefficient null", `{"prefill_cached_ms_per_mtok": null,` + interpTestProfileJSON[1:], "prefill_cached_ms_per_mtok", "want a number"},
		{"cached coefficient negative", `{"prefill_cached_ms_per_mtok": -2,` + interpTestProfileJSON[1:], "prefill_cached_ms_per_mtok", "must be finite and >= 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "profile.json")
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := Load(path)
			if tc.array == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, handCheckedProfile()) {
					t.Errorf("profile = %+v", got)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			var ae *engine.ProfileArrayError
			if !errors.As(err, &ae) || ae.Array != tc.array {
				t.Errorf("error %q does not name array %q", err, tc.array)
			}
			for _, s := range []string{tc.array, tc.wantMsg, path} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
}

// TestLoadJSONCachedCoefficient reads the optional cached-context
// coefficient, which mocker-server calibrate writes as a number.
func TestLoadJSONCachedCoefficient(t *testing.T) {
	path := filepath.Join(t.TempDir(), "profile.json")
	if err := os.WriteFile(path, []byte(`{"prefill_cached_ms_per_mtok": 1.25,`+interpTestProfileJSON[1:]), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := handCheckedProfile()
	want.PrefillCachedMsPerMTok = 1.25
	if !reflect.DeepEqual(got, want) {
		t.Errorf("profile = %+v, want %+v", got, want)
	}
}

func TestLoadUnreadableOrGarbage(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string { return testutil.WriteFile(t, dir, name, content) }
	missing := filepath.Join(dir, "does-not-exist.npz")
	tests := []struct {
		name    string
		path    string
		wantMsg string
		is      error
	}{
		{"non-existent file", missing, "does-not-exist.npz", fs.ErrNotExist},
		{"a directory", dir, "is a directory", nil},
		{"an endless device", "/dev/zero", "larger than 67108864 bytes", nil},
		{"garbage text", write("garbage.bin", "hello, I am not a profile"), "not an NPZ archive", nil},
		{"binary garbage", write("garbage2.bin", "\x00\x01\x02\x03\xff"), "not an NPZ archive", nil},
		{"empty file", write("empty.json", ""), "not an NPZ archive", nil},
		{"JSON array instead of object", write("array.json", "[1, 2, 3]"), "not an NPZ archive", nil},
		{"truncated JSON", write("trunc.json", interpTestProfileJSON[:40]), "invalid JSON", nil},
		{"JSON with trailing data", write("trailing.json", interpTestProfileJSON+" {}"), "invalid JSON", nil},
		{"empty zip archive", write("empty.npz", "PK\x05\x06"+strings.Repeat("\x00", 18)), "prefill_isl", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(tc.path)
			if err == nil {
				t.Fatal("no error")
			}
			for _, s := range []string{tc.path, tc.wantMsg} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %q is not %v", err, tc.is)
			}
		})
	}
}
