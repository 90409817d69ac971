package config

import (
	"errors"
	"os"
	"testing"

	"github.com/mocker-server/mocker-server/internal/testutil"

	"github.com/spf13/pflag"
)

// writeFile writes content to a file called name in a temporary directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	return testutil.WriteFile(t, t.TempDir(), name, content)
}

// flagOptions parses args like the serve command does and returns its LoadOptions.
func flagOptions(t *testing.T, args ...string) LoadOptions {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	RegisterFlags(fs)
	if err := fs.Parse(RewriteArgs(args)); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	return OptionsFromFlags(fs)
}

// noEnv isolates a test from the process environment and host name.
func noEnv(opts LoadOptions) LoadOptions {
	if opts.LookupEnv == nil {
		opts.LookupEnv = func(string) (string, bool) { return "", false }
	}
	opts.Hostname = func() (string, error) { return "testhost", nil }
	opts.parseNotYet = true // TestLoad_NotYetSupported covers the refusal
	return opts
}

func mustLoad(t *testing.T, opts LoadOptions) (*Config, []string) {
	t.Helper()
	cfg, warns, err := Load(noEnv(opts))
	if err != nil {
		t.Fatalf("Load: unexpected error:\n%v", err)
	}
	return cfg, warns
}

// loadProblems loads and returns the problem lines, failing when there are none.
func loadProblems(t *testing.T, opts LoadOptions) []string {
	t.Helper()
	cfg, _, err := Load(noEnv(opts))
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("Load: want *config.Error, got err=%v cfg=%+v", err, cfg)
	}
	if cfg != nil {
		t.Errorf("Load returned a config together with an error")
	}
	return ce.Problems
}

func overlay(m map[string]any) LoadOptions { return LoadOptions{Overlay: m} }

// osLookupEnv is the real environment (set with t.Setenv), unlike noEnv's default.
var osLookupEnv = os.LookupEnv
