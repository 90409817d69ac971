package api

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/mocker-server/mocker-server/internal/httperr"
)

// handleHealth serves /health and /ping: 200 with an empty body, or 503
// when an engine actor died (the startup gate answers 503 before it).
func handleHealth(s *Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !s.healthy() {
			writeError(w, errEngineDead)
			return
		}
		if s.healthFailing.Load() {
			writeError(w, errHealthFailing)
			return
		}
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusOK)
	})
}

func handleVersion(version string) http.Handler {
	body := struct {
		Version string `json:"version"`
	}{version}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		encode(w, http.StatusOK, body)
	})
}

// handleLoad serves GET /load: generation requests in flight.
func handleLoad(s *Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		b := strconv.AppendInt([]byte(`{"server_load":`), s.inflight.Load(), 10)
		httperr.Write(w, http.StatusOK, append(b, '}'))
	})
}

// handleMetrics serves GET /metrics with the injected handler, or an empty
// exposition until metrics are wired.
func handleMetrics(h http.Handler) http.Handler {
	if h != nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusOK)
	})
}

// modelCard is one entry of GET /v1/models, with vLLM's fields.
type modelCard struct {
	ID          string            `json:"id"`
	Object      string            `json:"object"`
	Created     int64             `json:"created"`
	OwnedBy     string            `json:"owned_by"`
	Root        string            `json:"root"`
	Parent      *string           `json:"parent"`
	MaxModelLen *int              `json:"max_model_len"` // null for adapters, as in vLLM
	Permission  []modelPermission `json:"permission"`
}

type modelPermission struct {
	ID                 string  `json:"id"`
	Object             string  `json:"object"`
	Created            int64   `json:"created"`
	AllowCreateEngine  bool    `json:"allow_create_engine"`
	AllowSampling      bool    `json:"allow_sampling"`
	AllowLogprobs      bool    `json:"allow_logprobs"`
	AllowSearchIndices bool    `json:"allow_search_indices"`
	AllowView          bool    `json:"allow_view"`
	AllowFineTuning    bool    `json:"allow_fine_tuning"`
	Organization       string  `json:"organization"`
	Group              *string `json:"group"`
	IsBlocking         bool    `json:"is_blocking"`
}

type modelList struct {
	Object string      `json:"object"`
	Data   []modelCard `json:"data"`
}

func handleModels(s *Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		now := s.now().Unix()
		names := s.opts.Model.ServedNames
		if len(names) == 0 {
			names = []string{s.opts.Model.ServedName()}
		}
		adapters := s.adapters.list()
		list := modelList{Object: "list", Data: make([]modelCard, 0, len(names)+len(adapters))}
		card := func(id, root string, parent *string, maxLen *int) modelCard {
			var permID [16]byte
			_, _ = rand.Read(permID[:])
			return modelCard{
				ID: id, Object: "model", Created: now, OwnedBy: "vllm", Root: root, Parent: parent,
				MaxModelLen: maxLen,
				Permission: []modelPermission{{
					ID: "modelperm-" + hex.EncodeToString(permID[:]), Object: "model_permission", Created: now,
					AllowSampling: true, AllowLogprobs: true, AllowView: true, Organization: "*",
				}},
			}
		}
		for _, name := range names {
			list.Data = append(list.Data, card(name, s.opts.Model.Path, nil, &s.opts.Model.MaxModelLen))
		}
		for _, a := range adapters {
			list.Data = append(list.Data, card(a.Name, a.path, &a.parent, nil))
		}
		encode(w, http.StatusOK, list)
	})
}

// checkModel applies the model rule to an optional model field: absent is
// fine, otherwise it must be a served model name (404).
func (s *Server) checkModel(o object) *apiError {
	model, ok := o.String("model")
	if e := o.failed(); e != nil {
		return e
	}
	if _, isAdapter := s.adapters.lookup(model); ok && !s.served[model] && !isAdapter {
		return &apiError{Status: http.StatusNotFound, Type: typeNotFound,
			Message: "The model `" + model + "` does not exist.", Param: "model"}
	}
	return nil
}

