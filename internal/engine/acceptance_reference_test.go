package engine

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strconv"
	"testing"

	"github.com/mocker-server/mocker-server/internal/testutil"
)

// acceptanceReference is an independent transcription, in Python, of the
// acceptance model as docs/speculative-and-offload.md states it.
const acceptanceReference = `
import json, sys
M = (1 << 64) - 1
def mix(z):
    z = (z + 0x9e3779b97f4a7c15) & M
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M
    return z ^ (z >> 31)
def key(prompt, choice):
    h = 0xcbf29ce484222325
    for b in b"".join(t.to_bytes(4, "little") for t in prompt) + choice.to_bytes(8, "little"):
        h = ((h ^ b) * 0x100000001b3) & M
    return h
req = json.load(sys.stdin)
k = key(req["prompt"], req["choice"])
draws = [(mix(mix(mix(req["seed"] ^ k) ^ step) ^ pos) >> 11) * 2.0 ** -53
         for step in range(req["steps"]) for pos in range(req["positions"])]
print(json.dumps({"key": str(k), "draws": draws}))
`

// The acceptance draws equal those of the Python reference for many steps
// and positions, bit for bit.
func TestAcceptanceDrawsMatchThePythonReference(t *testing.T) {
	py := testutil.DebianPython(t, "json")
	prompt := seqTokens(70000, 37) // ids above 65535 exercise all 4 bytes
	const seed, choice, steps, positions = 1234567, 3, 64, 5
	in, _ := json.Marshal(map[string]any{"prompt": prompt, "choice": choice, "seed": seed, "steps": steps, "positions": positions})
	cmd := exec.Command(py, "-c", acceptanceReference)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	var ref struct {
		Key   string    `json:"key"`
		Draws []float64 `json:"draws"`
	}
	if err := json.Unmarshal(out, &ref); err != nil {
		t.Fatalf("python output %q: %v", out, err)
	}
	key := SequenceKey(prompt, choice)
	if ref.Key != strconv.FormatUint(key, 10) {
		t.Fatalf("SequenceKey = %d, Python %s", key, ref.Key)
	}
	for step := range steps {
		for pos := range positions {
			if got, want := AcceptanceDraw(seed, key, step, pos), ref.Draws[step*positions+pos]; got != want {
				t.Fatalf("draw(step %d, pos %d) = %v, Python %v", step, pos, got, want)
			}
		}
	}
}
