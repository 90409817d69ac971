package profile

import (
	"archive/zip"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// FuzzLoadProfile feeds arbitrary bytes to the loader: NPZ archives (the
// numpy-made fixtures and hand-built ones seed the corpus) and JSON. Every
// input must give either a valid profile or an error — never a panic, a
// hang or a profile that fails validation — and the same answer twice.
func FuzzLoadProfile(f *testing.F) {
	fixtures, err := filepath.Glob(filepath.Join("testdata", "*.np[yz]"))
	if err != nil {
		f.Fatal(err)
	}
	jsons, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, path := range append(fixtures, jsons...) {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, method := range []uint16{zip.Store, zip.Deflate} {
		path := writeNPZ(f, f.TempDir(), "hand.npz", method, profileMembers("<i4", "<f4", 2, true))
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(interpTestProfileJSON))
	f.Add([]byte(`{"prefill_isl": [1, 2], "decode_itl": [[1e308, -1e308], null]}`))
	f.Add([]byte("PK\x05\x06" + string(make([]byte, 18))))

	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err != nil {
			if p != nil {
				t.Fatalf("profile %+v returned with error %v", p, err)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("Parse accepted a profile that fails validation: %v", err)
		}
		again, err := Parse(data)
		if err != nil || !reflect.DeepEqual(p, again) {
			t.Fatalf("second parse differs: %+v, %v", again, err)
		}
		// Whatever was accepted must drive the model without panicking,
		// inside and outside its axes.
		m, err := engine.NewInterpolatedTiming(p)
		if err != nil {
			t.Fatalf("NewInterpolatedTiming rejected a parsed profile: %v", err)
		}
		for _, n := range []int{0, 1, 1 << 20, -5} {
			_ = m.PrefillMs(n)
			_ = m.DecodeMs(n, n, n)
		}
		// The accepted profile survives a trip through the JSON format.
		js, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("marshal accepted profile: %v", err)
		}
		back, err := Parse(js)
		if err != nil || !reflect.DeepEqual(p, back) {
			t.Fatalf("JSON round trip: %+v, %v", back, err)
		}
	})
}
