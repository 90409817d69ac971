package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

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
//
// A --model that is a local path (/…, ./…, ../…, ~/…) must exist, as vLLM
// requires: serving a missing directory with the built-in tokenizer would
// silently give other token counts and block hashes than the real model's.
// A tokenizer.json of more than largeTokenizer bytes is announced on
// stderr while it loads, and its load time after.
func loadTextModel(cfg *config.Config, stderr io.Writer) (tokenizer.Model, api.ChatRenderer, error) {
	dir := cfg.Tokenizer
	if dir == "" && isTokenizerDir(cfg.Model) {
		dir = cfg.Model
	}
	if dir == "" && isLocalPath(cfg.Model) {
		if _, err := os.Stat(cfg.Model); err != nil {
			return nil, nil, configError("model %s: no such directory (a local path must exist, as for vllm serve; a name that is no path, such as Qwen/Qwen3-8B, is served with the built-in tokenizer)", cfg.Model)
		}
	}
	var (
		model      tokenizer.Model
		source     = cfg.ChatTemplate
		bos, eos   string
		sourceFlag = "--chat-template"
	)
	if dir != "" {
		announce := false
		if st, err := os.Stat(filepath.Join(dir, hftokenizer.TokenizerFile)); err == nil && st.Size() > largeTokenizer && stderr != nil {
			announce = true
			fmt.Fprintf(stderr, "loading tokenizer %s (%.0f MB) …\n", dir, float64(st.Size())/1e6)
		}
		start := time.Now()
		tok, err := hftokenizer.Load(dir)
		if err != nil {
			return nil, nil, configError("--tokenizer %s: %v", dir, err)
		}
		if announce {
			fmt.Fprintf(stderr, "loaded tokenizer %s in %.1f s\n", dir, time.Since(start).Seconds())
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

// largeTokenizer is the tokenizer.json size above which its load is
// announced: loading one takes about a second per 10 MB.
const largeTokenizer = 2 << 20

// isLocalPath reports whether a --model value can only be a file system
// path (Hugging Face ids never start with these).
func isLocalPath(model string) bool {
	for _, p := range []string{"/", "./", "../", "~/", "."} {
		if strings.HasPrefix(model, p) && (p != "." || model == ".") {
			return true
		}
	}
	return false
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
