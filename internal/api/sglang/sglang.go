// Package sglang is SGLang's own endpoints (/generate, /get_model_info,
// /get_server_info, /flush_cache, /health_generate) when the mock plays
// SGLang; /generate runs on the shared pipeline with its own body reader,
// encoder and error shape.
package sglang

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/mocker-server/mocker-server/internal/api/input"
	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/jsonenc"
	"github.com/mocker-server/mocker-server/internal/plan"
)

// MountSGLang adds SGLang's native endpoints in sglang mode (docs/sglang.md):
// POST /generate, GET /get_server_info (and /server_info), GET
// /get_model_info, GET|POST /flush_cache and GET /health_generate.
func MountSGLang(s *pipeline.Server, r chi.Router) {
	if s.Opts().SGLang == nil {
		return
	}
	gate := s.StartupGate
	r.Method(http.MethodPost, "/generate", gate(s.DrainGate(pipeline.HandleSurface(s, sglangSurface{}))))
	r.Method(http.MethodGet, "/get_server_info", handleSGLangServerInfo(s))
	r.Method(http.MethodGet, "/server_info", handleSGLangServerInfo(s))
	r.Method(http.MethodGet, "/get_model_info", handleSGLangModelInfo(s))
	r.Method(http.MethodGet, "/flush_cache", handleSGLangFlushCache(s))
	r.Method(http.MethodPost, "/flush_cache", handleSGLangFlushCache(s))
	r.Method(http.MethodGet, "/health_generate", gate(handleSGLangHealthGenerate(s)))
}

// sglangDefaultMaxNewTokens is SGLang's sampling_params.max_new_tokens
// default.
const sglangDefaultMaxNewTokens = 128

// writeSGLangError answers in SGLang's error shape, {"error":{"message":…}},
// with the error's status.
func writeSGLangError(w http.ResponseWriter, e *wire.APIError) {
	type msg struct {
		Message string `json:"message"`
	}
	wire.Encode(w, e.Status, struct {
		Error msg `json:"error"`
	}{msg{e.Message}})
}

// sglangFields are the /generate fields the server reads; others are
// logged at debug level and ignored.
var sglangFields = wire.SetOf("text", "input_ids", "sampling_params", "stream", "rid",
	"return_logprob", "return_hidden_states", "custom_logit_processor", "input_embeds",
	"image_data", "video_data", "audio_data")

// sglangInput reads a /generate body straight into the typed generation
// input: text or input_ids are the prompts (a string, strings, ids or id
// lists, as completions' prompt), sampling_params the sampling fields under
// SGLang's names. batch says whether the input was a list (the answer is
// then a list too).
func sglangInput(o wire.Object, vocabSize int) (in *pipeline.GenInput, batch bool, e *wire.APIError) {
	if e := refuseUnsupported(o); e != nil {
		return nil, false, e
	}
	text, hasText := o.Raw("text")
	ids, hasIDs := o.Raw("input_ids")
	hasText = hasText && !wire.IsNull(text)
	hasIDs = hasIDs && !wire.IsNull(ids)
	switch {
	case !hasText && !hasIDs:
		return nil, false, wire.ErrBadRequest("", "Either text, input_ids or input_embeds should be provided.")
	case hasText && hasIDs:
		return nil, false, wire.ErrBadRequest("", "Only one of text, input_ids or input_embeds should be provided.")
	}
	key, prompt := "text", text
	if hasIDs {
		key, prompt = "input_ids", ids
	}
	if prompt[0] == '[' {
		// A list of texts, or a list of id lists; a flat id list is one prompt.
		var list []json.RawMessage
		if json.Unmarshal(prompt, &list) == nil && len(list) > 0 {
			batch = hasText || (len(list[0]) > 0 && list[0][0] == '[')
		}
	}
	in = &pipeline.GenInput{Body: pipeline.EmptyObject(), IncludeUsage: true}
	in.Prompts, in.EmptyPrompt, in.BadTokenID = input.ParsePrompt(o, key, vocabSize)
	sp, ok := o.Object("sampling_params")
	if !ok {
		sp = wire.Object{Err: o.Err} // absent: every default
	}
	readSGLangSampling(sp, in)
	// The constraint phase reads regex / json_schema / ebnf /
	// structural_tag from sampling_params itself.
	in.Body, in.SGLangConstraint = sp, true
	in.MaxTokens, in.MaxTokensName = sp.Int("max_new_tokens"), "max_new_tokens"
	if !in.MaxTokens.Set {
		in.MaxTokens = wire.Num{I: sglangDefaultMaxNewTokens, F: sglangDefaultMaxNewTokens,
			Raw: strconv.Itoa(sglangDefaultMaxNewTokens), Set: true}
	}
	in.Stream = o.Bool("stream", false)
	in.BodyID, _ = o.String("rid")
	return in, batch, o.Failed()
}

