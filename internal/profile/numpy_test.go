package profile

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// The fixtures below were written by numpy itself (testdata/make_fixtures.py,
// run with Debian's python3-numpy): np.savez, np.savez_compressed and
// np.lib.format.write_array, not this package's idea of the format.

// numpyProfile is the reference profile of make_fixtures.py.
func numpyProfile() *engine.Profile {
	return &engine.Profile{
		PrefillISL:           []float64{128, 512, 2048, 8192},
		PrefillTTFTMs:        []float64{16.9, 24.3, 52.1, 180.7},
		DecodeActiveKVTokens: []float64{1024, 65536, 1048576},
		DecodeContextLength:  []float64{128, 4096},
		DecodeITL:            [][]float64{{6.1, 7.4}, {8.2, 9.5}, {21.3, 29.8}},
	}
}

// numpyIntProfile is the whole-number variant the integer fixtures hold.
func numpyIntProfile() *engine.Profile {
	p := numpyProfile()
	p.PrefillTTFTMs = []float64{17, 24, 52, 181}
	p.DecodeITL = [][]float64{{6, 7}, {8, 10}, {21, 30}}
	return p
}

// withCached sets the optional cached-context coefficient.
func withCached(p *engine.Profile, c float64) *engine.Profile {
	p.PrefillCachedMsPerMTok = c
	return p
}

// asFloat32 rounds the measured values (not the axes, which are exact in
// float32) the way numpy's float32 stores them.
func asFloat32(p *engine.Profile, axesToo bool) *engine.Profile {
	round := func(v []float64) {
		for i := range v {
			v[i] = float64(float32(v[i]))
		}
	}
	round(p.PrefillTTFTMs)
	for _, row := range p.DecodeITL {
		round(row)
	}
	if axesToo {
		round(p.PrefillISL)
		round(p.DecodeActiveKVTokens)
		round(p.DecodeContextLength)
	}
	return p
}

func TestLoadNumpyFixtures(t *testing.T) {
	tests := []struct {
		file      string
		want      *engine.Profile // nil: an error is expected
		wantArray string          // the array the error names ("" = none)
		wantMsg   string
	}{
		{file: "f8_savez.npz", want: numpyProfile()},
		{file: "f8_savez_compressed.npz", want: numpyProfile()},
		{file: "f4_savez.npz", want: asFloat32(numpyProfile(), true)},
		{file: "i8_axes_f4_values_compressed.npz", want: asFloat32(numpyProfile(), false)},
		{file: "i8_savez.npz", want: numpyIntProfile()},
		{file: "i4_savez_compressed.npz", want: numpyIntProfile()},
		{file: "fortran_decode_itl.npz", want: numpyProfile()},
		{file: "fortran_f4_compressed.npz", want: asFloat32(numpyProfile(), true)},
		{file: "npy_v2.npz", want: numpyProfile()},
		{file: "npy_v3.npz", want: numpyProfile()},
		{file: "python_json.json", want: numpyProfile()},
		{file: "cached_scalar.npz", want: withCached(numpyProfile(), 0.75)},
		{file: "cached_vector_compressed.npz", want: withCached(numpyProfile(), 0.75)},
		{file: "cached_negative.npz", wantArray: "prefill_cached_ms_per_mtok", wantMsg: "is -0.5 (must be finite and >= 0)"},
		{file: "cached_two_values.npz", wantArray: "prefill_cached_ms_per_mtok", wantMsg: "want a scalar, got shape [2]"},

		{file: "big_endian.npz", wantArray: "prefill_isl", wantMsg: `unsupported dtype descr ">f8": big-endian`},
		{file: "missing_decode_itl.npz", wantArray: "decode_itl", wantMsg: "missing"},
		{file: "decode_itl_transposed.npz", wantArray: "decode_itl", wantMsg: "has 2 rows, want 3"},
		{file: "decode_itl_1d.npz", wantArray: "decode_itl", wantMsg: "want a 2-D array, got shape [6]"},
		{file: "prefill_isl_2d.npz", wantArray: "prefill_isl", wantMsg: "want a 1-D array, got shape [1 4]"},
		{file: "nan_prefill_ttft_ms.npz", wantArray: "prefill_ttft_ms", wantMsg: "element 2 is NaN (must be finite)"},
		{file: "inf_decode_itl.npz", wantArray: "decode_itl", wantMsg: "row 1 element 1 is +Inf (must be finite)"},
		{file: "non_increasing_axis.npz", wantArray: "decode_active_kv_tokens", wantMsg: "not strictly increasing"},
		{file: "object_prefill_ttft_ms.npz", wantArray: "prefill_ttft_ms", wantMsg: `descr "|O": an object array holds pickled Python objects, which are never unpickled`},
		{file: "float16_decode_itl.npz", wantArray: "decode_itl", wantMsg: `unsupported dtype descr "<f2"`},
		{file: "python_json_nan.json", wantMsg: "invalid JSON profile"},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join("testdata", tc.file)
			got, err := Load(path)
			if tc.want != nil {
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("profile =\n%+v\nwant\n%+v", got, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("loaded %+v, want an error", got)
			}
			if got != nil {
				t.Errorf("profile %+v returned with error %v", got, err)
			}
			for _, s := range []string{path, tc.wantArray, tc.wantMsg} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
			var ae *engine.ProfileArrayError
			if isArrayErr := errors.As(err, &ae); isArrayErr != (tc.wantArray != "") || (isArrayErr && ae.Array != tc.wantArray) {
				t.Errorf("error %q: ProfileArrayError %+v, want one naming %q", err, ae, tc.wantArray)
			}
		})
	}
}
