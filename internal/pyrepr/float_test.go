package pyrepr

import (
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

func TestFloatKnownValues(t *testing.T) {
	for f, want := range map[float64]string{
		32: "32.0", 0.5: "0.5", 1.6: "1.6", 104.8576: "104.8576", 0: "0.0", 1.0 / 3: "0.3333333333333333",
		1e15: "1000000000000000.0", 1e16: "1e+16", 1.5e20: "1.5e+20", 0.0001: "0.0001", 1e-05: "1e-05",
		1.2345e-7: "1.2345e-07", 123456789012345680: "1.2345678901234568e+17", -2.5: "-2.5",
		math.Copysign(0, -1): "-0.0", math.Inf(1): "inf", math.Inf(-1): "-inf", math.NaN(): "nan",
		5e-324: "5e-324", math.MaxFloat64: "1.7976931348623157e+308",
	} {
		if got := Float(f); got != want {
			t.Errorf("Float(%v) = %q, want %q", f, got, want)
		}
	}
}

// TestFloatMatchesPython compares against Python's repr() for floats of
// every magnitude (Debian's python3; under CI=true it must be there).
func TestFloatMatchesPython(t *testing.T) {
	python, err := exec.LookPath("/usr/bin/python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 not found")
		}
		t.Skip("python3 not found")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var inputs []string
	var values []float64
	for range 3000 {
		f := math.Float64frombits(rng.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		if rng.IntN(2) == 0 { // also everyday magnitudes
			f = (rng.Float64() - 0.5) * math.Pow(10, float64(rng.IntN(40)-20))
		}
		values = append(values, f)
		inputs = append(inputs, strconv.FormatUint(math.Float64bits(f), 10))
	}
	cmd := exec.Command(python, "-c", `import struct, sys
for line in sys.stdin:
    print(repr(struct.unpack("<d", struct.pack("<Q", int(line)))[0]))`)
	cmd.Stdin = strings.NewReader(strings.Join(inputs, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	want := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(want) != len(values) {
		t.Fatalf("python printed %d lines for %d floats", len(want), len(values))
	}
	for i, f := range values {
		if got := Float(f); got != want[i] {
			t.Errorf("Float(%b) = %q, Python %q", f, got, want[i])
		}
	}
}
