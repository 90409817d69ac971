package hftokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLoadRejectsBadInput: every bad directory or file gives an error that
// names the file and the problem, never a panic.
func TestLoadRejectsBadInput(t *testing.T) {
	with := func(change func(tok map[string]any)) map[string]any {
		tok := tinyTokenizer()
		change(tok)
		return tok
	}
	model := func(tok map[string]any) map[string]any { return tok["model"].(map[string]any) }
	tests := []struct {
		name   string
		setup  func(t *testing.T) string
		errHas []string
	}{
		{"missing directory", func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope") }, []string{"tokenizer directory", "no such file"}},
		{"directory is a file", func(t *testing.T) string {
			path := filepath.Join(t.TempDir(), "file")
			os.WriteFile(path, []byte("x"), 0o644)
			return path
		}, []string{"not a directory"}},
		{"missing tokenizer.json", func(t *testing.T) string { return t.TempDir() }, []string{"tokenizer.json", "no such file"}},
		{"malformed tokenizer.json", func(t *testing.T) string {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, TokenizerFile), []byte(`{"model": {`), 0o644)
			return dir
		}, []string{"tokenizer.json", "malformed JSON"}},
		{"WordPiece model", func(t *testing.T) string {
			return writeTokenizerDir(t, with(func(tok map[string]any) { model(tok)["type"] = "WordPiece" }), nil)
		}, []string{"tokenizer.json", `model type "WordPiece" is not supported`}},
		{"Unigram model", func(t *testing.T) string {
			return writeTokenizerDir(t, with(func(tok map[string]any) { model(tok)["type"] = "Unigram" }), nil)
		}, []string{`model type "Unigram" is not supported`}},
		{"vocab not an object", func(t *testing.T) string {
			return writeTokenizerDir(t, with(func(tok map[string]any) { model(tok)["vocab"] = []any{"a"} }), nil)
		}, []string{"model.vocab"}},
		{"merge of unknown tokens", func(t *testing.T) string {
			return writeTokenizerDir(t, with(func(tok map[string]any) { model(tok)["merges"] = []any{"x yz"} }), nil)
		}, []string{"model.merges", "not in the vocabulary"}},
		{"huge token id", func(t *testing.T) string {
			return writeTokenizerDir(t, with(func(tok map[string]any) { model(tok)["vocab"].(map[string]any)["x"] = 4000000000 }), nil)
		}, []string{"model.vocab", `token "x" has id 4000000000`}},
		{"huge added token id", func(t *testing.T) string {
			return writeTokenizerDir(t, with(func(tok map[string]any) {
				tok["added_tokens"] = []any{map[string]any{"id": 1 << 30, "content": "<big>", "special": true}}
			}), nil)
		}, []string{`added token "<big>" has id 1073741824`}},
		{"BPE dropout", func(t *testing.T) string {
			return writeTokenizerDir(t, with(func(tok map[string]any) { model(tok)["dropout"] = 0.1 }), nil)
		}, []string{"dropout"}},
		{"unknown normalizer", func(t *testing.T) string {
			return writeTokenizerDir(t, with(func(tok map[string]any) { tok["normalizer"] = map[string]any{"type": "BertNormalizer"} }), nil)
		}, []string{`normalizer type "BertNormalizer" is not supported`}},
		{"unknown pre-tokenizer", func(t *testing.T) string {
			return writeTokenizerDir(t, with(func(tok map[string]any) { tok["pre_tokenizer"] = map[string]any{"type": "Whitespace"} }), nil)
		}, []string{"pre_tokenizer", `"Whitespace" is not supported`}},
		{"unknown split regex", func(t *testing.T) string {
			return writeTokenizerDir(t, with(func(tok map[string]any) {
				tok["pre_tokenizer"] = map[string]any{"type": "Split", "pattern": map[string]any{"Regex": `\w+|\s+`}, "behavior": "Isolated"}
			}), nil)
		}, []string{"pre_tokenizer", `regex "\\w+|\\s+" is not supported`}},
		{"GPT-2 ByteLevel split", func(t *testing.T) string {
			return writeTokenizerDir(t, with(func(tok map[string]any) {
				tok["pre_tokenizer"] = map[string]any{"type": "ByteLevel", "use_regex": true}
			}), nil)
		}, []string{"use_regex=true"}},
		{"unknown decoder", func(t *testing.T) string {
			return writeTokenizerDir(t, with(func(tok map[string]any) { tok["decoder"] = map[string]any{"type": "WordPiece"} }), nil)
		}, []string{"decoder", `"WordPiece" is not supported`}},
		{"no decoder", func(t *testing.T) string {
			return writeTokenizerDir(t, with(func(tok map[string]any) { tok["decoder"] = nil }), nil)
		}, []string{"decoder: none"}},
		{"unknown post-processor", func(t *testing.T) string {
			return writeTokenizerDir(t, with(func(tok map[string]any) { tok["post_processor"] = map[string]any{"type": "BertProcessing"} }), nil)
		}, []string{"post_processor", `"BertProcessing" is not supported`}},
		{"malformed tokenizer_config.json", func(t *testing.T) string {
			dir := writeTokenizerDir(t, tinyTokenizer(), nil)
			os.WriteFile(filepath.Join(dir, TokenizerConfigFile), []byte(`{"eos_token": `), 0o644)
			return dir
		}, []string{"tokenizer_config.json", "malformed JSON"}},
		{"eos_token not in the vocabulary", func(t *testing.T) string {
			return writeTokenizerDir(t, tinyTokenizer(), map[string]any{"eos_token": "<|missing|>"})
		}, []string{"tokenizer_config.json", `eos_token "<|missing|>" is not in the vocabulary`}},
		{"chat_template list without default", func(t *testing.T) string {
			return writeTokenizerDir(t, tinyTokenizer(), map[string]any{"chat_template": []any{map[string]any{"name": "tool_use", "template": "x"}}})
		}, []string{"chat_template", `no template named "default"`, `"tool_use"`}},
		{"chat_template of the wrong type", func(t *testing.T) string {
			return writeTokenizerDir(t, tinyTokenizer(), map[string]any{"chat_template": 42})
		}, []string{"chat_template", "want a string or a list"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, err := Load(tt.setup(t))
			if err == nil {
				t.Fatalf("Load succeeded (vocab %d), want an error containing %q", tok.VocabSize(), tt.errHas)
			}
			for _, want := range tt.errHas {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

// TestLoadReadsConfig covers the tokenizer_config.json shapes: token
// fields as strings or {content} objects, chat_template as a string, a
// list with "default", or chat_template.jinja beside the config.
func TestLoadReadsConfig(t *testing.T) {
	tests := []struct {
		name         string
		config       map[string]any
		jinja        string
		wantTemplate string
		wantEOS      string
		wantBOS      bool
	}{
		{"string fields", map[string]any{"chat_template": "{{ messages }}", "eos_token": "<|end|>"}, "", "{{ messages }}", "<|end|>", false},
		{"content objects", map[string]any{"eos_token": map[string]any{"content": "<|end|>", "lstrip": false}, "bos_token": map[string]any{"content": "<think>"}}, "", "", "<|end|>", true},
		{"template list", map[string]any{"chat_template": []any{
			map[string]any{"name": "tool_use", "template": "tools"},
			map[string]any{"name": "default", "template": "plain"},
		}}, "", "plain", "", false},
		{"template file", map[string]any{}, "from jinja file", "from jinja file", "", false},
		{"config template wins over file", map[string]any{"chat_template": "config"}, "file", "config", "", false},
		{"no config", nil, "", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeTokenizerDir(t, tinyTokenizer(), tt.config)
			if tt.jinja != "" {
				os.WriteFile(filepath.Join(dir, ChatTemplateFile), []byte(tt.jinja), 0o644)
			}
			tok, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := tok.ChatTemplate(); got != tt.wantTemplate {
				t.Errorf("ChatTemplate() = %q, want %q", got, tt.wantTemplate)
			}
			text, id, ok := tok.EOSToken()
			if ok != (tt.wantEOS != "") || text != tt.wantEOS || ok && id != 262 {
				t.Errorf("EOSToken() = %q, %d, %v; want %q", text, id, ok, tt.wantEOS)
			}
			if _, id, ok := tok.BOSToken(); ok != tt.wantBOS || ok && id != 263 {
				t.Errorf("BOSToken() = %d, %v; want ok=%v", id, ok, tt.wantBOS)
			}
		})
	}
}

// TestTinyTokenizer checks the pipeline on hand-computed expectations:
// merges in rank order, special-token split, byte-level round trip.
func TestTinyTokenizer(t *testing.T) {
	tok, err := Load(writeTokenizerDir(t, tinyTokenizer(), map[string]any{
		"added_tokens_decoder":         map[string]any{"300": map[string]any{"content": "<extra>", "special": true}},
		"clean_up_tokenization_spaces": false,
		"add_bos_token":                false,
	}))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		text string
		want []uint32
	}{
		{"hello", []uint32{261}},                    // h ello → hello
		{" hello", []uint32{260}},                   // Ġh ello → Ġhello (rank 4 before "h ello")
		{"hello<|end|>", []uint32{261, 262}},        // special token split out
		{"<think>hello", []uint32{263, 261}},        // non-special added token too
		{"he", []uint32{'h', 'e'}},                  // no merge "h e"
		{"hi <extra>", []uint32{'h', 'i', 32, 300}}, // config-only added token; "Ġ" (byte 32) has id 32
	}
	for _, tt := range tests {
		if got := tok.Encode(tt.text, false); !slices.Equal(got, tt.want) {
			t.Errorf("Encode(%q) = %v, want %v", tt.text, got, tt.want)
		}
		if got := tok.Decode(tok.Encode(tt.text, false), false); got != tt.text {
			t.Errorf("Decode(Encode(%q)) = %q", tt.text, got)
		}
	}
	if value, set := tok.AddBOSToken(); value || !set {
		t.Errorf("AddBOSToken() = %v, %v; want false, true", value, set)
	}
	if s, ok := tok.TokenString(260); !ok || s != "Ġhello" {
		t.Errorf("TokenString(260) = %q, %v", s, ok)
	}
	if _, ok := tok.TokenString(5000); ok {
		t.Error("TokenString(5000) found a token")
	}
	if tok.VocabSize() != 301 {
		t.Errorf("VocabSize() = %d, want 301 (config-only token 300 included)", tok.VocabSize())
	}
	if !tok.IsSpecial(262) || tok.IsSpecial(263) || !tok.IsSpecial(300) || tok.IsSpecial(261) {
		t.Error("IsSpecial: want 262 and 300 special, 261 and 263 not")
	}
	ordinary := tok.OrdinaryIDs()
	if len(ordinary) != 262 || slices.Contains(ordinary, 262) || slices.Contains(ordinary, 263) || slices.Contains(ordinary, 300) {
		t.Errorf("OrdinaryIDs() has %d ids (want 262: bytes and merges, no added tokens)", len(ordinary))
	}
}
