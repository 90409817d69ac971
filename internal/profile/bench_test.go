package profile

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkParse measures loading a profile held in memory (startup cost,
// paid once per process).
func BenchmarkParse(b *testing.B) {
	for _, file := range []string{"f8_savez.npz", "f8_savez_compressed.npz", "fortran_f4_compressed.npz", "profile.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(file, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
