package archtest

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/testutil"
)

// scenarioID finds a scenario id (S1…S99, G1…G99) that starts a word or
// follows "Test" or "Scenario" in a test name (TestScenarioS4Chunked,
// TestS25Spec). The character after the id is checked by
// scenarioIDsIn: a digit or lowercase letter means it is no id.
var scenarioID = regexp.MustCompile(`(?:^|[^A-Za-z0-9]|Test|Scenario)([SG][1-9][0-9]?)`)

// scenarioIDsIn returns the scenario ids text mentions.
func scenarioIDsIn(text string) []string {
	var ids []string
	for _, m := range scenarioID.FindAllStringSubmatchIndex(text, -1) {
		end := m[3]
		if end < len(text) {
			if c := text[end]; c >= '0' && c <= '9' || c >= 'a' && c <= 'z' {
				continue
			}
		}
		ids = append(ids, text[m[2]:end])
	}
	return ids
}

// catalogRow is one row of docs/scenarios.md: an id and the tests it
// names, each with its file.
type catalogRow struct {
	id    string
	tests [][2]string // test name, file
}

var catalogTest = regexp.MustCompile("`(Test\\w+)`")
var catalogFile = regexp.MustCompile("\\(`([^`]+_test\\.go)`\\)")

// parseCatalog reads the scenario table of docs/scenarios.md: rows
// "| id | what it checks | tests |", where the tests cell lists groups
// "`TestA`, `TestB` (`path/file_test.go`)" separated by semicolons.
func parseCatalog(doc []byte) ([]catalogRow, error) {
	var rows []catalogRow
	for i, line := range strings.Split(string(doc), "\n") {
		cells := splitRow(line)
		if len(cells) != 3 || cells[0] == "Id" || strings.HasPrefix(cells[0], "---") {
			continue
		}
		ids := scenarioIDsIn(cells[0])
		if len(ids) != 1 || ids[0] != cells[0] {
			return nil, fmt.Errorf("line %d: %q is not a scenario id", i+1, cells[0])
		}
		row := catalogRow{id: cells[0]}
		for group := range strings.SplitSeq(cells[2], ";") {
			file := catalogFile.FindStringSubmatch(group)
			names := catalogTest.FindAllStringSubmatch(group, -1)
			if file == nil || len(names) == 0 {
				return nil, fmt.Errorf("line %d: %q is not \"`TestX`, … (`file_test.go`)\"", i+1, strings.TrimSpace(group))
			}
			for _, n := range names {
				row.tests = append(row.tests, [2]string{n[1], file[1]})
			}
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("no scenario rows")
	}
	return rows, nil
}

// TestScenarioCatalog keeps docs/scenarios.md and the tests together: every
// scenario id a _test.go file of the module mentions has a row, every row's
// id is mentioned by some test file, and every test a row names is a test
// function of the file it names.
func TestScenarioCatalog(t *testing.T) {
	root := testutil.RepoRoot()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "scenarios.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := parseCatalog(doc)
	if err != nil {
		t.Fatalf("docs/scenarios.md: %v", err)
	}
	used := map[string][]string{} // id → files mentioning it
	self, _ := filepath.Abs(".")
	for _, dir := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (path == self || d.Name() == "testdata") {
				return filepath.SkipDir // this package's tests hold example ids
			}
			if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
				return nil
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			for _, id := range scenarioIDsIn(string(src)) {
				if !slices.Contains(used[id], rel) {
					used[id] = append(used[id], rel)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	listed := map[string]bool{}
	for _, row := range rows {
		if listed[row.id] {
			t.Errorf("docs/scenarios.md: %s has two rows", row.id)
		}
		listed[row.id] = true
		if len(used[row.id]) == 0 {
			t.Errorf("docs/scenarios.md lists %s, which no test mentions", row.id)
		}
		for _, tf := range row.tests {
			src, err := os.ReadFile(filepath.Join(root, tf[1]))
			if err != nil {
				t.Errorf("docs/scenarios.md: %s names %s in %s: %v", row.id, tf[0], tf[1], err)
				continue
			}
			if !strings.Contains(string(src), "\nfunc "+tf[0]+"(") {
				t.Errorf("docs/scenarios.md: %s names %s, which is no test function of %s", row.id, tf[0], tf[1])
			}
		}
	}
	for _, id := range sortedKeys(used) {
		if !listed[id] {
			t.Errorf("scenario %s (mentioned in %s) has no row in docs/scenarios.md", id, strings.Join(used[id], ", "))
		}
	}
}

// The id finder takes ids that stand alone or end a test-name prefix and
// nothing that merely contains one.
func TestScenarioIDsIn(t *testing.T) {
	text := "S1, (S12) S23–S25 TestScenarioS4Chunked TestS25Spec TestScenario_S19 " +
		"G3: s18Prompt S100 R20 ABS1 S1x SHA256 TestSGLangFamilyS1 G0"
	want := []string{"S1", "S12", "S23", "S25", "S4", "S25", "S19", "G3"}
	if got := scenarioIDsIn(text); !slices.Equal(got, want) {
		t.Errorf("ids %v, want %v", got, want)
	}
}
