package config

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// parseVLLMArgs parses args as serve does (RewriteArgs, then pflag) and
// returns the flag set, or the parse error.
func parseVLLMArgs(args ...string) (*pflag.FlagSet, error) {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	RegisterFlags(fs)
	return fs, fs.Parse(RewriteArgs(args))
}

// isMockFlag reports whether the mock implements the vLLM flag itself.
func isMockFlag(name string) bool {
	if name == FlagConfig {
		return true
	}
	return slices.ContainsFunc(flagTable, func(s flagSpec) bool { return s.name == name })
}

// validVLLMArgs returns a command line setting f to a valid value of its
// kind, and how the startup line must describe it.
func validVLLMArgs(f vllmFlag) (args []string, described string) {
	flag := "--" + f.name
	switch f.kind {
	case vllmStoreTrue, vllmBoolOptional, vllmOptionalValue:
		return []string{flag}, flag
	case vllmInt:
		return []string{flag, "3"}, flag + " 3"
	case vllmFloat:
		return []string{flag, "0.5"}, flag + " 0.5"
	case vllmHumanInt:
		return []string{flag, "25.6k"}, flag + " 25.6k"
	case vllmChoice, vllmIntChoice:
		v := f.choices[len(f.choices)-1]
		return []string{flag, v}, flag + " " + v
	case vllmJSON, vllmJSONObject, vllmJSONOrString:
		return []string{flag, `{"a":1}`}, flag + ` '{"a":1}'`
	case vllmList:
		values := []string{"x", "y"}
		switch f.elem {
		case vllmInt:
			values = []string{"1", "-2"}
		case vllmChoice:
			values = f.choices[:2]
		}
		return append([]string{flag}, values...), flag + " " + strings.Join(values, " ")
	case vllmAppend:
		return []string{flag, "x", flag, "y"}, flag + " x y"
	}
	return []string{flag, "text"}, flag + " text"
}

// wrongVLLMValue returns a value vLLM's argparse rejects for f, or "" when
// every text is valid (strings).
func wrongVLLMValue(f vllmFlag) string {
	kind := f.kind
	if kind == vllmList {
		kind = f.elem
	}
	switch kind {
	case vllmStoreTrue, vllmBoolOptional:
		return "yes" // given as --x=yes: these flags take no value
	case vllmInt:
		return "2.5"
	case vllmFloat:
		return "half"
	case vllmHumanInt:
		return "1.5K"
	case vllmChoice:
		return "bogus"
	case vllmIntChoice:
		return "2"
	case vllmJSON:
		return "{bad"
	case vllmJSONOrString:
		return "{bad}" // looks like a JSON object, so it must be one
	case vllmJSONObject:
		return "[1, 2]"
	}
	return ""
}

// Every vLLM flag the mock does not implement is accepted with a valid
// value of its type through the real flag parser and Load, reported on the
// startup line (or refused as not supported yet), and a value of the wrong
// type fails to parse with an error naming the flag.
func TestVLLMFlags_EveryFlagIsAcceptedTypeCheckedAndReported(t *testing.T) {
	for _, f := range vllmFlagTable {
		if isMockFlag(f.name) {
			continue // TestVLLMFlags_MockFlagsReadVLLMForms
		}
		t.Run(f.name, func(t *testing.T) {
			args, described := validVLLMArgs(f)
			fs, err := parseVLLMArgs(append([]string{"--port", "0"}, args...)...)
			if err != nil {
				t.Fatalf("parse %q: %v", args, err)
			}
			if f.notYet == "" {
				mustLoad(t, OptionsFromFlags(fs))
				if got := NoEffectFlags(fs); !slices.Equal(got, []string{described}) {
					t.Errorf("no-effect flags = %q, want [%q]", got, described)
				}
			} else {
				want := []string{"not supported yet: " + described + " (needs " + f.notYet + ")"}
				if got := refusals(t, OptionsFromFlags(fs)); !slices.Equal(got, want) {
					t.Errorf("problems = %q, want %q", got, want)
				}
			}

			for _, short := range f.shortNames {
				sargs := slices.Clone(args)
				sargs[0] = "-" + short
				fs, err := parseVLLMArgs(sargs...)
				if err != nil {
					t.Fatalf("parse %q: %v", sargs, err)
				}
				if got := vllmUses(fs); len(got) != 1 || got[0].describe() != described {
					t.Errorf("-%s: uses = %v, want %q", short, got, described)
				}
			}

			wrong := wrongVLLMValue(f)
			if wrong == "" {
				return
			}
			bad := []string{"--" + f.name, wrong}
			if !f.kind.takesValue() {
				bad = []string{"--" + f.name + "=" + wrong}
			}
			_, err = parseVLLMArgs(bad...)
			if err == nil || !strings.Contains(err.Error(), `"--`+f.name+`"`) {
				t.Errorf("parse %q: err = %v, want an error naming --%s", bad, err, f.name)
			}
		})
	}
}

