// Package endpoints is the auxiliary endpoints beside generation: /health,
// /ping, /version, /load, /metrics, /v1/models, /tokenize, /detokenize and
// /reset_prefix_cache, each a handler over the pipeline's Server.
package endpoints

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/mocker-server/mocker-server/internal/api/input"
	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/httperr"
)

// HandleHealth serves /health and /ping: 200 with an empty body, or 503
// when an engine actor died (the startup gate answers 503 before it).
func HandleHealth(s *pipeline.Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !s.Healthy() {
			wire.WriteError(w, wire.ErrEngineDead)
			return
		}
		if s.HealthFailing() {
			wire.WriteError(w, pipeline.ErrHealthFailing)
			return
		}
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusOK)
	})
}

func HandleVersion(version string) http.Handler {
	body := struct {
		Version string `json:"version"`
	}{version}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		wire.Encode(w, http.StatusOK, body)
	})
}

// HandleLoad serves GET /load: generation requests in flight.
func HandleLoad(s *pipeline.Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		b := strconv.AppendInt([]byte(`{"server_load":`), s.InFlight(), 10)
		httperr.Write(w, http.StatusOK, append(b, '}'))
	})
}

// HandleMetrics serves GET /metrics with the injected handler, or an empty
// exposition until metrics are wired.
func HandleMetrics(h http.Handler) http.Handler {
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

func HandleModels(s *pipeline.Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		now := s.Now().Unix()
		names := s.Opts().Model.ServedNames
		if len(names) == 0 {
			names = []string{s.Opts().Model.ServedName()}
		}
		adapters := s.Adapters().List()
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
			list.Data = append(list.Data, card(name, s.Opts().Model.Path, nil, &s.Opts().Model.MaxModelLen))
		}
		for _, a := range adapters {
			list.Data = append(list.Data, card(a.Name, a.Path, &a.Parent, nil))
		}
		wire.Encode(w, http.StatusOK, list)
	})
}

type tokenizeResponse struct {
	Count       int      `json:"count"`
	MaxModelLen int      `json:"max_model_len"`
	Tokens      []uint32 `json:"tokens"`
	TokenStrs   []string `json:"token_strs"` // nil = null
}

// HandleTokenize serves POST /tokenize: the completion
// form {prompt} or the chat form {messages}.
func HandleTokenize(s *pipeline.Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o, e := wire.DecodeBody(w, r, s.Opts().HTTP.MaxRequestBodyBytes)
		if e != nil {
			wire.WriteError(w, e)
			return
		}
		hasPrompt, hasMessages := o.Has("prompt"), o.Has("messages")
		var text string
		var addSpecial bool
		var mmIDs []uint32 // a multimodal chat's expanded prompt
		switch {
		case hasPrompt && hasMessages:
			wire.WriteError(w, wire.ErrInvalid("", "Either `prompt` or `messages` must be given, not both."))
			return
		case hasPrompt:
			text, _ = o.String("prompt")
			addSpecial = o.Bool("add_special_tokens", true)
		case hasMessages:
			msgs, parts, badPart := input.ParseMessages(o)
			var tools []byte
			if a, ok := o.Kind("tools", "array"); ok {
				tools = wire.CompactJSON(a)
			}
			addGen := o.Bool("add_generation_prompt", true)
			contFinal := o.Bool("continue_final_message", false)
			addSpecial = o.Bool("add_special_tokens", false)
			kw := pipeline.ReadMMKwargs(o)
			if e := o.Failed(); e == nil {
				if e := pipeline.CheckMessages(msgs, badPart, ""); e != nil {
					o.Fail(e)
				}
				if e := pipeline.CheckChatFlags(addGen, contFinal); e != nil {
					o.Fail(e)
				}
			}
			if e := o.Failed(); e == nil && len(parts) > 0 {
				var re *wire.APIError
				if mmIDs, re = s.TokenizeMultimodal(o, msgs, parts, kw, tools, addGen, contFinal, addSpecial); re != nil {
					o.Fail(re)
				}
			} else if e == nil {
				var re *wire.APIError
				if text, re = s.RenderChat(o, msgs, tools, addGen, contFinal); re != nil {
					o.Fail(re)
				}
			}
		default:
			wire.WriteError(w, wire.ErrBadRequest("prompt", "Field required: prompt (or messages)"))
			return
		}
		strs := o.Bool("return_token_strs", false)
		if e := o.Failed(); e != nil {
			wire.WriteError(w, e)
			return
		}
		if e := s.CheckModel(o); e != nil {
			wire.WriteError(w, e)
			return
		}
		resp := tokenizeResponse{Tokens: mmIDs, MaxModelLen: s.Opts().Model.MaxModelLen}
		if mmIDs == nil {
			resp.Tokens = s.Tokenizer().Encode(text, addSpecial)
		}
		resp.Count = len(resp.Tokens)
		switch {
		case strs && mmIDs != nil:
			resp.TokenStrs = make([]string, len(mmIDs))
			for i, id := range mmIDs {
				resp.TokenStrs[i] = s.Tokenizer().TokenText(id)
			}
		case strs:
			resp.TokenStrs = s.Tokenizer().TokenStrings(text, resp.Tokens)
		}
		wire.Encode(w, http.StatusOK, resp)
	})
}

// HandleDetokenize serves POST /detokenize.
func HandleDetokenize(s *pipeline.Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o, e := wire.DecodeBody(w, r, s.Opts().HTTP.MaxRequestBodyBytes)
		if e != nil {
			wire.WriteError(w, e)
			return
		}
		if !o.Has("tokens") {
			wire.WriteError(w, wire.ErrFieldRequired("tokens"))
			return
		}
		elems, _ := o.Array("tokens")
		var ids []uint32
		var bad string
		if e := o.Failed(); e == nil {
			ids, bad, e = input.ParseIDs(elems, "tokens", s.Tokenizer().VocabSize())
			if e != nil {
				o.Fail(e)
			}
		}
		if e := o.Failed(); e != nil {
			wire.WriteError(w, e)
			return
		}
		if e := s.CheckModel(o); e != nil {
			wire.WriteError(w, e)
			return
		}
		if bad != "" {
			wire.WriteError(w, wire.ErrInvalid("tokens", "Token id %s is out of vocabulary", bad))
			return
		}
		wire.Encode(w, http.StatusOK, struct {
			Prompt string `json:"prompt"`
		}{s.Tokenizer().DecodeLiteral(ids)})
	})
}

// HandleResetPrefixCache serves POST /reset_prefix_cache:
// every rank is asked; 409 lists the ranks whose blocks are in use.
func HandleResetPrefixCache(s *pipeline.Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var busy []string
		for rank, e := range s.Engines() {
			ok, err := e.ResetPrefixCache(r.Context())
			if err != nil {
				if r.Context().Err() != nil {
					return // client gone
				}
				wire.WriteError(w, wire.ErrEngineDead)
				return
			}
			if !ok {
				busy = append(busy, strconv.Itoa(rank))
			}
		}
		if len(busy) > 0 {
			wire.WriteError(w, &wire.APIError{Status: http.StatusConflict, Type: wire.TypeConflict,
				Message: fmt.Sprintf("Prefix cache reset failed: blocks are in use on DP rank(s) %s.", strings.Join(busy, ", "))})
			return
		}
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusOK)
	})
}
