package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/config"
)

// runCLI runs the command line like main does and returns its outputs.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	err = run(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), err
}

// servedConfig runs the command line and decodes the printed configuration.
func servedConfig(t *testing.T, args ...string) map[string]any {
	t.Helper()
	stdout, stderr, err := runCLI(t, args...)
	if err != nil {
		t.Fatalf("run(%q) = %v; stderr:\n%s", args, err, stderr)
	}
	var cfg map[string]any
	if err := json.Unmarshal([]byte(stdout), &cfg); err != nil {
		t.Fatalf("stdout is not a JSON config: %v\n%s", err, stdout)
	}
	return cfg
}

func TestRun_ServeIsTheDefaultCommand(t *testing.T) {
	t.Setenv("VLLM_API_KEY", "")
	withDefault, _, err1 := runCLI(t, "--port", "9000")
	explicit, _, err2 := runCLI(t, "serve", "--port", "9000")
	if err1 != nil || err2 != nil {
		t.Fatalf("errors: %v, %v", err1, err2)
	}
	if withDefault != explicit {
		t.Errorf("default command output differs from serve:\n%s\n---\n%s", withDefault, explicit)
	}
	if cfg := servedConfig(t, "--port", "9000"); cfg["port"] != 9000.0 {
		t.Errorf("port = %v", cfg["port"])
	}
}

func TestRun_ServePrintsTheValidatedConfig(t *testing.T) {
	t.Setenv("VLLM_API_KEY", "")
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(file, []byte("max-num-seqs: 10\nkv-events-config:\n  buffer-steps: 16\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		key  string
		want any
	}{
		{"positional model", []string{"serve", "my-model"}, "model", "my-model"},
		{"positional model without serve", []string{"my-model", "--port", "1"}, "served_model_name", []any{"my-model"}},
		{"-dp is rewritten", []string{"-dp", "3"}, "dp_size", 3.0},
		{"config file", []string{"--config", file}, "max_num_seqs", 10.0},
		{"flag over config file", []string{"--config", file, "--max-num-seqs", "256"}, "max_num_seqs", 256.0},
		{"block size is resolved", []string{"--engine-type", "trtllm"}, "block_size", 32.0},
		{"infinite speedup prints as inf", []string{"--speedup-ratio", "inf"}, "speedup_ratio", "inf"},
		{"api keys are redacted", []string{"--api-key", "secret"}, "api_key", []any{"<redacted>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := servedConfig(t, tt.args...)
			got, _ := json.Marshal(cfg[tt.key])
			want, _ := json.Marshal(tt.want)
			if !bytes.Equal(got, want) {
				t.Errorf("%s = %s, want %s", tt.key, got, want)
			}
		})
	}
}

func TestRun_ConfigurationErrorsExitWithStatus2(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantStderr []string
	}{
		{"one line per problem", []string{"--max-num-seqs", "0", "--engine-type", "foo"}, []string{
			"Invalid --engine-type 'foo'. Must be 'vllm', 'sglang', or 'trtllm'.",
			"--max-num-seqs must be between 1 and 65536, got 0",
		}},
		{"unknown flag", []string{"--max-num-seq", "3"}, []string{"unknown flag: --max-num-seq (did you mean --max-num-seqs?)"}},
		{"unknown field in --kv-events-config", []string{"--kv-events-config", `{"bogus":true}`},
			[]string{`unknown field "kv_events_config.bogus"`}},
		{"bad bool value", []string{"--enable-prefix-caching=maybe"},
			[]string{`invalid argument "maybe" for "--enable-prefix-caching" flag: expected true or false`}},
		{"two positional models", []string{"serve", "a", "b"},
			[]string{`serve accepts at most one positional argument (MODEL), got 2: ["a" "b"]`}},
		{"positional and --model differ", []string{"serve", "a", "--model", "b"},
			[]string{`model given twice: positional "a" and --model "b"`}},
		{"missing config file", []string{"--config", "/nonexistent.yaml"},
			[]string{"--config /nonexistent.yaml: no such file or directory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, err := runCLI(t, tt.args...)
			var cfgErr *config.Error
			if !errors.As(err, &cfgErr) {
				t.Fatalf("run error = %#v, want *config.Error", err)
			}
			if code := exitCode(err); code != 2 {
				t.Errorf("exit code = %d, want 2", code)
			}
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			want := make([]string, len(tt.wantStderr))
			for i, w := range tt.wantStderr {
				want[i] = "mocker-server: " + w // every error line starts with the program's name
			}
			if !slices.Equal(lines, want) {
				t.Errorf("stderr lines:\n got  %q\n want %q", lines, want)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want nothing", stdout)
			}
		})
	}
}

func TestRun_WarningsGoToStderr(t *testing.T) {
	_, stderr, err := runCLI(t, "--num-gpu-blocks", "1")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(stderr, "warning: max_model_len (32768) is larger than the KV cache") {
		t.Errorf("stderr = %q", stderr)
	}
}

func TestRun_Version(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		stdout, stderr, err := runCLI(t, args...)
		if err != nil || stdout != version+"\n" || stderr != "" {
			t.Errorf("run(%q) = %q, %q, %v; want %q", args, stdout, stderr, err, version+"\n")
		}
	}
	if version != "0.1.0-dev" {
		t.Errorf("default version = %q", version)
	}
}

func TestRun_HelpListsServeFlags(t *testing.T) {
	stdout, _, err := runCLI(t, "serve", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"--num-gpu-blocks-override", "--no-enable-prefix-caching", "--kv-events-config", "--data-parallel-size"} {
		if !strings.Contains(stdout, f) {
			t.Errorf("serve --help does not mention %s", f)
		}
	}
}

func TestExitCode(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{nil, 0},
		{&config.Error{Problems: []string{"x"}}, 2},
		{errors.New("bind: address in use"), 1},
	}
	for _, tt := range tests {
		if got := exitCode(tt.err); got != tt.want {
			t.Errorf("exitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

// Every configuration flag that used to be accepted and ignored now stops
// the server with exactly one "not supported yet" line and exit status 2.
func TestRun_FormerlyInertFlagsExitWithStatus2(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--kv-offloading-backend", "lmcache"}, "not supported yet: --kv-offloading-backend lmcache (needs the LMCache offloading backend)"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			stdout, stderr, err := runCLI(t, tt.args...)
			if code := exitCode(err); code != 2 {
				t.Errorf("exit code = %d (err %v), want 2", code, err)
			}
			if got := strings.TrimSuffix(stderr, "\n"); got != "mocker-server: "+tt.want {
				t.Errorf("stderr = %q, want the one line %q", got, tt.want)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want nothing", stdout)
			}
		})
	}
}
