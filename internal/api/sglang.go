package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/jsonenc"
	"github.com/mocker-server/mocker-server/internal/plan"
)

// mountSGLang adds SGLang's native endpoints in sglang mode (docs/sglang.md):
// POST /generate, GET /get_server_info (and /server_info), GET
// /get_model_info, GET|POST /flush_cache and GET /health_generate.
func (s *Server) mountSGLang(r chi.Router) {
	if s.opts.SGLang == nil {
		return
	}
	gate := s.startupGate
	r.Method(http.MethodPost, "/generate", gate(s.drainGate(handleSurface(s, sglangSurface{}))))
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
func writeSGLangError(w http.ResponseWriter, e *apiError) {
	type msg struct {
		Message string `json:"message"`
	}
	encode(w, e.Status, struct {
		Error msg `json:"error"`
	}{msg{e.Message}})
}

// sglangFields are the /generate fields the server reads; others are
// logged at debug level and ignored.
var sglangFields = setOf("text", "input_ids", "sampling_params", "stream", "rid")

// sglangInput reads a /generate body straight into the typed generation
// input: text or input_ids are the prompts (a string, strings, ids or id
// lists, as completions' prompt), sampling_params the sampling fields under
// SGLang's names. batch says whether the input was a list (the answer is
// then a list too).
func sglangInput(o object, vocabSize int) (in *genInput, batch bool, e *apiError) {
	text, hasText := o.raw("text")
	ids, hasIDs := o.raw("input_ids")
	hasText = hasText && !isNull(text)
	hasIDs = hasIDs && !isNull(ids)
	switch {
	case !hasText && !hasIDs:
		return nil, false, errBadRequest("", "Either text, input_ids or input_embeds should be provided.")
	case hasText && hasIDs:
		return nil, false, errBadRequest("", "Only one of text, input_ids or input_embeds should be provided.")
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
	in = &genInput{body: emptyObject(), includeUsage: true}
	in.prompts, in.emptyPrompt, in.badTokenID = parsePrompt(o, key, vocabSize)
	sp, ok := o.Object("sampling_params")
	if !ok {
		sp = object{err: o.err} // absent: every default
	}
	readSGLangSampling(sp, in)
	in.maxTokens, in.maxTokensName = sp.Int("max_new_tokens"), "max_new_tokens"
	if !in.maxTokens.Set {
		in.maxTokens = num{I: sglangDefaultMaxNewTokens, F: sglangDefaultMaxNewTokens,
			Raw: strconv.Itoa(sglangDefaultMaxNewTokens), Set: true}
	}
	in.stream = o.Bool("stream", false)
	in.bodyID, _ = o.String("rid")
	return in, batch, o.failed()
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// readSGLangSampling reads sampling_params under SGLang's names.
func readSGLangSampling(sp object, in *genInput) {
	in.minTokens = sp.Int("min_new_tokens")
	in.stop, in.stopSet = parseStop(sp)
	in.stopIDs, in.stopIDCount = parseStopIDs(sp)
	in.ignoreEOS = sp.Bool("ignore_eos", false)
	in.n = sp.Int("n")
	in.sampling = readSampling(sp)
	in.seed = sp.Int("sampling_seed")
}

// sglangSurface is POST /generate, SGLang's native generation endpoint,
// served by the shared generation path (handleSurface): the same parsing,
// planning, faults, limits, request ids, engine and stream delivery as
// /v1/completions, with SGLang's result objects, stream and error shape.
type sglangSurface struct{}

// sglangRequest holds what the SGLang rendering needs.
type sglangRequest struct {
	batch bool      // the input was a list: the answer is a list too
	start time.Time // arrival, for meta_info.e2e_latency
}

func (sglangSurface) parse(s *Server, o object, r *http.Request) (*genRequest, *apiError) {
	start := s.now()
	s.logUnknownFields(o, r, sglangFields)
	in, batch, e := sglangInput(o, s.tok.VocabSize())
	if e != nil {
		return nil, e
	}
	g, e := s.buildGenerate(in, r)
	if e != nil {
		return nil, e
	}
	g.sglang = &sglangRequest{batch: batch, start: start}
	return g, nil
}

func (sglangSurface) writeError(w http.ResponseWriter, e *apiError) { writeSGLangError(w, e) }

// respond writes one result, or a list for a batch or n > 1.
func (sglangSurface) respond(j *job, w http.ResponseWriter) {
	if !j.g.sglang.batch && len(j.ch) == 1 {
		encode(w, http.StatusOK, j.sglangResult(0))
		return
	}
	list := make([]*sglangOutput, len(j.ch))
	for i := range j.ch {
		list[i] = j.sglangResult(i)
	}
	encode(w, http.StatusOK, list)
}

func (sglangSurface) encoder(j *job) eventEncoder {
	return &sglangEncoder{j: j, changed: make([]bool, len(j.ch))}
}

// sglangEncoder writes SGLang's /generate stream: one SSE event per choice
// whenever it has new tokens, each carrying the whole text so far (SGLang's
// default, non-incremental streaming), the last one with its
// finish_reason, then data: [DONE].
type sglangEncoder struct {
	j       *job
	changed []bool // choices with news since the last event
}

func (e *sglangEncoder) begin(b []byte) []byte { return b }

func (e *sglangEncoder) render(st *streamer, items []engine.OutputItem) {
	for i := range items {
		e.changed[items[i].Choice] = true
		e.j.record(&items[i])
	}
	for i, c := range e.changed {
		if !c {
			continue
		}
		e.changed[i] = false
		if e.j.ch[i].fin.Rejection != nil {
			continue // the stream ends with fail's error event
		}
		st.buf = append(st.buf, "data: "...)
		st.buf = append(st.buf, mustJSON(e.j.sglangResult(i))...)
		st.buf = append(st.buf, "\n\n"...)
	}
}

func (e *sglangEncoder) end(b []byte) []byte { return append(b, sseDone...) }

// fail appends SGLang's error event, {"error":{"message":…}}, and [DONE].
func (e *sglangEncoder) fail(b []byte, err *apiError) []byte {
	b = append(b, `data: {"error":{"message":`...)
	b = jsonenc.AppendString(b, err.Message)
	b = append(b, "}}\n\n"...)
	return append(b, sseDone...)
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
func (j *job) sglangResult(i int) *sglangOutput {
	sg := j.g.sglang
	ch := &j.ch[i]
	ids := ch.plan.IDs[:min(ch.n, len(ch.plan.IDs))]
	out := &sglangOutput{
		Text:      string(ch.plan.AppendText(nil, ch.n)),
		OutputIDs: append([]uint32{}, ids...),
		MetaInfo: sglangMeta{
			ID:               j.g.baseID,
			PromptTokens:     len(j.g.prompts[ch.prompt].ids),
			CompletionTokens: ch.n,
			CachedTokens:     ch.fin.CachedTokens,
			E2ELatency:       j.s.now().Sub(sg.start).Seconds(),
		},
	}
	if len(j.ch) > 1 {
		out.MetaInfo.ID = j.g.baseID + "-" + itoa(i)
	}
	if sg.batch || len(j.ch) > 1 {
		idx := i
		out.Index = &idx
	}
	if ch.done {
		reason, stop := ch.reasons()
		f := finishShape{Type: string(reason)}
		switch reason {
		case engine.FinishLength:
			n := ch.n
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
func handleSGLangModelInfo(s *Server) http.Handler {
	tokenizer := s.opts.Model.Tokenizer
	if tokenizer == "" {
		tokenizer = s.opts.Model.Path
	}
	body := map[string]any{
		"model_path":                s.opts.Model.Path,
		"tokenizer_path":            tokenizer,
		"is_generation":             true,
		"preferred_sampling_params": nil,
		"weight_version":            "default",
		"has_image_understanding":   false,
		"has_audio_understanding":   false,
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		encode(w, http.StatusOK, body)
	})
}

// handleSGLangServerInfo serves GET /get_server_info and /server_info: the
// scheduler's server arguments as SGLang names them, and each DP rank's
// internal state (running and queued requests, used pages).
func handleSGLangServerInfo(s *Server) http.Handler {
	c := s.opts.SGLang
	policy := c.SchedulePolicy
	if policy == "dfs_weight" {
		policy = "dfs-weight"
	}
	args := map[string]any{
		"model_path":                s.opts.Model.Path,
		"served_model_name":         s.opts.Model.ServedName(),
		"page_size":                 c.PageSize,
		"max_running_requests":      c.MaxRunningRequests,
		"max_total_num_tokens":      c.MaxTotalTokens,
		"max_prefill_tokens":        c.MaxPrefillTokens,
		"chunked_prefill_size":      c.ChunkedPrefillSize,
		"schedule_policy":           policy,
		"schedule_conservativeness": c.ScheduleConservativeness,
		"context_length":            s.opts.Model.MaxModelLen,
		"disable_radix_cache":       c.DisableRadixCache,
		"dp_size":                   c.DPSize,
		"random_seed":               s.opts.Seed,
		"version":                   s.version,
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		states := make([]map[string]any, len(s.engines))
		for i, e := range s.engines {
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
		encode(w, http.StatusOK, body)
	})
}

// handleSGLangFlushCache serves /flush_cache: the radix cache of every rank
// is emptied when no request holds any of it; otherwise nothing changes
// and the answer is 400, as in SGLang.
func handleSGLangFlushCache(s *Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok := true
		for _, e := range s.engines {
			done, err := e.ResetPrefixCache(r.Context())
			if err != nil {
				if r.Context().Err() != nil {
					return
				}
				writeSGLangError(w, errEngineDead)
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
func handleSGLangHealthGenerate(s *Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.healthy() {
			writeSGLangError(w, errEngineDead)
			return
		}
		rank := s.pickRank()
		eng := s.engines[rank]
		out := engine.NewOutput()
		req := &engine.Request{ID: engine.NewRequestID(), Prompt: []uint32{0}, PlannedOutput: []uint32{0},
			MaxOutputTokens: 1, ArrivalTime: eng.Clock().Now(), Out: out}
		if err := eng.Submit(req); err != nil {
			writeSGLangError(w, errEngineDead)
			return
		}
		timeout := time.NewTimer(20 * time.Second)
		defer timeout.Stop()
		var items []engine.OutputItem
		for {
			select {
			case <-out.Ready():
				items = out.Drain(items[:0])
				for _, it := range items {
					if it.Final {
						if it.Finished.Reason == engine.FinishAbort {
							writeSGLangError(w, errEngineDead)
							return
						}
						w.Header().Set("Content-Length", "0")
						w.WriteHeader(http.StatusOK)
						return
					}
				}
			case <-timeout.C:
				eng.Cancel(req.ID)
				writeSGLangError(w, errEngineDead)
				return
			case <-r.Context().Done():
				eng.Cancel(req.ID)
				return
			}
		}
	})
}