// unsupportedFields are the /generate fields SGLang applies and the mock
// cannot (no model: no logprobs, hidden states, logit processors,
// embeddings or media): asking for them is a 400, not a silent no-op.
// false, null and empty values ask for nothing and pass.
var unsupportedFields = []string{"return_logprob", "return_hidden_states", "custom_logit_processor",
	"input_embeds", "image_data", "video_data", "audio_data"}

// refuseUnsupported answers 400 "… is not supported by mocker-server" for
// the first unsupportedFields entry the body sets, and for a non-empty
// sampling_params.logit_bias; the gRPC service refuses the same fields
// (internal/grpcfront/sglang).
func refuseUnsupported(o wire.Object) *wire.APIError {
	for _, key := range unsupportedFields {
		if raw, ok := o.Raw(key); ok && asksSomething(raw) {
			return wire.ErrInvalid(key, "%s is not supported by mocker-server", key)
		}
	}
	if sp, ok := o.Object("sampling_params"); ok {
		if raw, ok := sp.Raw("logit_bias"); ok && asksSomething(raw) {
			return wire.ErrInvalid("sampling_params.logit_bias", "sampling_params.logit_bias is not supported by mocker-server")
		}
	}
	return o.Failed()
}

// asksSomething reports whether a JSON value asks for a feature: anything
// but null, false, "", [] and {}.
func asksSomething(raw json.RawMessage) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return true
	}
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// readSGLangSampling reads sampling_params under SGLang's names.
func readSGLangSampling(sp wire.Object, in *pipeline.GenInput) {
	in.MinTokens = sp.Int("min_new_tokens")
	in.Stop, in.StopSet = input.ParseStop(sp)
	in.StopIDs, in.StopIDCount = pipeline.ParseStopIDs(sp)
	in.IgnoreEOS = sp.Bool("ignore_eos", false)
	in.N = sp.Int("n")
	in.Sampling = pipeline.ReadSampling(sp)
	in.Seed = sp.Int("sampling_seed")
}

// sglangSurface is POST /generate, SGLang's native generation endpoint,
// served by the shared generation path (HandleSurface): the same parsing,
// planning, faults, limits, request ids, engine and stream delivery as
// /v1/completions, with SGLang's result objects, stream and error shape.
type sglangSurface struct{}

// sglangRequest holds what the SGLang rendering needs.
type sglangRequest struct {
	batch bool      // the input was a list: the answer is a list too
	start time.Time // arrival, for meta_info.e2e_latency
}

func (sglangSurface) Parse(s *pipeline.Server, o wire.Object, r *http.Request) (*pipeline.GenRequest, *wire.APIError) {
	start := s.Now()
	if e := s.CheckGenerates(); e != nil {
		return nil, e
	}
	s.LogUnknownFields(o, r, sglangFields)
	in, batch, e := sglangInput(o, s.Tokenizer().VocabSize())
	if e != nil {
		return nil, e
	}
	g, e := s.BuildGenerate(in, r)
	if e != nil {
		return nil, e
	}
	g.Ext = &sglangRequest{batch: batch, start: start}
	return g, nil
}

func (sglangSurface) WriteError(w http.ResponseWriter, e *wire.APIError) { writeSGLangError(w, e) }

// Respond writes one result, or a list for a batch or n > 1.
func (sglangSurface) Respond(j *pipeline.Job, w http.ResponseWriter) {
	if !sglangReq(j.G).batch && len(j.Ch) == 1 {
		wire.Encode(w, http.StatusOK, sglangResult(j, 0))
		return
	}
	list := make([]*sglangOutput, len(j.Ch))
	for i := range j.Ch {
		list[i] = sglangResult(j, i)
	}
	wire.Encode(w, http.StatusOK, list)
}