// refusals loads opts with the refusal of not-yet capabilities on and
// returns the problem lines.
func refusals(t *testing.T, opts LoadOptions) []string {
	t.Helper()
	opts = noEnv(opts)
	opts.parseNotYet = false
	_, _, err := Load(opts)
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("Load: want *config.Error, got %v", err)
	}
	return ce.Problems
}

// The negative form of a BooleanOptionalAction flag is accepted and
// reported as written; it never asks for a missing capability.
func TestVLLMFlags_NegativeBooleanForms(t *testing.T) {
	fs, err := parseVLLMArgs("--enforce-eager", "--no-enforce-eager", "--enable-log-outputs", "--no-enable-log-outputs", "--no-trust-remote-code")
	if err != nil {
		t.Fatal(err)
	}
	opts := noEnv(OptionsFromFlags(fs))
	opts.parseNotYet = false
	if _, _, err := Load(opts); err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := []string{"--no-enforce-eager", "--no-enable-log-outputs", "--no-trust-remote-code"}
	if got := NoEffectFlags(fs); !slices.Equal(got, want) {
		t.Errorf("no-effect flags = %q, want %q", got, want)
	}
}

// vLLM flags the mock implements keep the mock's meaning and read vLLM's
// command-line forms: nargs="+" lists, negative booleans, -dp.
func TestVLLMFlags_MockFlagsReadVLLMForms(t *testing.T) {
	for _, f := range vllmFlagTable {
		if !isMockFlag(f.name) || f.name == FlagConfig {
			continue
		}
		i := slices.IndexFunc(flagTable, func(s flagSpec) bool { return s.name == f.name })
		s := flagTable[i]
		if f.kind == vllmBoolOptional && (s.kind != flagBool || !s.negatable) {
			t.Errorf("--%s: vLLM has --no-%s, the mock's flag does not", f.name, f.name)
		}
		if f.kind == vllmList && s.kind != flagList {
			t.Errorf("--%s: vLLM takes several values, the mock's flag one", f.name)
		}
	}
	cfg, _ := mustLoad(t, flagOptions(t, "--served-model-name", "a", "b", "c", "--api-key", "k1", "k2",
		"-dp", "2", "--no-enable-force-include-usage", "--model", "m"))
	if !slices.Equal(cfg.ServedModelName, []string{"a", "b", "c"}) || !slices.Equal(cfg.APIKey, []string{"k1", "k2"}) ||
		cfg.DPSize != 2 || cfg.EnableForceIncludeUsage || cfg.Model != "m" {
		t.Errorf("config = served %q keys %q dp %d force_usage %v model %q",
			cfg.ServedModelName, cfg.APIKey, cfg.DPSize, cfg.EnableForceIncludeUsage, cfg.Model)
	}
}

// The startup line lists the flags in command-line order, one entry per
// flag, with the value that counts (argparse: the last one), quoted for a
// shell where needed, and never a credential.
func TestNoEffectFlags_OrderAndRepeats(t *testing.T) {
	fs, err := parseVLLMArgs("--pipeline-parallel-size", "2", "--swap-space", "0.9", "--load-format", "safetensors",
		"--trust-remote-code", "--enable-prefix-caching", "-pp", "4", "--download-dir", "/my models", "--hf-token", "hf_x")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--pipeline-parallel-size 4", "--swap-space 0.9", "--load-format safetensors",
		"--trust-remote-code", `--download-dir '/my models'`, "--hf-token <redacted>"}
	if got := NoEffectFlags(fs); !slices.Equal(got, want) {
		t.Errorf("no-effect flags:\n got  %q\n want %q", got, want)
	}
}

