package config

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// Every key of a capability that is not built yet, and every enum value of
// one, must stop the server at startup with one "not supported yet" line,
// whichever source sets it.
func TestLoad_NotYetSupported(t *testing.T) {
	type testCase struct {
		name string
		args []string
		want string
	}
	var tests []testCase
	for _, s := range flagTable {
		if s.notYet == "" {
			continue
		}
		value := map[flagKind]string{flagString: "x", flagInt: "1", flagFloat: "1"}[s.kind]
		tests = append(tests, testCase{"--" + s.name, []string{"--" + s.name, value},
			fmt.Sprintf("not supported yet: --%s (needs %s)", s.name, s.notYet)})
	}
	for _, v := range notYetValues {
		tests = append(tests, testCase{"--" + v.flag + " " + v.value, []string{"--" + v.flag, v.value},
			fmt.Sprintf("not supported yet: --%s %s (needs %s)", v.flag, v.value, v.capability)})
	}
	if len(tests) == 0 {
		t.Skip("every capability is built")
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := noEnv(flagOptions(t, tc.args...))
			opts.parseNotYet = false
			probs := problemsOf(t, opts)
			// A bad value may add its own parse problem; the refusal is
			// the line that matters and it must be there exactly once.
			if n := countLines(probs, tc.want); n != 1 {
				t.Errorf("problems %q: want exactly one %q", probs, tc.want)
			}
		})
	}
}

func TestLoad_NotYetSupportedFromAConfigFile(t *testing.T) {
	path := writeFile(t, "c.yaml", "kv_offloading_backend: lmcache\n")
	opts := noEnv(LoadOptions{ConfigPath: path})
	opts.parseNotYet = false
	probs := problemsOf(t, opts)
	for _, want := range []string{
		"--config " + path + ":1: not supported yet: --kv-offloading-backend lmcache (needs the LMCache offloading backend)",
	} {
		if countLines(probs, want) != 1 {
			t.Errorf("problems %q: want %q", probs, want)
		}
	}
}

func TestMarshalJSON_OmitsNotYetSupportedKeys(t *testing.T) {
	b, err := json.Marshal(Default())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range flagTable {
		leaf := s.key[strings.LastIndex(s.key, ".")+1:]
		if s.notYet != "" && strings.Contains(string(b), `"`+leaf+`"`) {
			t.Errorf("marshalled config has %s: %s", s.key, b)
		}
	}
	opts := noEnv(LoadOptions{ExtraEngineArgs: string(b)})
	opts.parseNotYet = false
	if _, _, err := Load(opts); err != nil {
		t.Fatalf("the marshalled defaults do not load back: %v", err)
	}
}

func problemsOf(t *testing.T, opts LoadOptions) []string {
	t.Helper()
	cfg, _, err := Load(opts)
	ce, ok := err.(*Error)
	if !ok || cfg != nil {
		t.Fatalf("Load = %v, %v; want only a *config.Error", cfg, err)
	}
	return ce.Problems
}

func countLines(lines []string, want string) int {
	n := 0
	for _, l := range lines {
		if l == want {
			n++
		}
	}
	return n
}
