package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function (declaration or literal, from
// its first line to its closing brace) may be in internal/api and the
// packages under it: past it a function mixes phases that deserve names.
const maxFuncLines = 80

// TestFunctionLength fails for every non-test function of internal/api
// (and its subpackages) longer than maxFuncLines.
func TestFunctionLength(t *testing.T) {
	fset := token.NewFileSet()
	longest, where := 0, ""
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") ||
			strings.Contains(path, "testdata") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			var body *ast.BlockStmt
			name := "func literal"
			switch fn := n.(type) {
			case *ast.FuncDecl:
				body, name = fn.Body, fn.Name.Name
			case *ast.FuncLit:
				body = fn.Body
			}
			if body == nil {
				return true
			}
			start := fset.Position(n.Pos())
			lines := fset.Position(body.Rbrace).Line - start.Line + 1
			if lines > longest {
				longest, where = lines, start.String()+" "+name
			}
			if lines > maxFuncLines {
				t.Errorf("%s: %s is %d lines, more than %d", start, name, lines, maxFuncLines)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("longest function: %d lines (%s)", longest, where)
}
