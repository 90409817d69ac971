package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeTokenizerDir writes a tokenizer directory with the given files.
func writeTokenizerDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A tokenizer or chat template the server cannot use stops the real server
// at startup (run with serve as in production): exit status 2 and one line
// on stderr that names the file and the problem; nothing listens.
func TestRun_BadTokenizerOrTemplateExitsWith2(t *testing.T) {
	serveFunc = runServer
	defer func() { serveFunc = printConfig }()

	missing := filepath.Join(t.TempDir(), "no-such-model")
	malformed := writeTokenizerDir(t, map[string]string{"tokenizer.json": `{"model": {"type": "BPE", "vocab": {`})
	wordPiece := writeTokenizerDir(t, map[string]string{"tokenizer.json": `{"model": {"type": "WordPiece", "vocab": {"a": 0}}}`})
	emptyDir := t.TempDir()
	// A tiny valid tokenizer beside a config whose template is broken.
	brokenTemplate := writeTokenizerDir(t, map[string]string{
		"tokenizer.json":        `{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": []}, "decoder": {"type": "ByteLevel"}}`,
		"tokenizer_config.json": `{"chat_template": "{% for message in messages %}{{ message.content }}"}`,
	})
	tests := []struct {
		name string
		args []string
		want []string // substrings of the one line
	}{
		{"missing tokenizer directory", []string{"--tokenizer", missing}, []string{"--tokenizer " + missing, "no such file or directory"}},
		{"directory without tokenizer.json", []string{"--tokenizer", emptyDir}, []string{"tokenizer.json", "no such file or directory"}},
		{"malformed tokenizer.json", []string{"--tokenizer", malformed}, []string{"tokenizer.json", "malformed JSON"}},
		{"unsupported model type", []string{"--tokenizer", wordPiece}, []string{"tokenizer.json", "WordPiece"}},
		{"tokenizer chat template that does not parse", []string{"--tokenizer", brokenTemplate}, []string{"--tokenizer " + brokenTemplate + ": chat_template"}},
		{"--chat-template that does not parse", []string{"--chat-template", "{% if messages %}{{ messages[0].content }"},
			[]string{"--chat-template"}},
		{"--chat-template file that does not exist", []string{"--chat-template", filepath.Join(missing, "t.jinja")}, []string{"--chat-template", "failed to be opened"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var stdout, stderr strings.Builder
			args := append([]string{"--port", "0", "--log-level", "error"}, tt.args...)
			err := run(ctx, args, &stdout, &stderr)
			if code := exitCode(err); code != 2 {
				t.Fatalf("run(%q): exit status %d (%v), want 2; stderr:\n%s", args, code, err, stderr.String())
			}
			lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
			if len(lines) != 1 {
				t.Fatalf("stderr has %d lines, want one:\n%s", len(lines), stderr.String())
			}
			t.Logf("stderr: %s", lines[0])
			for _, w := range tt.want {
				if !strings.Contains(lines[0], w) {
					t.Errorf("stderr %q does not mention %q", lines[0], w)
				}
			}
		})
	}
}

// A --chat-template that raises at request time is a 400 in vLLM's error
// shape (with the built-in tokenizer too), and the server keeps serving.
func TestServe_ChatTemplateRaiseIsA400(t *testing.T) {
	tmpl := `{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}` +
		`{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}`
	cfg := loadConfig(t, map[string]any{"chat_template": tmpl, "log_level": "error"})
	srv := startServe(t, cfg, 0)
	bad := map[string]any{"model": cfg.ServedModelName[0], "messages": []map[string]any{
		{"role": "system", "content": "s"}, {"role": "user", "content": "u"}}}
	status, raw := srv.postJSON(t, "/v1/chat/completions", bad, nil)
	checkTemplateError(t, status, raw, "System role not supported")
	good := map[string]any{"model": cfg.ServedModelName[0], "max_tokens": 2, "messages": []map[string]any{{"role": "user", "content": "u"}}}
	for range 2 {
		if status, raw := srv.postJSON(t, "/v1/chat/completions", good, nil); status != 200 {
			t.Errorf("after the template error: %d %s", status, raw)
		}
	}
}
