package config

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// argparseKinds names each vllmKind for testdata/argparse_check.py.
var argparseKinds = map[vllmKind]string{
	vllmStoreTrue: "store_true", vllmBoolOptional: "bool", vllmString: "string", vllmInt: "int",
	vllmFloat: "float", vllmHumanInt: "human_int", vllmChoice: "choice", vllmIntChoice: "int_choice",
	vllmJSON: "json", vllmJSONObject: "json_object", vllmJSONOrString: "json_or_string", vllmList: "list",
	vllmAppend: "append", vllmOptionalValue: "optional_value",
}

// python3 returns a Python 3 interpreter (any: the check needs only the
// standard library), or "" when there is none.
func python3() string {
	for _, c := range []string{"python3", "/usr/bin/python3"} {
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	return ""
}

// argparseCases returns command lines exercising f: values of every kind
// (valid and not) in both the "--x V" and "--x=V" forms, the short names,
// and the no-value forms of flags without a value.
func argparseCases(f vllmFlag) [][]string {
	flag := "--" + f.name
	if !f.kind.takesValue() {
		cases := [][]string{{flag}, {flag + "=yes"}, {flag + "="}, {"--no-" + f.name}}
		for _, s := range f.shortNames {
			cases = append(cases, []string{"-" + s})
		}
		return cases
	}
	values := []string{"3", "-2", "+4", "2.5", "1e3", ".5", "inf", "-Infinity", "nan", "1_000", "1__0", " 7 ", "0x10",
		"abc", "", "None", "1_.5", "1._5", "1_0.2_5e1_0", "5.", "1e", "_1", "25.6k", "1.5K", "32K", "7t", "auto", "bogus", "AUTO", "true",
		`{"a": 1}`, "[1, 2]", `"s"`, "null", "{bad}", "{bad", " {} ", `{"a":1} {}`}
	values = append(values, f.choices...)
	var cases [][]string
	for _, v := range values {
		if strings.HasPrefix(v, "-") && !numericRE.MatchString(v) {
			// Known difference: argparse reads "--x -Infinity" as a flag
			// missing its value; pflag takes "-Infinity" as the value.
			continue
		}
		cases = append(cases, []string{flag, v})
	}
	for _, v := range []string{"3", "", "None", `{"a": 1}`, "-Infinity"} {
		cases = append(cases, []string{flag + "=" + v})
	}
	if f.kind == vllmList {
		cases = append(cases, []string{flag, "1", "2", "-3"}, []string{flag, "x", "y"}, []string{flag, "model,worker", "all"})
	}
	if f.kind == vllmOptionalValue {
		cases = append(cases, []string{flag})
	}
	for _, s := range f.shortNames {
		cases = append(cases, []string{"-" + s, "3"}, []string{"-" + s + "=3"}, []string{"-" + s, "x"})
	}
	return cases
}

// The Go type checks and command-line forms accept exactly the command
// lines Python's argparse accepts with vLLM's types: Python's int(),
// float() and json.loads, argparse's choices, nargs="+", nargs="?",
// store_true and BooleanOptionalAction.
func TestVLLMFlags_AgreeWithPythonArgparse(t *testing.T) {
	py := python3()
	if py == "" {
		t.Skip("no python3 (scripts/ensure-deps.sh installs it)")
	}
	type pyFlag struct {
		Name     string   `json:"name"`
		Kind     string   `json:"kind"`
		Elem     string   `json:"elem"`
		Choices  []string `json:"choices"`
		Nullable bool     `json:"nullable"`
		Shorts   []string `json:"shorts"`
	}
	var spec struct {
		Flags []pyFlag   `json:"flags"`
		Cases [][]string `json:"cases"`
	}
	var caseFlag []*vllmFlag // the flag each case exercises
	for i := range vllmFlagTable {
		f := &vllmFlagTable[i]
		if isMockFlag(f.name) {
			continue // the mock's own flags follow the mock's rules
		}
		spec.Flags = append(spec.Flags, pyFlag{Name: f.name, Kind: argparseKinds[f.kind], Elem: argparseKinds[f.elem],
			Choices: append([]string{}, f.choices...), Nullable: f.nullable, Shorts: append([]string{}, f.shortNames...)})
		for _, c := range argparseCases(*f) {
			spec.Cases = append(spec.Cases, c)
			caseFlag = append(caseFlag, f)
		}
	}
	in, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "testdata/argparse_check.py")
	cmd.Stdin = bytes.NewReader(in)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("argparse_check.py: %v", err)
	}
	var accepted []bool
	if err := json.Unmarshal(out, &accepted); err != nil || len(accepted) != len(spec.Cases) {
		t.Fatalf("argparse_check.py output (%d results for %d cases): %v", len(accepted), len(spec.Cases), err)
	}
	disagreements := 0
	for i, args := range spec.Cases {
		// Only the flag under test: a case uses no other, and registering
		// every flag thousands of times would dominate the test's time.
		fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		fs.SetOutput(new(strings.Builder))
		registerVLLMFlag(fs, caseFlag[i], new(int))
		goErr := fs.Parse(RewriteArgs(args))
		if (goErr == nil) != accepted[i] {
			disagreements++
			if disagreements <= 40 {
				t.Errorf("%q: argparse accepts=%v, Go err=%v", strings.Join(args, " "), accepted[i], goErr)
			}
		}
	}
	if disagreements > 0 {
		t.Errorf("%d of %d command lines disagree", disagreements, len(spec.Cases))
	}
	t.Logf("%d command lines over %d flags agree with argparse", len(spec.Cases), len(spec.Flags))
}