func (sglangSurface) Encoder(j *pipeline.Job) pipeline.EventEncoder {
	return &sglangEncoder{j: j, changed: make([]bool, len(j.Ch))}
}

// sglangEncoder writes SGLang's /generate stream: one SSE event per choice
// whenever it has new tokens, each carrying the whole text so far (SGLang's
// default, non-incremental streaming), the last one with its
// finish_reason, then data: [DONE].
type sglangEncoder struct {
	j       *pipeline.Job
	changed []bool // choices with news since the last event
}

func (e *sglangEncoder) Begin(b []byte) []byte { return b }

func (e *sglangEncoder) Render(st *pipeline.Streamer, items []engine.OutputItem) {
	for i := range items {
		e.changed[items[i].Choice] = true
		e.j.Record(&items[i])
	}
	for i, c := range e.changed {
		if !c {
			continue
		}
		e.changed[i] = false
		if e.j.Ch[i].Fin.Rejection != nil {
			continue // the stream ends with fail's error event
		}
		st.Buf = append(st.Buf, "data: "...)
		st.Buf = append(st.Buf, mustJSON(sglangResult(e.j, i))...)
		st.Buf = append(st.Buf, "\n\n"...)
	}
}

func (e *sglangEncoder) End(b []byte) []byte { return append(b, pipeline.SSEDone...) }

// Fail appends SGLang's error event, {"error":{"message":…}}, and [DONE].
func (e *sglangEncoder) Fail(b []byte, err *wire.APIError) []byte {
	b = append(b, `data: {"error":{"message":`...)
	b = jsonenc.AppendString(b, err.Message)
	b = append(b, "}}\n\n"...)
	return append(b, pipeline.SSEDone...)
}

// sglangOutput is one /generate result (SGLang's GenerateReqOutput as JSON).
type sglangOutput struct {
	Index     *int       `json:"index,omitempty"`
	Text      string     `json:"text"`
	OutputIDs []uint32   `json:"output_ids"`
	MetaInfo  sglangMeta `json:"meta_info"`
}

type sglangMeta struct {
	ID               string       `json:"id"`
	FinishReason     *finishShape `json:"finish_reason"`
	PromptTokens     int          `json:"prompt_tokens"`
	CompletionTokens int          `json:"completion_tokens"`
	CachedTokens     int          `json:"cached_tokens"`
	E2ELatency       float64      `json:"e2e_latency"`
}

// finishShape is SGLang's finish_reason object: {"type":"length",
// "length":N}, {"type":"stop","matched":…} or {"type":"abort",…}.
type finishShape struct {
	Type    string `json:"type"`
	Length  *int   `json:"length,omitempty"`
	Matched any    `json:"matched,omitempty"`
	Message string `json:"message,omitempty"`
}

// sglangResult renders choice i as far as it has arrived.
func sglangResult(j *pipeline.Job, i int) *sglangOutput {
	sg := sglangReq(j.G)
	ch := &j.Ch[i]
	ids := ch.Plan.IDs[:min(ch.N, len(ch.Plan.IDs))]
	out := &sglangOutput{
		Text:      string(ch.Plan.AppendText(nil, ch.N)),
		OutputIDs: append([]uint32{}, ids...),
		MetaInfo: sglangMeta{
			ID:               j.G.BaseID,
			PromptTokens:     len(j.G.Prompts[ch.Prompt].IDs),
			CompletionTokens: ch.N,
			CachedTokens:     ch.Fin.CachedTokens,
			E2ELatency:       j.S.Now().Sub(sg.start).Seconds(),
		},
	}
	if len(j.Ch) > 1 {
		out.MetaInfo.ID = j.G.BaseID + "-" + wire.Itoa(i)
	}
	if sg.batch || len(j.Ch) > 1 {
		idx := i
		out.Index = &idx
	}
	if ch.Done {
		reason, stop := ch.Reasons()
		f := finishShape{Type: string(reason)}
		switch reason {
		case engine.FinishLength:
			n := ch.N
			f.Length = &n
		case engine.FinishStop:
			f.Matched = stop.Value()
			if stop.Kind == plan.StopKind(0) {
				f.Matched = nil
			}
		case engine.FinishAbort:
			f.Message = "aborted"
		}
		out.MetaInfo.FinishReason = &f
	}
	return out
}

