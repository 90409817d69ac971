package replay

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// FuzzTraceLine feeds arbitrary trace text to the Mooncake reader: it never
// panics and never allocates past its per-line bound; every request it
// returns has the prompt its line asked for, within the bound, and every
// refusal is a *LineError.
func FuzzTraceLine(f *testing.F) {
	for _, seed := range []string{
		`{"timestamp": 10, "input_length": 1000, "output_length": 5, "hash_ids": [1, 2]}`,
		`{"timestamp": 0, "input_length": 1, "output_length": 1}`,
		`{"timestamp": 20, "input_length": 1000000000000, "output_length": 5}`,
		`{"timestamp": 20, "input_length": 4611686018427387904, "output_length": 5, "hash_ids": [1]}`,
		`{"timestamp": 20, "input_length": 10, "output_length": 1000000000000}`,
		`{"timestamp": 1e308, "input_length": 9223372036854775807, "output_length": 9223372036854775807}`,
		`{"timestamp": -1, "input_length": -5, "output_length": 0, "hash_ids": [-1]}`,
		"{\"timestamp\": 1, \"input_length\": 3, \"output_length\": 1}\n{\"timestamp\": 0}",
		`[1, 2, 3]`, `null`, `{`, "",
	} {
		f.Add(seed, 16)
	}
	f.Fuzz(func(t *testing.T, text string, blockSize int) {
		const maxTokens = 1 << 16 // small, so that the fuzzer can reach it
		src, err := NewMooncakeSource(strings.NewReader(text), "fuzz", TraceOptions{BlockSize: blockSize,
			MaxLineTokens: maxTokens})
		if err != nil {
			return // a bad block size is refused up front
		}
		for range 64 {
			r, err := src.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				var le *LineError
				if !errors.As(err, &le) {
					t.Fatalf("error %v is not a *LineError", err)
				}
				return
			}
			if len(r.Prompt) < 1 || len(r.Prompt) > maxTokens || r.OutputTokens < 1 || r.OutputTokens > maxTokens {
				t.Fatalf("request with %d prompt tokens and %d output tokens passed the bound %d", len(r.Prompt), r.OutputTokens, maxTokens)
			}
		}
	})
}
