package hftokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// tinyTokenizer returns a small but complete byte-level BPE tokenizer.json
// (Qwen2 split, 256 byte symbols, a few merges, two special tokens) as a
// JSON object the tests can alter before writing.
func tinyTokenizer() map[string]any {
	vocab := map[string]any{}
	for b := 0; b < 256; b++ {
		vocab[string(byteLevelAlphabet[b])] = b
	}
	merges := []any{"Ġ h", "e l", "el l", "ell o", "Ġh ello", "h ello"}
	next := 256
	for _, m := range []string{"Ġh", "el", "ell", "ello", "Ġhello", "hello"} {
		vocab[m] = next
		next++
	}
	return map[string]any{
		"version": "1.0",
		"added_tokens": []any{
			map[string]any{"id": 262, "content": "<|end|>", "special": true, "normalized": false},
			map[string]any{"id": 263, "content": "<think>", "special": false, "normalized": false},
		},
		"normalizer": map[string]any{"type": "NFC"},
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": knownSplitPatterns[0].regex}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		}},
		"post_processor": map[string]any{"type": "ByteLevel"},
		"decoder":        map[string]any{"type": "ByteLevel"},
		"model":          map[string]any{"type": "BPE", "vocab": vocab, "merges": merges, "ignore_merges": false},
	}
}

// writeTokenizerDir writes tokenizer.json (and tokenizer_config.json when
// config is not nil) into a fresh directory.
func writeTokenizerDir(t *testing.T, tokenizer, config map[string]any) string {
	t.Helper()
	dir := t.TempDir()
	writeJSON(t, filepath.Join(dir, TokenizerFile), tokenizer)
	if config != nil {
		writeJSON(t, filepath.Join(dir, TokenizerConfigFile), config)
	}
	return dir
}

func writeJSON(t *testing.T, path string, value any) {
	t.Helper()
	data, err := json.Marshal(value)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