// handleSGLangModelInfo serves GET /get_model_info.
func handleSGLangModelInfo(s *pipeline.Server) http.Handler {
	tokenizer := s.Opts().Model.Tokenizer
	if tokenizer == "" {
		tokenizer = s.Opts().Model.Path
	}
	body := map[string]any{
		"model_path":                s.Opts().Model.Path,
		"tokenizer_path":            tokenizer,
		"is_generation":             s.Opts().Pooling.Generates(), // false under --runner pooling
		"preferred_sampling_params": nil,
		"weight_version":            "default",
		"has_image_understanding":   false,
		"has_audio_understanding":   false,
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		wire.Encode(w, http.StatusOK, body)
	})
}

// handleSGLangServerInfo serves GET /get_server_info and /server_info: the
// scheduler's server arguments as SGLang names them, and each DP rank's
// internal state (running and queued requests, used pages).
func handleSGLangServerInfo(s *pipeline.Server) http.Handler {
	c := s.Opts().SGLang
	policy := c.SchedulePolicy
	if policy == "dfs_weight" {
		policy = "dfs-weight"
	}
	args := map[string]any{
		"model_path":                s.Opts().Model.Path,
		"served_model_name":         s.Opts().Model.ServedName(),
		"page_size":                 c.PageSize,
		"max_running_requests":      c.MaxRunningRequests,
		"max_total_num_tokens":      c.MaxTotalTokens,
		"max_prefill_tokens":        c.MaxPrefillTokens,
		"chunked_prefill_size":      c.ChunkedPrefillSize,
		"schedule_policy":           policy,
		"schedule_conservativeness": c.ScheduleConservativeness,
		"context_length":            s.Opts().Model.MaxModelLen,
		"disable_radix_cache":       c.DisableRadixCache,
		"dp_size":                   c.DPSize,
		"random_seed":               s.Opts().Seed,
		"version":                   s.Version(),
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		states := make([]map[string]any, len(s.Engines()))
		for i, e := range s.Engines() {
			l := e.Load()
			states[i] = map[string]any{
				"dp_rank":          i,
				"num_running_reqs": l.Running,
				"num_queue_reqs":   l.Waiting,
				"num_used_tokens":  l.ActiveBlocks * c.PageSize,
			}
		}
		body := make(map[string]any, len(args)+1)
		for k, v := range args {
			body[k] = v
		}
		body["internal_states"] = states
		wire.Encode(w, http.StatusOK, body)
	})
}

// handleSGLangFlushCache serves /flush_cache: the radix cache of every rank
// is emptied when no request holds any of it; otherwise nothing changes
// and the answer is 400, as in SGLang.
func handleSGLangFlushCache(s *pipeline.Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok := true
		for _, e := range s.Engines() {
			done, err := e.ResetPrefixCache(r.Context())
			if err != nil {
				if r.Context().Err() != nil {
					return
				}
				writeSGLangError(w, wire.ErrEngineDead)
				return
			}
			ok = ok && done
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !ok {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte("Cache not flushed. Please check backend logs for more details. (When there are running or waiting requests, the operation will not be performed.)\n"))
			return
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("Cache flushed.\nPlease check backend logs for more details. (When there are running or waiting requests, the operation will not be performed.)\n"))
	})
}

// handleSGLangHealthGenerate serves GET /health_generate: like SGLang it
// runs a one-token generation through the engine and answers 200 when it
// completes, 503 when the engine cannot (dead, shutting down, or no token
// within 20 seconds).
func handleSGLangHealthGenerate(s *pipeline.Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.Healthy() {
			writeSGLangError(w, wire.ErrEngineDead)
			return
		}
		switch err := s.HealthProbe(r.Context(), 20*time.Second); {
		case err == nil:
			w.Header().Set("Content-Length", "0")
			w.WriteHeader(http.StatusOK)
		case errors.Is(err, pipeline.ErrProbeTimeout), errors.Is(err, pipeline.ErrProbeNotRunning):
			writeSGLangError(w, wire.ErrEngineDead)
		} // otherwise the client went away: nobody to answer
	})
}

// sglangReq is the /generate request a generation request carries.
func sglangReq(g *pipeline.GenRequest) *sglangRequest { return g.Ext.(*sglangRequest) }