type tokenizeResponse struct {
	Count       int      `json:"count"`
	MaxModelLen int      `json:"max_model_len"`
	Tokens      []uint32 `json:"tokens"`
	TokenStrs   []string `json:"token_strs"` // nil = null
}

// handleTokenize serves POST /tokenize: the completion
// form {prompt} or the chat form {messages}.
func handleTokenize(s *Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o, e := decodeBody(w, r, s.opts.HTTP.MaxRequestBodyBytes)
		if e != nil {
			writeError(w, e)
			return
		}
		hasPrompt, hasMessages := o.has("prompt"), o.has("messages")
		var text string
		var addSpecial bool
		switch {
		case hasPrompt && hasMessages:
			writeError(w, errInvalid("", "Either `prompt` or `messages` must be given, not both."))
			return
		case hasPrompt:
			text, _ = o.String("prompt")
			addSpecial = o.Bool("add_special_tokens", true)
		case hasMessages:
			msgs, badPart := parseMessages(o)
			var tools []byte
			if a, ok := o.Kind("tools", "array"); ok {
				tools = compactJSON(a)
			}
			addGen := o.Bool("add_generation_prompt", true)
			contFinal := o.Bool("continue_final_message", false)
			addSpecial = o.Bool("add_special_tokens", false)
			if e := o.failed(); e == nil {
				if e := checkMessages(msgs, badPart, ""); e != nil {
					o.fail(e)
				}
				if e := checkChatFlags(addGen, contFinal); e != nil {
					o.fail(e)
				}
			}
			if e := o.failed(); e == nil {
				var re *apiError
				if text, re = s.renderChat(o, msgs, tools, addGen, contFinal); re != nil {
					o.fail(re)
				}
			}
		default:
			writeError(w, errBadRequest("prompt", "Field required: prompt (or messages)"))
			return
		}
		strs := o.Bool("return_token_strs", false)
		if e := o.failed(); e != nil {
			writeError(w, e)
			return
		}
		if e := s.checkModel(o); e != nil {
			writeError(w, e)
			return
		}
		resp := tokenizeResponse{Tokens: s.tok.Encode(text, addSpecial), MaxModelLen: s.opts.Model.MaxModelLen}
		resp.Count = len(resp.Tokens)
		if strs {
			resp.TokenStrs = s.tok.TokenStrings(text, resp.Tokens)
		}
		encode(w, http.StatusOK, resp)
	})
}

// handleDetokenize serves POST /detokenize.
func handleDetokenize(s *Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o, e := decodeBody(w, r, s.opts.HTTP.MaxRequestBodyBytes)
		if e != nil {
			writeError(w, e)
			return
		}
		if !o.has("tokens") {
			writeError(w, errFieldRequired("tokens"))
			return
		}
		elems, _ := o.Array("tokens")
		var ids []uint32
		var bad string
		if e := o.failed(); e == nil {
			ids, bad, e = parseIDs(elems, "tokens", s.tok.VocabSize())
			if e != nil {
				o.fail(e)
			}
		}
		if e := o.failed(); e != nil {
			writeError(w, e)
			return
		}
		if e := s.checkModel(o); e != nil {
			writeError(w, e)
			return
		}
		if bad != "" {
			writeError(w, errInvalid("tokens", "Token id %s is out of vocabulary", bad))
			return
		}
		encode(w, http.StatusOK, struct {
			Prompt string `json:"prompt"`
		}{s.tok.DecodeLiteral(ids)})
	})
}

// handleResetPrefixCache serves POST /reset_prefix_cache:
// every rank is asked; 409 lists the ranks whose blocks are in use.
func handleResetPrefixCache(s *Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var busy []string
		for rank, e := range s.engines {
			ok, err := e.ResetPrefixCache(r.Context())
			if err != nil {
				if r.Context().Err() != nil {
					return // client gone
				}
				writeError(w, errEngineDead)
				return
			}
			if !ok {
				busy = append(busy, strconv.Itoa(rank))
			}
		}
		if len(busy) > 0 {
			writeError(w, &apiError{Status: http.StatusConflict, Type: typeConflict,
				Message: fmt.Sprintf("Prefix cache reset failed: blocks are in use on DP rank(s) %s.", strings.Join(busy, ", "))})
			return
		}
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusOK)
	})
}
