package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mocker-server/mocker-server/internal/api"
	"github.com/mocker-server/mocker-server/internal/chattemplate"
	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/hftokenizer"
	"github.com/mocker-server/mocker-server/internal/tokenizer"
)

// loadTextModel loads the tokenizer and chat template the server speaks
// for. Without --tokenizer (and without a --model directory holding a
// tokenizer.json, which vLLM also reads as the tokenizer) both stay nil:
// the built-in tokenizer and ChatML template. A problem with the files is
// a configuration error (one line, exit status 2).
func loadTextModel(cfg *config.Config) (tokenizer.Model, api.ChatRenderer, error) {
	dir := cfg.Tokenizer
	if dir == "" && isTokenizerDir(cfg.Model) {
		dir = cfg.Model
	}
	var (
		model      tokenizer.Model
		source     = cfg.ChatTemplate
		bos, eos   string
		sourceFlag = "--chat-template"
	)
	if dir != "" {
		tok, err := hftokenizer.Load(dir)
		if err != nil {
			return nil, nil, configError("--tokenizer %s: %v", dir, err)
		}
		model = tok.Model()
		bos, _, _ = tok.BOSToken()
		eos, _, _ = tok.EOSToken()
		if source == "" {
			source, sourceFlag = tok.ChatTemplate(), "--tokenizer "+dir+": chat_template"
			if source == "" {
				return model, noChatTemplate{}, nil
			}
		}
	}
	if source == "" {
		return model, nil, nil
	}
	// --chat-template is resolved like vLLM's flag (a path, or a literal
	// whose backslash escapes are decoded); a tokenizer's own template is
	// used as written: decoding it would mangle non-ASCII text such as
	// DeepSeek's <｜User｜>.
	parse := chattemplate.Parse
	if cfg.ChatTemplate != "" {
		parse = chattemplate.Load
	}
	tmpl, err := parse(source)
	if err != nil {
		return nil, nil, configError("%s: %v", sourceFlag, err)
	}
	return model, chattemplate.NewRenderer(tmpl, bos, eos), nil
}

// isTokenizerDir reports whether path is a directory with a tokenizer.json.
func isTokenizerDir(path string) bool {
	st, err := os.Stat(filepath.Join(path, "tokenizer.json"))
	return err == nil && !st.IsDir()
}

func configError(format string, args ...any) error {
	return &config.Error{Problems: []string{fmt.Sprintf(format, args...)}}
}

// noChatTemplate answers chat requests for a tokenizer without a chat
// template the way vLLM does: a 400 saying a template is needed.
type noChatTemplate struct{}

func (noChatTemplate) RenderChat(json.RawMessage, json.RawMessage, bool, bool, map[string]json.RawMessage) (string, error) {
	return "", errors.New("As of transformers v4.44, default chat template is no longer allowed, " +
		"so you must provide a chat template if the tokenizer does not define one.")
}
