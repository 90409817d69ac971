package api

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/plan"
	"github.com/mocker-server/mocker-server/internal/tokenizer"
)

// Request limits: bounds that keep one request from costing unbounded work;
// exceeding one is a 400 naming the field.
const (
	maxN             = 128
	maxStopStrings   = 64
	maxStopStringLen = 1024
	maxStopTokenIDs  = 64
	maxLogprobs      = 20
	maxRequestIDLen  = 512
)

// genRequest is a parsed and validated generation request of either
// endpoint.
type genRequest struct {
	chat    bool
	model   string // echoed in responses
	baseID  string // request id without the chatcmpl-/cmpl- prefix
	created int64

	stream          bool
	includeUsage    bool // final usage chunk of a stream
	continuousUsage bool // usage on every chunk

	n          int
	maxReq     num    // M_req as sent (max_completion_tokens, else max_tokens)
	maxParam   string // the field M_req came from
	maxName    string // the surface's name of max_tokens
	minTokens  int
	ignoreEOS  bool
	stop       []string
	stopIDs    []uint32
	includeStr bool

	logprobs     bool // chat logprobs: true / completions logprobs set
	topLogprobs  int  // chat top_logprobs / completions logprobs k
	seed         *int64
	priority     int
	truncate     int // 0 = no truncation
	cacheSalt    string
	adapter      engine.Adapter  // the LoRA adapter named by model (zero: base model)
	returnIDs    bool            // return_token_ids
	tokensAsIDs  bool            // return_tokens_as_token_ids
	echo         bool            // completions only
	rank         int             // X-data-parallel-rank, -1 = route
	tools        *toolSpec       // chat tool calls; nil = none
	structured   *structuredSpec // output constraint; nil = free text
	prompts      []promptSpec
	maxEffective int       // largest M over the prompts (metrics)
	pd           pdRequest // disaggregated prefill/decode (disagg.go)

	// What only one surface's requests carry (nil elsewhere).
	embed     *embedRequest     // /v1/embeddings
	responses *responsesRequest // /v1/responses
	messages  *messagesRequest  // /v1/messages
	sglang    *sglangRequest    // SGLang's /generate
}

// promptSpec is one prompt after tokenization and the max-token and
// context-length checks (checkPrompt).
type promptSpec struct {
	ids    []uint32 // after truncate_prompt_tokens
	text   string   // the prompt text as given (string prompts, chat), for echo
	isText bool     // given as text (context-length message form)
	m      int      // effective max tokens
}

// rawPrompt is a completions prompt as sent, before tokenization.
type rawPrompt struct {
	text   string
	ids    []uint32
	isText bool
}

// Known request fields; others are logged at debug level and ignored.
var (
	commonFields = []string{
		"model", "max_tokens", "min_tokens", "ignore_eos", "stop", "stop_token_ids",
		"include_stop_str_in_output", "n", "stream", "stream_options", "logprobs", "seed",
		"priority", "truncate_prompt_tokens", "cache_salt", "return_token_ids",
		"return_tokens_as_token_ids", "request_id", "kv_transfer_params", "bootstrap_host",
		"bootstrap_port", "bootstrap_room", "temperature", "top_p", "top_k", "min_p",
		"frequency_penalty", "presence_penalty", "repetition_penalty", "response_format",
		"user", "logit_bias", "structured_outputs", "skip_special_tokens",
		"spaces_between_special_tokens", "echo", "prompt_logprobs", "service_tier",
		"metadata", "store",
	}
	chatFields = setOf(append(slices.Clone(commonFields),
		"messages", "max_completion_tokens", "top_logprobs", "add_generation_prompt",
		"continue_final_message", "tools", "tool_choice", "parallel_tool_calls",
		"chat_template", "chat_template_kwargs", "documents", "reasoning_effort")...)
	completionFields = setOf(append(slices.Clone(commonFields),
		"prompt", "suffix", "best_of", "add_special_tokens")...)
)

