package archtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/testutil"
)

const module = "github.com/mocker-server/mocker-server"

// importColumn is the header of the package table's column that lists a
// package's allowed internal imports.
const importColumn = "May import (internal)"

// TestArchitectureImportTable compares the package table of
// docs/ARCHITECTURE.md with the import graph: every package `go list ./...`
// reports has a row, every row is a package, and each row's "May import
// (internal)" cell lists exactly the module's packages that the package's
// non-test files import.
func TestArchitectureImportTable(t *testing.T) {
	root := testutil.RepoRoot()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	table, err := parseImportTable(doc)
	if err != nil {
		t.Fatalf("docs/ARCHITECTURE.md: %v", err)
	}
	actual := goListImports(t, root)
	if problems := compareImports(table, actual); len(problems) > 0 {
		t.Errorf("docs/ARCHITECTURE.md's package table does not match `go list ./...`; "+
			"update the table (column %q) or the imports:\n  %s",
			importColumn, strings.Join(problems, "\n  "))
	}
}

// goListImports returns, for every package of the module, the module's
// packages its non-test files import; paths are relative to the module
// ("internal/api", "cmd/mocker-server").
func goListImports(t *testing.T, root string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	graph := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		var internal []string
		for _, imp := range p.Imports {
			if rel, ok := strings.CutPrefix(imp, module+"/"); ok {
				internal = append(internal, rel)
			}
		}
		slices.Sort(internal)
		graph[strings.TrimPrefix(p.ImportPath, module+"/")] = internal
	}
	return graph
}

var (
	backticked    = regexp.MustCompile("`([^`]+)`")
	parenthetical = regexp.MustCompile(`\([^()]*\)`)
)

// parseImportTable reads the Markdown table whose header has a column
// named importColumn. The first column names the package (`internal/api`,
// `cmd/mocker-server`, `internal/api/openai`); the import column lists the
// allowed imports as backticked paths below internal/ (`config`,
// `api/openai`), or "—" for none. Text in parentheses is commentary
// ("`engine` (for `Profile`)") and is skipped.
func parseImportTable(doc []byte) (map[string][]string, error) {
	lines := strings.Split(string(doc), "\n")
	col := -1
	start := 0
	for i, line := range lines {
		cells := splitRow(line)
		if j := slices.Index(cells, importColumn); j >= 0 {
			col, start = j, i+2 // skip the |---| line
			break
		}
	}
	if col < 0 {
		return nil, fmt.Errorf("no table with a column %q", importColumn)
	}
	table := map[string][]string{}
	for i := start; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
		cells := splitRow(lines[i])
		if len(cells) <= col {
			return nil, fmt.Errorf("line %d: %d cells, want at least %d", i+1, len(cells), col+1)
		}
		m := backticked.FindStringSubmatch(cells[0])
		if m == nil {
			return nil, fmt.Errorf("line %d: first cell %q names no package in backticks", i+1, cells[0])
		}
		pkg := m[1]
		if _, dup := table[pkg]; dup {
			return nil, fmt.Errorf("line %d: package %s has two rows", i+1, pkg)
		}
		imports := []string{}
		for _, m := range backticked.FindAllStringSubmatch(parenthetical.ReplaceAllString(cells[col], ""), -1) {
			imports = append(imports, "internal/"+m[1])
		}
		slices.Sort(imports)
		table[pkg] = imports
	}
	return table, nil
}

// splitRow returns the trimmed cells of a Markdown table row ("| a | b |"),
// or nil for a line that is not one. A '|' inside backticks does not occur
// in the table.
func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") {
		return nil
	}
	cells := strings.Split(line[1:len(line)-1], "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

// compareImports lists, sorted by package, every way the documented table
// and the actual graph differ.
func compareImports(doc, actual map[string][]string) []string {
	var problems []string
	for _, pkg := range sortedKeys(actual) {
		listed, ok := doc[pkg]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: no row in the table (it imports %s)", pkg, orNone(actual[pkg])))
			continue
		}
		for _, imp := range actual[pkg] {
			if !slices.Contains(listed, imp) {
				problems = append(problems, fmt.Sprintf("%s imports %s, which its row does not list", pkg, imp))
			}
		}
		for _, imp := range listed {
			if !slices.Contains(actual[pkg], imp) {
				problems = append(problems, fmt.Sprintf("%s's row lists %s, which it does not import", pkg, imp))
			}
		}
	}
	for _, pkg := range sortedKeys(doc) {
		if _, ok := actual[pkg]; !ok {
			problems = append(problems, fmt.Sprintf("%s has a row but is no package of the module", pkg))
		}
	}
	return problems
}

func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func orNone(imports []string) string {
	if len(imports) == 0 {
		return "nothing of the module"
	}
	return strings.Join(imports, ", ")
}

// The parser reads sub-package rows and paths, skips commentary in
// parentheses, and the comparison names each kind of drift.
func TestImportTableParsingAndDrift(t *testing.T) {
	doc := "intro\n\n| Package | Its one job | May import (internal) |\n|---|---|---|\n" +
		"| `internal/api` | routes | `api/openai`, `engine` (for `Request`) |\n" +
		"| `internal/api/openai` | chat | `engine` |\n" +
		"| `internal/engine` | passes | — |\n" +
		"| `internal/gone` | removed | — |\n\nafter the table | not a row\n"
	table, err := parseImportTable([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"internal/api":        {"internal/api/openai", "internal/engine"},
		"internal/api/openai": {"internal/engine"},
		"internal/engine":     {},
		"internal/gone":       {},
	}
	if fmt.Sprint(table) != fmt.Sprint(want) {
		t.Fatalf("parsed %v, want %v", table, want)
	}
	actual := map[string][]string{
		"internal/api":        {"internal/api/openai", "internal/engine"},
		"internal/api/openai": {"internal/kv"},
		"internal/engine":     {},
		"internal/kv":         {},
	}
	got := compareImports(table, actual)
	wantProblems := []string{
		"internal/api/openai imports internal/kv, which its row does not list",
		"internal/api/openai's row lists internal/engine, which it does not import",
		"internal/kv: no row in the table (it imports nothing of the module)",
		"internal/gone has a row but is no package of the module",
	}
	if !slices.Equal(got, wantProblems) {
		t.Errorf("problems:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(wantProblems, "\n  "))
	}
	if _, err := parseImportTable([]byte("no table here")); err == nil {
		t.Error("a document without the table parsed")
	}
}
