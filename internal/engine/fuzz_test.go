package engine

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoadProfile feeds arbitrary bytes to LoadProfile (NPZ or JSON by
// content). It must never panic; whatever it accepts must validate.
func FuzzLoadProfile(f *testing.F) {
	seedDir := f.TempDir()
	for _, path := range []string{
		"testdata/profile.json",
		writeNPZ(&testing.T{}, seedDir, "a.npz", 0, profileMembers("<i8", "<f8", 1, false)),
		writeNPZ(&testing.T{}, seedDir, "b.npz", 8, profileMembers("<f4", ">f8", 2, true)),
	} {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"prefill_isl":[1,2],"prefill_ttft_ms":[1,NaN]}`))
	f.Add([]byte("PK\x05\x06" + string(make([]byte, 18))))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "p")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		p, err := LoadProfile(path)
		if err != nil {
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("accepted profile does not validate: %v", err)
		}
	})
}
