package engine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEngineReadsTimeOnlyFromItsClock holds docs/ARCHITECTURE.md's claim
// that Clock is the engine's only source of time: no non-test file but
// clock.go (RealClock itself) calls time.Now, time.Since or time.Until.
// A wall-clock read elsewhere would make the live engine disagree with a
// Clock it was given, and the simulator with the live server.
func TestEngineReadsTimeOnlyFromItsClock(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	banned := map[string]bool{"Now": true, "Since": true, "Until": true}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "clock.go" {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		timeName := ""
		for _, imp := range f.Imports {
			if imp.Path.Value == `"time"` {
				timeName = "time"
				if imp.Name != nil {
					timeName = imp.Name.Name
				}
			}
		}
		if timeName == "" {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == timeName && banned[sel.Sel.Name] {
				t.Errorf("%s: time.%s: the engine takes time only from its Clock", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
	if checked < 10 {
		t.Fatalf("checked only %d files: is the test running in the package directory?", checked)
	}
}