func setOf(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// parseGenerate reads a chat or completions body into the typed input
// (phase 1, field types and required fields) and runs the shared phases
// on it (buildGenerate), in the order of docs/http-api.md: types, model,
// values, prompt, KV capacity.
func (s *Server) parseGenerate(o object, r *http.Request, chat bool) (*genRequest, *apiError) {
	s.logUnknownGenFields(o, r, chat)
	in := readGenInput(o, chat, s.tok.VocabSize())
	if err := o.failed(); err != nil {
		return nil, err
	}
	return s.buildGenerate(in, r)
}

// logUnknownGenFields logs the chat or completions fields the server does
// not know (the legacy guided_* fields are known to parseStructured).
func (s *Server) logUnknownGenFields(o object, r *http.Request, chat bool) {
	known := completionFields
	if chat {
		known = chatFields
	}
	unknown := slices.DeleteFunc(o.unknownKeys(known), func(k string) bool { return strings.HasPrefix(k, "guided_") })
	if len(unknown) > 0 {
		slices.Sort(unknown)
		s.log.Debug("ignoring unknown request fields", "path", r.URL.Path, "fields", unknown)
	}
}

// buildGenerate runs the phases every generation surface shares on a
// typed input: the model (and LoRA adapter), the request id, the value
// checks, the output constraints and tools, routing and disaggregation,
// then rendering and tokenization, the per-prompt max-token and
// context-length rules, and the KV capacity check.
func (s *Server) buildGenerate(in *genInput, r *http.Request) (*genRequest, *apiError) {
	g := &genRequest{chat: in.chat, rank: -1, echo: in.echo, ignoreEOS: in.ignoreEOS,
		includeStr: in.includeStr, stream: in.stream, returnIDs: in.returnIDs,
		tokensAsIDs: in.tokensAsIDs, pd: in.pd}
	if e := s.resolveModel(g, in.model, in.hasModel); e != nil {
		return nil, e
	}
	g.baseID = requestID(r.Header.Get("X-Request-Id"), in.bodyID)
	for _, check := range [...]func(*genRequest, *genInput) *apiError{
		checkInputs, s.checkLengths, checkSamplingOf, checkLogprobs, s.checkStops,
		s.checkPromptOptions, s.checkConstraints,
	} {
		if e := check(g, in); e != nil {
			return nil, e
		}
	}
	var e *apiError
	if g.rank, e = s.headerRank(r); e != nil {
		return nil, e
	}
	if e := s.checkPD(g); e != nil {
		return nil, e
	}
	raw, e := s.tokenizePrompts(in)
	if e != nil {
		return nil, e
	}
	if e := s.checkPrompts(g, raw); e != nil {
		return nil, e
	}
	return g, s.checkCapacity(g)
}

// tokenizePrompts renders a chat request with its template or tokenizes
// the text prompts of a completions request (phase 9).
func (s *Server) tokenizePrompts(in *genInput) ([]rawPrompt, *apiError) {
	if in.chat {
		text, e := s.renderChat(in.body, in.msgs, in.toolsJSON, in.addGen, in.contFinal)
		if e != nil {
			return nil, e
		}
		// A rendered chat prompt already holds the template's special
		// tokens; vLLM adds none (add_special_tokens defaults to false).
		return []rawPrompt{{text: text, ids: s.tok.Encode(text, false), isText: true}}, nil
	}
	for i := range in.prompts {
		if in.prompts[i].isText {
			in.prompts[i].ids = s.tok.Encode(in.prompts[i].text, true)
		}
	}
	return in.prompts, nil
}

// checkPrompts truncates each prompt and applies the max-token and
// context-length rules (checkPrompt).
func (s *Server) checkPrompts(g *genRequest, raw []rawPrompt) *apiError {
	g.prompts = make([]promptSpec, len(raw))
	for i, rp := range raw {
		ps, e := s.checkPrompt(g, rp)
		if e != nil {
			return e
		}
		g.prompts[i] = ps
		g.maxEffective = max(g.maxEffective, ps.m)
	}
	return nil
}

// checkCapacity is phase 10, KV capacity: the engine's own rule, so the
// answer here and a rejection at the head of its queue can never disagree.
// Every rank has the same configuration, so rank 0 answers for all.
func (s *Server) checkCapacity(g *genRequest) *apiError {
	for _, ps := range g.prompts {
		if rej := s.engines[0].CheckAdmissible(len(ps.ids), ps.m); rej != nil {
			return errInvalid("", "%s", rej.Message)
		}
	}
	return nil
}

// resolveModel sets the request's reported model name and LoRA adapter
// from the model field (absent: the base model). Any served name is
// accepted; responses carry the first one whichever was asked for, as
// vLLM's do, or the LoRA adapter's name.
func (s *Server) resolveModel(g *genRequest, model string, hasModel bool) *apiError {
	g.model = s.opts.Model.ServedName()
	if !hasModel {
		return nil
	}
	adapter, isAdapter := s.adapters.lookup(model)
	if !s.served[model] && !isAdapter {
		return &apiError{Status: http.StatusNotFound, Type: typeNotFound,
			Message: "The model `" + model + "` does not exist.", Param: "model"}
	}
	if isAdapter {
		// vLLM answers with the adapter's name for an adapter's request.
		g.model = model
		g.adapter = adapter
	}
	return nil
}

// checkPrompt truncates one tokenized prompt and applies the max-token and
// context-length rules: the effective max tokens is the request's limit,
// else max_model_len − prompt (chat) or min(16, max_model_len − prompt)
// (completions), as in vLLM.
func (s *Server) checkPrompt(g *genRequest, rp rawPrompt) (promptSpec, *apiError) {
	ids := rp.ids
	if len(ids) == 0 {
		return promptSpec{}, errInvalid("", "The prompt is empty after tokenization")
	}
	truncated := false
	if g.truncate > 0 && len(ids) > g.truncate {
		ids = ids[len(ids)-g.truncate:]
		truncated = true
	}
	N, p := s.opts.Model.MaxModelLen, len(ids)
	var m int
	switch {
	case g.maxReq.Set:
		m = int(g.maxReq.I)
		if p+m > N {
			return promptSpec{}, contextLengthError(N, m, p, rp.isText)
		}
	case p > N:
		return promptSpec{}, contextLengthError(N, 0, p, rp.isText)
	case p == N:
		return promptSpec{}, errInvalid(g.maxName, "%s must be at least 1, got 0.", g.maxName)
	case g.chat:
		m = N - p
	default:
		m = min(16, N-p)
	}
	if g.minTokens > m {
		return promptSpec{}, errInvalid("min_tokens", "min_tokens must be less than or equal to max_tokens=%d, got %d.", m, g.minTokens)
	}
	ps := promptSpec{ids: ids, text: rp.text, isText: rp.isText, m: m}
	if !rp.isText || truncated {
		ps.text = tokenizer.DecodeLiteral(ids)
	}
	return ps, nil
}

// contextLengthError is vLLM's context-length message:
// text prompts report vLLM's lower bound P = N − M + 1, token prompts the
// exact count.
func contextLengthError(N, M, p int, isText bool) *apiError {
	const tail = "Please reduce the length of the input prompt or the number of requested output tokens."
	if isText {
		P := N - M + 1
		return errInvalid("input_tokens", "This model's maximum context length is %d tokens. However, you requested %d output tokens and your prompt contains at least %d input tokens, for a total of at least %d tokens. %s (parameter=input_tokens, value=%d)",
			N, M, P, N+1, tail, P)
	}
	return errInvalid("input_tokens", "This model's maximum context length is %d tokens. However, you requested %d output tokens and your prompt contains %d input tokens, for a total of %d tokens. %s (parameter=input_tokens, value=%d)",
		N, M, p, p+M, tail, p)
}

// checkSampling validates the sampling parameters that have no effect
// but are still range-checked as vLLM does, so a bad value fails here too.
func checkSampling(temperature, topP, topK, minP, freqPen, presPen, repPen num) *apiError {
	switch {
	case temperature.Set && temperature.F < 0:
		return errInvalid("temperature", "temperature must be non-negative, got %s.", temperature)
	case topP.Set && !(topP.F > 0 && topP.F <= 1):
		return errInvalid("top_p", "top_p must be in (0, 1], got %s.", topP)
	case topK.Set && topK.I < -1:
		return errInvalid("top_k", "top_k must be -1 (disable), or at least 1, got %s.", topK)
	case minP.Set && !(minP.F >= 0 && minP.F <= 1):
		return errInvalid("min_p", "min_p must be in [0, 1], got %s.", minP)
	case freqPen.Set && !(freqPen.F >= -2 && freqPen.F <= 2):
		return errInvalid("frequency_penalty", "frequency_penalty must be in [-2, 2], got %s.", freqPen)
	case presPen.Set && !(presPen.F >= -2 && presPen.F <= 2):
		return errInvalid("presence_penalty", "presence_penalty must be in [-2, 2], got %s.", presPen)
	case repPen.Set && !(repPen.F > 0):
		return errInvalid("repetition_penalty", "repetition_penalty must be greater than zero, got %s.", repPen)
	}
	return nil
}

// parseMessages reads the chat messages (types only). It returns the path
// of the first non-text content part, if any, for the value check.
func parseMessages(o object) (msgs []tokenizer.Message, badPart string) {
	arr, ok := o.raw("messages")
	if !ok {
		if o.failed() == nil {
			o.fail(errFieldRequired("messages"))
		}
		return nil, ""
	}
	elems, e := parseArray(arr, "messages")
	if e != nil {
		o.fail(e)
		return nil, ""
	}
	msgs = make([]tokenizer.Message, 0, len(elems))
	var b strings.Builder
	for i, raw := range elems {
		path := "messages[" + itoa(i) + "]"
		m, ok := o.elem(raw, path, "object")
		if !ok {
			return nil, ""
		}
		if !m.has("role") {
			o.fail(errFieldRequired(path + ".role"))
			return nil, ""
		}
		role, _ := m.String("role")
		var content string
		if c, ok := m.raw("content"); ok {
			switch c[0] {
			case '"':
				content, _ = m.String("content")
			case '[':
				parts, _ := m.Array("content")
				b.Reset()
				for j, pr := range parts {
					ppath := path + ".content[" + itoa(j) + "]"
					part, ok := o.elem(pr, ppath, "object")
					if !ok {
						return nil, ""
					}
					typ, hasType := part.String("type")
					if !hasType {
						if o.failed() == nil {
							o.fail(errFieldRequired(ppath + ".type"))
						}
						return nil, ""
					}
					if typ != "text" {
						if badPart == "" {
							badPart = ppath + ".type"
						}
						continue
					}
					if !part.has("text") {
						o.fail(errFieldRequired(ppath + ".text"))
						return nil, ""
					}
					text, _ := part.String("text")
					if b.Len() > 0 || j > 0 {
						b.WriteByte('\n')
					}
					b.WriteString(text)
				}
				content = b.String()
			case 'n':
				// null content: an assistant turn that only calls tools.
			default:
				o.fail(errFieldType(path+".content", "string"))
				return nil, ""
			}
		}
		calls := parseToolCalls(o, m, path)
		if o.failed() != nil {
			return nil, ""
		}
		msgs = append(msgs, tokenizer.Message{Role: role, Content: content, ToolCalls: calls})
	}
	return msgs, badPart
}

// parsePrompt reads the completions prompt: a string, an array of strings,
// an array of ids or an array of id arrays. Emptiness and out-of-vocabulary
// ids are value errors reported after the model check.
func parsePrompt(o object, key string, vocabSize int) (prompts []rawPrompt, empty bool, badID string) {
	raw, ok := o.raw(key)
	if !ok {
		if o.failed() == nil {
			o.fail(errFieldRequired(o.name(key)))
		}
		return nil, false, ""
	}
	switch raw[0] {
	case '"':
		text, _ := o.String(key)
		return []rawPrompt{{text: text, isText: true}}, text == "", ""
	case '[':
	default:
		o.fail(errFieldType(o.name(key), "string"))
		return nil, false, ""
	}
	path := o.name(key)
	elems, e := parseArray(raw, path)
	if e != nil {
		o.fail(e)
		return nil, false, ""
	}
	if len(elems) == 0 {
		return nil, true, ""
	}
	switch {
	case elems[0][0] == '"':
		prompts = make([]rawPrompt, len(elems))
		for i, el := range elems {
			s, e := parseString(el, path+"["+itoa(i)+"]")
			if e != nil {
				o.fail(e)
				return nil, false, ""
			}
			empty = empty || s == ""
			prompts[i] = rawPrompt{text: s, isText: true}
		}
		return prompts, empty, ""
	case elems[0][0] == '[':
		prompts = make([]rawPrompt, len(elems))
		for i, el := range elems {
			ipath := path + "[" + itoa(i) + "]"
			inner, e := parseArray(el, ipath)
			if e != nil {
				o.fail(e)
				return nil, false, ""
			}
			ids, bad, e := parseIDs(inner, ipath, vocabSize)
			if e != nil {
				o.fail(e)
				return nil, false, ""
			}
			empty = empty || len(ids) == 0
			if badID == "" {
				badID = bad
			}
			prompts[i] = rawPrompt{ids: ids}
		}
		return prompts, empty, badID
	}
	ids, bad, e := parseIDs(elems, path, vocabSize)
	if e != nil {
		o.fail(e)
		return nil, false, ""
	}
	return []rawPrompt{{ids: ids}}, false, bad
}

// parseIDs reads an array of token ids. It returns the text of the first id
// outside the vocabulary (a value error) separately from type errors.
func parseIDs(elems []json.RawMessage, path string, vocabSize int) (ids []uint32, badID string, err *apiError) {
	ids = make([]uint32, len(elems))
	for i, el := range elems {
		v, e := parseInt(el, path+"["+itoa(i)+"]")
		if e != nil {
			return nil, "", e
		}
		if v.I < 0 || v.I >= int64(vocabSize) {
			if badID == "" {
				badID = v.Raw
			}
			continue
		}
		ids[i] = uint32(v.I)
	}
	return ids, badID, nil
}

// parseStop reads stop: a string or an array of strings.
func parseStop(o object) ([]string, bool) { return parseStopAt(o, "stop") }

// parseStopAt reads stop strings under a surface's name for them (SGLang's
// sampling_params.stop, Anthropic's stop_sequences).
func parseStopAt(o object, key string) ([]string, bool) {
	raw, ok := o.raw(key)
	if !ok {
		return nil, false
	}
	if raw[0] == '"' {
		s, _ := o.String(key)
		return []string{s}, o.failed() == nil
	}
	path := o.name(key)
	elems, e := parseArray(raw, path)
	if e != nil {
		o.fail(errFieldType(path, "array"))
		return nil, false
	}
	if len(elems) > maxStopStrings {
		return make([]string, len(elems)), true // too many: reported as a value error
	}
	out := make([]string, len(elems))
	for i, el := range elems {
		s, e := parseString(el, path+"["+itoa(i)+"]")
		if e != nil {
			o.fail(e)
			return nil, false
		}
		out[i] = s
	}
	return out, true
}

// requestID picks the base request id: the X-Request-Id
// header, else the body's request_id, each only if at most 512 bytes of
// printable ASCII; else 32 random lowercase hex characters (a UUIDv4).
func requestID(header, body string) string {
	if validRequestID(header) {
		return header
	}
	if validRequestID(body) {
		return body
	}
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return hex.EncodeToString(u[:])
}

func validRequestID(s string) bool {
	if s == "" || len(s) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// planParams are the per-choice inputs of plan.Plan common to a request.
func (s *Server) planParams(g *genRequest) plan.Params {
	p := plan.Params{
		SetsMax:                g.maxReq.Set,
		Chat:                   g.chat,
		Mode:                   s.opts.Generation.OutputLenMode,
		NaturalOutputLen:       s.opts.Generation.NaturalOutputLen,
		IgnoreEOS:              g.ignoreEOS,
		MinTokens:              g.minTokens,
		StopTokenIDs:           g.stopIDs,
		Stop:                   g.stop,
		IncludeStopStrInOutput: g.includeStr,
		Model:                  s.tok,
	}
	p.Reasoning = s.opts.Generation.Reasoning
	return p
}

func itoa(i int) string { return strconv.Itoa(i) }

// compactJSON removes insignificant whitespace, keeping key order
// (the tools JSON the chat template renders).
func compactJSON(raw []byte) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return raw
	}
	return buf.Bytes()
}
