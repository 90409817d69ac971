package mmproc

import (
	"bytes"
	"os"
	"os/exec"
	"testing"

	"github.com/mocker-server/mocker-server/internal/testutil"
)

// TestCasesRegenerate reruns testdata/ref.py (the processors' rules in
// Python) and checks that it still produces the committed cases.json.
func TestCasesRegenerate(t *testing.T) {
	py := testutil.DebianPython(t, "json")
	cmd := exec.Command(py, "ref.py")
	cmd.Dir = "testdata"
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ref.py: %v", err)
	}
	want, err := os.ReadFile("testdata/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, want) {
		t.Fatal("testdata/ref.py no longer produces testdata/cases.json")
	}
}