func TestVLLMValues_PythonSemantics(t *testing.T) {
	tests := []struct {
		name  string
		flag  vllmFlag
		text  string
		valid bool
	}{
		{"int with spaces", vInt("x"), " 7 ", true},
		{"int with underscores", vInt("x"), "1_000", true},
		{"int with a sign", vInt("x"), "-3", true},
		{"int with a double underscore", vInt("x"), "1__0", false},
		{"int written as float", vInt("x"), "2.0", false},
		{"hex int", vInt("x"), "0x10", false},
		{"None for a nullable int", vInt("x").orNone(), "None", true},
		{"None for an int", vInt("x"), "None", false},
		{"float exponent", vFloat("x"), "1e-3", true},
		{"float inf", vFloat("x"), "Infinity", true},
		{"float nan", vFloat("x"), "nan", true},
		{"float leading dot", vFloat("x"), ".5", true},
		{"float word", vFloat("x"), "half", false},
		{"human int decimal suffix", vllmFlag{name: "x", kind: vllmHumanInt}, "25.6k", true},
		{"human int binary suffix", vllmFlag{name: "x", kind: vllmHumanInt}, "32K", true},
		{"human int terabytes", vllmFlag{name: "x", kind: vllmHumanInt}, "1T", true},
		{"human int decimal binary suffix", vllmFlag{name: "x", kind: vllmHumanInt}, "1.5K", false},
		{"human int plain", vllmFlag{name: "x", kind: vllmHumanInt}, "4096", true},
		{"int choice with leading zero", vllmFlag{name: "x", kind: vllmIntChoice, choices: []string{"16"}}, "016", true},
		{"choice is case sensitive", vChoice("x", "auto"), "AUTO", false},
		{"JSON array", vJSON("x"), "[1]", true},
		{"JSON object required", vObject("x"), "[1]", false},
		{"JSON trailing data", vObject("x"), "{} {}", false},
		{"dict or text: text", vllmFlag{name: "x", kind: vllmJSONOrString}, "cuda:0", true},
		{"dict or text: broken dict", vllmFlag{name: "x", kind: vllmJSONOrString}, "{cuda}", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkVLLMValue(&tt.flag, tt.flag.kind, tt.text)
			if (err == nil) != tt.valid {
				t.Errorf("check %q: err = %v, want valid=%v", tt.text, err, tt.valid)
			}
		})
	}
}

