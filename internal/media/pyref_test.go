package media

import (
	"bytes"
	"os"
	"os/exec"
	"testing"

	"github.com/mocker-server/mocker-server/internal/testutil"
)

// TestHashVectorsRegenerate reruns testdata/hashref.py, the independent
// Python implementation, and checks that it still produces the committed
// vectors TestHashVectors compares against.
func TestHashVectorsRegenerate(t *testing.T) {
	py := testutil.DebianPython(t, "numpy")
	if _, err := exec.LookPath("b3sum"); err != nil {
		testutil.SkipOrFail(t, "b3sum missing (scripts/ensure-deps.sh --python installs it)")
	}
	cmd := exec.Command(py, "hashref.py")
	cmd.Dir = "testdata"
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hashref.py: %v", err)
	}
	want, err := os.ReadFile("testdata/hash_vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, want) {
		t.Fatal("testdata/hashref.py no longer produces testdata/hash_vectors.json")
	}
}
