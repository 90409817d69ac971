package testutil

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Golden compares got byte for byte with the golden file at path (usually
// under the package's testdata/). With update set (the package's -update
// flag) it writes got to path instead. A difference fails the test with
// the first differing line of each and a few lines around it, so a failure
// can be read without rerunning anything; the whole output is also
// written beside the golden file as path+".got" (ignored by git) for a
// full diff, and removed again when the test passes.
func Golden(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	gotPath := path + ".got"
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		_ = os.Remove(gotPath)
		return
	}
	want, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("golden file %s is missing; run the test with -update to write it", path)
	}
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(got, want) {
		_ = os.Remove(gotPath)
		return
	}
	_ = os.WriteFile(gotPath, got, 0o644)
	t.Errorf("output differs from golden file %s (%d bytes, want %d); whole output in %s "+
		"(diff -u %s %s), -update rewrites the golden file\n%s",
		path, len(got), len(want), gotPath, path, gotPath, FirstDifference(want, got, 3))
}

// FirstDifference describes where got first differs from want, line by
// line: the line number and up to context lines before and after the
// first differing line of each, marked "-" (want) and "+" (got).
func FirstDifference(want, got []byte, context int) string {
	wl := strings.SplitAfter(string(want), "\n")
	gl := strings.SplitAfter(string(got), "\n")
	i := 0
	for i < len(wl) && i < len(gl) && wl[i] == gl[i] {
		i++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "first difference at line %d:\n", i+1)
	for j := max(0, i-context); j < i; j++ {
		fmt.Fprintf(&b, "  %s", lineOf(wl[j]))
	}
	for j := i; j < min(len(wl), i+context+1); j++ {
		fmt.Fprintf(&b, "- %s", lineOf(wl[j]))
	}
	for j := i; j < min(len(gl), i+context+1); j++ {
		fmt.Fprintf(&b, "+ %s", lineOf(gl[j]))
	}
	return b.String()
}

// lineOf shows a line with its newline (or notes that it has none), long
// lines cut.
func lineOf(s string) string {
	body, hasNL := strings.CutSuffix(s, "\n")
	if len(body) > 300 {
		body = body[:300] + "…"
	}
	if !hasNL {
		return fmt.Sprintf("%q (no newline at end)\n", body)
	}
	return body + "\n"
}
