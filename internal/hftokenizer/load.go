package hftokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// File names inside a tokenizer directory.
const (
	TokenizerFile       = "tokenizer.json"
	TokenizerConfigFile = "tokenizer_config.json"
	ChatTemplateFile    = "chat_template.jinja"
)

// Load reads a Hugging Face tokenizer directory: tokenizer.json (required)
// and tokenizer_config.json (optional: chat template, BOS/EOS, decoding
// options), plus chat_template.jinja when the config has no template.
// Errors name the file and the problem, e.g. an unsupported component.
func Load(dir string) (*Tokenizer, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("tokenizer directory: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("tokenizer directory %s: not a directory", dir)
	}
	path := filepath.Join(dir, TokenizerFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	var file tokenizerFile
	if err := json.Unmarshal(data, &file); err != nil {
		return nil, fmt.Errorf("%s: malformed JSON: %w", path, err)
	}
	data = nil // let the raw file go before the tables are built
	t, err := build(&file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}

	configPath := filepath.Join(dir, TokenizerConfigFile)
	var config tokenizerConfigFile
	switch data, err := os.ReadFile(configPath); {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("tokenizer config: %w", err)
	default:
		if err := json.Unmarshal(data, &config); err != nil {
			return nil, fmt.Errorf("%s: malformed JSON: %w", configPath, err)
		}
	}
	if err := t.applyConfig(&config); err != nil {
		return nil, fmt.Errorf("%s: %w", configPath, err)
	}
	if t.chatTemplate == "" {
		templatePath := filepath.Join(dir, ChatTemplateFile)
		switch data, err := os.ReadFile(templatePath); {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return nil, fmt.Errorf("chat template: %w", err)
		default:
			t.chatTemplate = string(data)
		}
	}
	t.freeze()
	return t, nil
}

// build compiles tokenizer.json into a Tokenizer.
func build(file *tokenizerFile) (*Tokenizer, error) {
	t := &Tokenizer{addedByContent: map[string]int{}, cleanUpSpaces: true}
	var err error
	if t.normalize, err = compileNormalizer(file.Normalizer); err != nil {
		return nil, err
	}
	if t.preTokenize, err = compilePreTokenizer(file.PreTokenizer); err != nil {
		return nil, err
	}
	if t.model, err = compileBPE(file.Model, t.preTokenize.byteLevel); err != nil {
		return nil, err
	}
	for _, a := range file.AddedTokens {
		if a.ID >= maxTokenID {
			return nil, fmt.Errorf("added token %q has id %d, beyond %d", a.Content, a.ID, maxTokenID-1)
		}
		t.addAddedToken(a)
	}
	if t.postProcess, err = compilePostProcessor(file.PostProcessor, t); err != nil {
		return nil, err
	}
	if t.decoder, err = compileDecoder(file.Decoder); err != nil {
		return nil, err
	}
	t.indexTokens()
	return t, nil
}

// addAddedToken registers an added token; like tokenizers.js, the model's
// token map learns it too.
func (t *Tokenizer) addAddedToken(a addedTokenJSON) {
	token := addedToken{id: a.ID, content: a.Content, special: a.Special, lstrip: a.LStrip, rstrip: a.RStrip, normalized: !a.Special}
	if a.Normalized != nil {
		token.normalized = *a.Normalized
	}
	index := len(t.added)
	t.added = append(t.added, token)
	t.model.tokenIDs[token.content] = token.id
	t.addedByContent[token.content] = index
	if token.normalized && t.normalize != nil {
		t.addedByContent[t.normalize(token.content)] = index
	}
}

// indexTokens builds the per-id tables and the added-token tries.
func (t *Tokenizer) indexTokens() {
	size := len(t.model.vocab)
	for _, a := range t.added {
		size = max(size, int(a.id)+1)
	}
	t.tokens = make([]string, size)
	copy(t.tokens, t.model.vocab)
	t.special = make([]bool, size)
	t.isAdded = make([]bool, size)
	t.rawTrie, t.normalizedTrie = newTokenTrie(), newTokenTrie()
	for i, a := range t.added {
		t.tokens[a.id] = a.content
		t.isAdded[a.id] = true
		t.special[a.id] = a.special
		if a.normalized && t.normalize != nil {
			t.normalizedTrie.insert(t.normalize(a.content), i)
		} else {
			t.rawTrie.insert(a.content, i)
		}
	}
	t.decoder.index(t)
}

// applyConfig reads tokenizer_config.json (an empty config when the file
// is absent).
func (t *Tokenizer) applyConfig(c *tokenizerConfigFile) error {
	if c.RemoveSpace != nil && *c.RemoveSpace {
		return fmt.Errorf("remove_space=true is not supported")
	}
	if c.DoLowercaseAndRemoveAcc != nil && *c.DoLowercaseAndRemoveAcc {
		return fmt.Errorf("do_lowercase_and_remove_accent=true is not supported")
	}
	// Tokens only the config knows (older exports) are added as
	// transformers does; tokenizer.json wins where both define an id.
	grew := false
	for key, a := range c.AddedTokensDecoder {
		id, err := strconv.ParseUint(key, 10, 32)
		if err != nil || id >= maxTokenID {
			return fmt.Errorf("added_tokens_decoder: key %q is not a token id below %d", key, maxTokenID)
		}
		if int(id) < len(t.tokens) && t.tokens[id] != "" {
			continue
		}
		a.ID = uint32(id)
		t.addAddedToken(a)
		grew = true
	}
	if grew {
		t.indexTokens()
	}
	for i, raw := range c.AdditionalSpecialTokens {
		text, err := tokenText(raw)
		if err != nil {
			return fmt.Errorf("additional_special_tokens[%d]: %w", i, err)
		}
		if id, ok := t.TokenID(text); ok && int(id) < len(t.special) {
			t.special[id] = true
		}
	}
	if c.CleanUpTokenizationSpaces != nil {
		t.cleanUpSpaces = *c.CleanUpTokenizationSpaces
	}
	t.addBOS = c.AddBOSToken
	var err error
	if t.bos, err = t.namedToken("bos_token", c.BOSToken); err != nil {
		return err
	}
	if t.eos, err = t.namedToken("eos_token", c.EOSToken); err != nil {
		return err
	}
	if t.chatTemplate, err = chatTemplate(c.ChatTemplate); err != nil {
		return fmt.Errorf("chat_template: %w", err)
	}
	return nil
}

func (t *Tokenizer) namedToken(field string, raw json.RawMessage) (namedToken, error) {
	if isNull(raw) {
		return namedToken{}, nil
	}
	text, err := tokenText(raw)
	if err != nil {
		return namedToken{}, fmt.Errorf("%s: %w", field, err)
	}
	id, ok := t.TokenID(text)
	if !ok {
		return namedToken{}, fmt.Errorf("%s %q is not in the vocabulary", field, text)
	}
	return namedToken{text: text, id: id, ok: true}, nil
}

// tokenText reads a token given as a string or as {"content": …}.
func tokenText(raw json.RawMessage) (string, error) {
	var text string
	if err := json.Unmarshal(raw, &text); err == nil {
		return text, nil
	}
	var object struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(raw, &object); err != nil || object.Content == nil {
		return "", fmt.Errorf("want a string or an object with content, got %s", abbreviate(raw))
	}
	return *object.Content, nil
}

// chatTemplate reads chat_template: a string, or a list of {name,
// template} where the one named "default" wins.
func chatTemplate(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var text string
	if err := json.Unmarshal(raw, &text); err == nil {
		return text, nil
	}
	var named []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(raw, &named); err != nil {
		return "", fmt.Errorf("want a string or a list of {name, template}, got %s", abbreviate(raw))
	}
	for _, n := range named {
		if n.Name == "default" {
			return n.Template, nil
		}
	}
	names := make([]string, len(named))
	for i, n := range named {
		names[i] = strconv.Quote(n.Name)
	}
	return "", fmt.Errorf("no template named \"default\" among [%s]", strings.Join(names, ", "))
}

func abbreviate(raw json.RawMessage) string {
	if len(raw) > 60 {
		return string(raw[:60]) + "…"
	}
	return string(raw)
}
