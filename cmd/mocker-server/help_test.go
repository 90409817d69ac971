package main

import (
	"bytes"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/mocker-server/mocker-server/internal/config"
)

// helpOf runs `mocker-server CMD --help` and returns what it printed.
func helpOf(t *testing.T, sub string) string {
	t.Helper()
	stdout, stderr, err := runCLI(t, sub, "--help")
	if err != nil {
		t.Fatalf("%s --help: %v\n%s", sub, err, stderr)
	}
	return stdout
}

// helpFlagNames returns the long flag names a --help text lists.
func helpFlagNames(help string) map[string]bool {
	names := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z0-9-]+)`).FindAllStringSubmatch(help, -1) {
		names[m[1]] = true
	}
	return names
}

func TestHelp_GroupedWithUsageExampleFirst(t *testing.T) {
	for _, sub := range []string{"serve", "fleet", "replay"} {
		help := helpOf(t, sub)
		usage, examples := strings.Index(help, "\nUsage:\n"), strings.Index(help, "\nExamples:\n  mocker-server "+sub)
		firstSection := strings.Index(help, "\nEngine and scheduler:\n")
		if usage < 0 || examples < usage || firstSection < examples {
			t.Errorf("%s --help: want Usage, then Examples, then the flag sections; got\n%s", sub, help)
		}
		for _, title := range []string{"KV cache", "Timing model", "Engine and scheduler"} {
			if !strings.Contains(help, "\n"+title+":\n") {
				t.Errorf("%s --help has no %q section", sub, title)
			}
		}
		if sub != "replay" {
			for _, g := range config.FlagGroups() {
				if !strings.Contains(help, "\n"+g.String()+":\n") {
					t.Errorf("%s --help has no %q section", sub, g)
				}
			}
		}
	}
}

// TestHelp_EveryFlagHasAGroup: a flag without a section lands in "Other",
// which only cobra's own --help may be in.
func TestHelp_EveryFlagHasAGroup(t *testing.T) {
	root := newRootCmd(io.Discard, io.Discard)
	for _, c := range root.Commands() {
		for _, sec := range helpSections(c) {
			if sec.title != otherGroup {
				continue
			}
			sec.flags.VisitAll(func(f *pflag.Flag) {
				if f.Name != "help" {
					t.Errorf("%s: --%s has no --help section (give it one)", c.Name(), f.Name)
				}
			})
		}
	}
}

// TestHelp_NoContradictionsOrDoubledDefaults: no --no-x line saying
// "disable --x (default true)", a default at most once per flag, and no
// backtick in a usage string (pflag would print its text as the type).
func TestHelp_NoContradictionsOrDoubledDefaults(t *testing.T) {
	root := newRootCmd(io.Discard, io.Discard)
	for _, c := range root.Commands() {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden && strings.Contains(f.Usage, "`") {
				t.Errorf("%s --%s: usage has a backtick: %q", c.Name(), f.Name, f.Usage)
			}
		})
		help := helpOf(t, c.Name())
		var entry bytes.Buffer
		check := func() {
			if n := strings.Count(entry.String(), "(default "); n > 1 {
				t.Errorf("%s --help shows a default %d times: %s", c.Name(), n, entry.String())
			}
			entry.Reset()
		}
		for _, line := range strings.Split(help, "\n") {
			trimmed := strings.TrimSpace(line)
			if name, ok := strings.CutPrefix(trimmed, "--no-"); ok {
				if f := c.Flags().Lookup("no-" + strings.Fields(name)[0]); f != nil && strings.HasPrefix(f.Usage, "disable --") {
					t.Errorf("%s --help lists a generated --no- twin: %q", c.Name(), trimmed)
				}
			}
			if strings.HasPrefix(trimmed, "-") || trimmed == "" {
				check()
			}
			if strings.HasPrefix(trimmed, "-") || entry.Len() > 0 {
				entry.WriteString(trimmed + " ")
			}
		}
		check()
		if strings.Contains(help, "--fleet-file mocker-server") {
			t.Errorf("%s --help turned a backtick into a type placeholder", c.Name())
		}
	}
}

// TestHelp_ReplayListsOnlyWhatItUses derives "ignored by replay" from what
// replay does: every serve flag replay accepts is given to a one-request
// replay; the ones it warns about ("has no effect in replay") must not be
// in its --help, the others must be.
func TestHelp_ReplayListsOnlyWhatItUses(t *testing.T) {
	replayHelp := helpFlagNames(helpOf(t, "replay"))
	for _, gone := range []string{"host", "port", "api-key", "ui", "shutdown-grace"} {
		if replayHelp[gone] {
			t.Errorf("replay --help lists --%s", gone)
		}
	}
	root := newRootCmd(io.Discard, io.Discard)
	serve, _, _ := root.Find([]string{"serve"})
	replayCmd, _, _ := root.Find([]string{"replay"})
	checked := 0
	serve.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden || replayCmd.Flags().Lookup(f.Name) == nil || f.Name == config.FlagConfig || f.Name == "help" {
			return
		}
		value := map[string]string{"bool": "true", "int": "1", "float": "1", "json": "{}"}[f.Value.Type()]
		if value == "" {
			value = "x"
		}
		_, stderr, _ := runCLI(t, "replay", "--requests", "1", "--output-len", "2", "--"+f.Name+"="+value)
		warned := strings.Contains(stderr, "--"+f.Name+" has no effect in replay")
		if warned == replayHelp[f.Name] {
			t.Errorf("--%s: replay warns it has no effect = %v, listed in replay --help = %v", f.Name, warned, replayHelp[f.Name])
		}
		checked++
	})
	if checked < 90 {
		t.Fatalf("checked only %d serve flags", checked)
	}
}