func TestExplainFlagError_DidYouMean(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--tensor-parallel-sise", "2"}, "unknown flag: --tensor-parallel-sise (did you mean --tensor-parallel-size?)"},
		{[]string{"--gpu_memory_utilisation", "0.9"}, "unknown flag: --gpu_memory_utilisation (did you mean --gpu-memory-utilization?)"},
		{[]string{"--max-num-seq", "4"}, "unknown flag: --max-num-seq (did you mean --max-num-seqs?)"},
		{[]string{"--enable-prefix-cahcing"}, "unknown flag: --enable-prefix-cahcing (did you mean --enable-prefix-caching?)"},
		{[]string{"--no-enforce-eagre"}, "unknown flag: --no-enforce-eagre (did you mean --no-enforce-eager?)"},
		{[]string{"-tq", "2"}, "unknown shorthand flag: 't' in -tq (did you mean -tp?)"},
		{[]string{"--frobnicate"}, "unknown flag: --frobnicate"},
	}
	for _, tt := range tests {
		t.Run(tt.args[0], func(t *testing.T) {
			fs, err := parseVLLMArgs(tt.args...)
			if err == nil {
				t.Fatal("no parse error")
			}
			if got := ExplainFlagError(fs, err); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "abc", 3}, {"abc", "abc", 0}, {"sise", "size", 1}, {"cahcing", "caching", 1}, {"kitten", "sitting", 3},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

// The table has one entry per flag, every short name once, and no name
// that is also a short name.
func TestVLLMFlagTable_NamesAreUnique(t *testing.T) {
	names, shorts := map[string]bool{}, map[string]bool{}
	for _, f := range vllmFlagTable {
		if names[f.name] {
			t.Errorf("--%s listed twice", f.name)
		}
		names[f.name] = true
		for _, s := range f.shortNames {
			if shorts[s] {
				t.Errorf("-%s listed twice", s)
			}
			shorts[s] = true
		}
		if (f.kind == vllmChoice || f.kind == vllmIntChoice) && len(f.choices) == 0 {
			t.Errorf("--%s: a choice flag without choices", f.name)
		}
	}
}

// vllmHelpFlag is one option signature of `vllm serve --help`.
type vllmHelpFlag struct {
	negatable bool     // has a --no- form
	metavar   string   // "", "int", "float", "a|b|c" or a NAME
	shorts    []string // single-dash names without "-"
}

// readVLLMHelp reads testdata/vllm-0.17.1-serve-flags.txt.
func readVLLMHelp(t *testing.T) map[string]vllmHelpFlag {
	t.Helper()
	b, err := os.ReadFile("testdata/vllm-0.17.1-serve-flags.txt")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]vllmHelpFlag{}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var name string
		var h vllmHelpFlag
		for _, opt := range strings.Split(line, ", ") {
			spelling, metavar, _ := strings.Cut(opt, " ")
			h.metavar = strings.Trim(metavar, "<>")
			switch {
			case strings.HasPrefix(spelling, "--no-"):
				h.negatable = true
			case strings.HasPrefix(spelling, "--"):
				name = spelling[2:]
			default:
				h.shorts = append(h.shorts, spelling[1:])
			}
		}
		out[name] = h
	}
	return out
}

// vllmFlagTable holds exactly the flags of `vllm serve --help`, with
// vLLM's short names, and kinds that fit what argparse prints: no metavar for flags
// without a value (a --no- form for BooleanOptionalAction), <int> and
// <float> only for plain int and float types, <a|b|c> for choices.
func TestVLLMFlagTable_MatchesVLLMHelp(t *testing.T) {
	help := readVLLMHelp(t)
	for name := range help {
		if _, ok := vllmFlagByName[name]; !ok {
			t.Errorf("--%s is a vllm serve flag missing from vllmFlagTable", name)
		}
	}
	for _, f := range vllmFlagTable {
		h, ok := help[f.name]
		if !ok {
			t.Errorf("--%s is not a vllm serve flag of vLLM 0.17.1", f.name)
			continue
		}
		if !slices.Equal(f.shortNames, h.shorts) {
			t.Errorf("--%s: short names %q, vLLM has %q", f.name, f.shortNames, h.shorts)
		}
		var fits bool
		switch h.metavar {
		case "":
			fits = f.kind == vllmStoreTrue && !h.negatable || f.kind == vllmBoolOptional && h.negatable
		case "int":
			fits = f.kind == vllmInt && !f.nullable
		case "float":
			fits = f.kind == vllmFloat && !f.nullable
		default:
			if strings.Contains(h.metavar, "|") {
				fits = (f.kind == vllmChoice || f.kind == vllmIntChoice) && !f.nullable &&
					slices.Equal(slices.Sorted(slices.Values(f.choices)), slices.Sorted(slices.Values(strings.Split(h.metavar, "|"))))
			} else {
				// A NAME: any other type; an int or a float here is an
				// optional one (vLLM's optional_type hides the type).
				fits = f.kind.takesValue() && (f.kind != vllmInt && f.kind != vllmFloat || f.nullable)
			}
		}
		if !fits {
			t.Errorf("--%s: kind %d (nullable %v, choices %q) does not fit vLLM's signature %q (negatable %v)",
				f.name, f.kind, f.nullable, f.choices, h.metavar, h.negatable)
		}
	}
}
