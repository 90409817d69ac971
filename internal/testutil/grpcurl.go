package testutil

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Grpcurl returns a grpcurl binary (an independent gRPC client:
// reflection, JSON in and out) built by scripts/grpcurl.sh, which pins its
// version and caches the build in .cache.
func Grpcurl(t testing.TB) string {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(RepoRoot(), "scripts", "grpcurl.sh"))
	cmd.Stderr = &stderr
	path, err := cmd.Output()
	if err != nil {
		t.Fatalf("building grpcurl: %v\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(path))
}
