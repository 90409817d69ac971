package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteFile writes content to dir/name and returns the path; dir is
// usually t.TempDir().
func WriteFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
