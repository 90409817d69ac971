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

// parseGenerate runs the field checks on a decoded body, in the order of
// docs/http-api.md: types, model, values, prompt, KV capacity.
func (s *Server) parseGenerate(o object, r *http.Request, chat bool) (*genRequest, *apiError) {
	g := &genRequest{chat: chat, rank: -1}
	known := completionFields
	if chat {
		known = chatFields
	}
	if unknown := o.unknownKeys(known); len(unknown) > 0 {
		for i := 0; i < len(unknown); i++ {
			if strings.HasPrefix(unknown[i], "guided_") {
				unknown = slices.Delete(unknown, i, i+1)
				i--
			}
		}
		if len(unknown) > 0 {
			slices.Sort(unknown)
			s.log.Debug("ignoring unknown request fields", "path", r.URL.Path, "fields", unknown)
		}
	}

	// 6. Field types and required fields.
	var (
		msgs        []tokenizer.Message
		badPart     string // path of a non-text content part
		tools       []byte
		addGen      bool
		contFinal   bool
		rawPrompts  []rawPrompt
		emptyPrompt bool
		badTokenID  string
	)
	if chat {
		msgs, badPart = parseMessages(o)
		if a, ok := o.Kind("tools", "array"); ok {
			tools = compactJSON(a)
		}
		addGen = o.Bool("add_generation_prompt", true)
		contFinal = o.Bool("continue_final_message", false)
	} else {
		rawPrompts, emptyPrompt, badTokenID = parsePrompt(o, s.tok.VocabSize())
		g.echo = o.Bool("echo", false)
	}
	model, hasModel := o.String("model")
	maxCompletion := num{}
	if chat {
		maxCompletion = o.Int("max_completion_tokens")
	}
	maxTokens := o.Int("max_tokens")
	minTokens := o.Int("min_tokens")
	g.ignoreEOS = o.Bool("ignore_eos", false)
	stop, stopSet := parseStop(o)
	stopIDs, _ := o.Array("stop_token_ids")
	stopIDNums := make([]num, 0, min(len(stopIDs), maxStopTokenIDs+1))
	for i, raw := range stopIDs {
		if i > maxStopTokenIDs {
			break // already too many; no need to look further
		}
		v, e := parseInt(raw, "stop_token_ids")
		if e != nil {
			o.fail(e)
			break
		}
		stopIDNums = append(stopIDNums, v)
	}
	g.includeStr = o.Bool("include_stop_str_in_output", false)
	n := o.Int("n")
	g.stream = o.Bool("stream", false)
	streamOpts, hasStreamOpts := o.Object("stream_options")
	includeUsage, continuous := true, false
	if hasStreamOpts {
		includeUsage = streamOpts.Bool("include_usage", true)
		continuous = streamOpts.Bool("continuous_usage_stats", false)
	}
	var chatLogprobs bool
	var logprobsK, topLogprobs num
	if chat {
		chatLogprobs = o.Bool("logprobs", false)
		topLogprobs = o.Int("top_logprobs")
	} else {
		logprobsK = o.Int("logprobs")
	}
	seed := o.Int("seed")
	priority := o.Int("priority")
	truncate := o.Int("truncate_prompt_tokens")
	cacheSalt, hasSalt := o.String("cache_salt")
	g.returnIDs = o.Bool("return_token_ids", false)
	g.tokensAsIDs = o.Bool("return_tokens_as_token_ids", false)
	bodyID, _ := o.String("request_id")
	g.pd = parsePD(o) // disaggregation (disagg.go)
	temperature := o.Float("temperature")
	topP := o.Float("top_p")
	topK := o.Int("top_k")
	minP := o.Float("min_p")
	freqPen := o.Float("frequency_penalty")
	presPen := o.Float("presence_penalty")
	repPen := o.Float("repetition_penalty")
	var suffixSet bool
	var bestOf num
	if !chat {
		_, suffixSet = o.String("suffix")
		bestOf = o.Int("best_of")
		o.Bool("add_special_tokens", true)
	}
	if err := o.failed(); err != nil {
		return nil, err
	}

	// 7. Model name.
	if e := s.resolveModel(g, model, hasModel); e != nil {
		return nil, e
	}
	g.baseID = requestID(r.Header.Get("X-Request-Id"), bodyID)

	// 8. Field values.
	N := s.cfg.MaxModelLen
	switch {
	case chat && len(msgs) == 0:
		return nil, errInvalid("messages", "messages must contain at least one message")
	case badPart != "":
		return nil, errInvalid(badPart, "Only text content parts are supported by mocker-server.")
	case !chat && emptyPrompt:
		return nil, errInvalid("prompt", "prompt must not be empty")
	case badTokenID != "":
		return nil, errInvalid("prompt", "Token id %s is out of vocabulary", badTokenID)
	}
	g.n = 1
	if n.Set {
		switch {
		case n.I < 1:
			return nil, errInvalid("n", "n must be at least 1, got %s.", n)
		case n.I > maxN:
			return nil, errInvalid("n", "n must be at most %d, got %s.", maxN, n)
		}
		g.n = int(n.I)
	}
	if !chat && bestOf.Set && bestOf.I != int64(g.n) {
		return nil, errInvalid("best_of", "best_of is not supported")
	}
	if suffixSet {
		return nil, errInvalid("suffix", "suffix is not currently supported")
	}
	switch {
	case maxCompletion.Set:
		g.maxReq, g.maxParam = maxCompletion, "max_completion_tokens"
	case maxTokens.Set:
		g.maxReq, g.maxParam = maxTokens, "max_tokens"
	}
	if g.maxReq.Set {
		if g.maxReq.I < 1 {
			return nil, errInvalid(g.maxParam, "%s must be at least 1, got %s.", g.maxParam, g.maxReq)
		}
		if g.maxReq.I > int64(N) {
			return nil, errInvalid(g.maxParam, "%s=%s cannot be greater than max_model_len=max_total_tokens=%d. Please request fewer output tokens. (parameter=%s, value=%s)",
				g.maxParam, g.maxReq, N, g.maxParam, g.maxReq)
		}
	}
	if minTokens.Set {
		if minTokens.I < 0 {
			return nil, errInvalid("min_tokens", "min_tokens must be greater than or equal to 0, got %s.", minTokens)
		}
		// Values above max_model_len fail the "≤ effective max" check below.
		g.minTokens = int(min(minTokens.I, int64(N)+1))
	}
	if e := checkSampling(temperature, topP, topK, minP, freqPen, presPen, repPen); e != nil {
		return nil, e
	}
	if chat {
		if topLogprobs.Set {
			if topLogprobs.I < 0 || topLogprobs.I > maxLogprobs {
				return nil, errInvalid("top_logprobs", "top_logprobs must be between 0 and %d, got %s.", maxLogprobs, topLogprobs)
			}
			if topLogprobs.I > 0 && !chatLogprobs {
				return nil, errInvalid("top_logprobs", "when using `top_logprobs`, `logprobs` must be set to true.")
			}
			g.topLogprobs = int(topLogprobs.I)
		}
		g.logprobs = chatLogprobs
	} else if logprobsK.Set {
		if logprobsK.I < 0 || logprobsK.I > maxLogprobs {
			return nil, errInvalid("logprobs", "logprobs must be between 0 and %d, got %s.", maxLogprobs, logprobsK)
		}
		g.logprobs, g.topLogprobs = true, int(logprobsK.I)
	}
	if o.has("prompt_logprobs") {
		return nil, errInvalid("prompt_logprobs", "prompt_logprobs is not supported by mocker-server")
	}
	if stopSet {
		if len(stop) > maxStopStrings {
			return nil, errInvalid("stop", "stop must contain at most %d strings", maxStopStrings)
		}
		for _, st := range stop {
			if st == "" {
				return nil, errInvalid("stop", "stop strings must not be empty")
			}
			if len(st) > maxStopStringLen {
				return nil, errInvalid("stop", "stop strings must be at most %d bytes, got %d", maxStopStringLen, len(st))
			}
		}
		g.stop = stop
	}
	if len(stopIDs) > maxStopTokenIDs {
		return nil, errInvalid("stop_token_ids", "stop_token_ids must contain at most %d ids", maxStopTokenIDs)
	}
	for _, v := range stopIDNums {
		if v.I < 0 || v.I >= int64(s.tok.VocabSize()) {
			return nil, errInvalid("stop_token_ids", "Token id %s is out of vocabulary", v)
		}
		g.stopIDs = append(g.stopIDs, uint32(v.I))
	}
	if truncate.Set {
		if truncate.I < 1 || truncate.I > int64(N) {
			return nil, errInvalid("truncate_prompt_tokens", "truncate_prompt_tokens must be between 1 and %d, got %s.", N, truncate)
		}
		g.truncate = int(truncate.I)
	}
	if hasSalt {
		if cacheSalt == "" {
			return nil, errInvalid("cache_salt", "cache_salt must be a non-empty string")
		}
		g.cacheSalt = cacheSalt
	}
	if e := s.setPriority(g, priority); e != nil {
		return nil, e
	}
	if seed.Set {
		v := seed.I
		g.seed = &v
	}
	if hasStreamOpts && !g.stream {
		return nil, errInvalid("stream_options", "Stream options can only be defined when `stream=True`.")
	}
	g.includeUsage = (hasStreamOpts && includeUsage) || s.cfg.EnableForceIncludeUsage
	g.continuousUsage = hasStreamOpts && continuous
	if chat && contFinal && addGen {
		return nil, errInvalid("", "Cannot set both `continue_final_message` and `add_generation_prompt` to True.")
	}
	var e *apiError
	if g.structured, e = parseStructured(o); e != nil {
		return nil, e
	}
	if chat {
		if g.tools, e = s.parseTools(o); e != nil {
			return nil, e
		}
		if raw, _ := o.raw("tool_choice"); s.cfg.ExcludeToolsWhenToolChoiceNone && string(raw) == `"none"` {
			tools = nil // vLLM renders no tools then
		}
	}
	if g.rank, e = s.headerRank(r); e != nil {
		return nil, e
	}
	if e := s.checkPD(g); e != nil {
		return nil, e
	}

	// 9. Rendering, tokenization, max tokens, context length.
	if chat {
		text, e := s.renderChat(o, msgs, tools, addGen, contFinal)
		if e != nil {
			return nil, e
		}
		// A rendered chat prompt already holds the template's special
		// tokens; vLLM adds none (add_special_tokens defaults to false).
		rawPrompts = []rawPrompt{{text: text, ids: s.tok.Encode(text, false), isText: true}}
	} else {
		for i := range rawPrompts {
			if rawPrompts[i].isText {
				rawPrompts[i].ids = s.tok.Encode(rawPrompts[i].text, true)
			}
		}
	}
	g.prompts = make([]promptSpec, len(rawPrompts))
	for i, rp := range rawPrompts {
		ps, e := s.checkPrompt(g, rp)
		if e != nil {
			return nil, e
		}
		g.prompts[i] = ps
		g.maxEffective = max(g.maxEffective, ps.m)
	}

	// 10. KV capacity: the engine's own rule, so the answer here and a
	// rejection at the head of its queue can never disagree. Every rank
	// has the same configuration, so rank 0 answers for all.
	for _, ps := range g.prompts {
		if rej := s.engines[0].CheckAdmissible(len(ps.ids), ps.m); rej != nil {
			return nil, errInvalid("", "%s", rej.Message)
		}
	}
	return g, nil
}

// setPriority applies a request's priority field: any value but 0 needs
// the priority scheduling policy.
func (s *Server) setPriority(g *genRequest, priority num) *apiError {
	if !priority.Set || priority.I == 0 {
		return nil
	}
	if s.cfg.SchedulingPolicy != engine.SchedulePriority {
		return errInvalid("priority", "Got priority %s but Priority scheduling is not enabled.", priority)
	}
	g.priority = int(max(min(priority.I, 1<<31-1), -(1 << 31)))
	return nil
}

// resolveModel sets the request's reported model name and LoRA adapter
// from the model field (absent: the base model). Any served name is
// accepted; responses carry the first one whichever was asked for, as
// vLLM's do, or the LoRA adapter's name.
func (s *Server) resolveModel(g *genRequest, model string, hasModel bool) *apiError {
	g.model = s.cfg.ServedName()
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
	N, p := s.cfg.MaxModelLen, len(ids)
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
		return promptSpec{}, errInvalid("max_tokens", "max_tokens must be at least 1, got 0.")
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
func parsePrompt(o object, vocabSize int) (prompts []rawPrompt, empty bool, badID string) {
	raw, ok := o.raw("prompt")
	if !ok {
		if o.failed() == nil {
			o.fail(errFieldRequired("prompt"))
		}
		return nil, false, ""
	}
	switch raw[0] {
	case '"':
		text, _ := o.String("prompt")
		return []rawPrompt{{text: text, isText: true}}, text == "", ""
	case '[':
	default:
		o.fail(errFieldType("prompt", "string"))
		return nil, false, ""
	}
	elems, e := parseArray(raw, "prompt")
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
			s, e := parseString(el, "prompt["+itoa(i)+"]")
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
			path := "prompt[" + itoa(i) + "]"
			inner, e := parseArray(el, path)
			if e != nil {
				o.fail(e)
				return nil, false, ""
			}
			ids, bad, e := parseIDs(inner, path, vocabSize)
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
	ids, bad, e := parseIDs(elems, "prompt", vocabSize)
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
func parseStop(o object) ([]string, bool) {
	raw, ok := o.raw("stop")
	if !ok {
		return nil, false
	}
	if raw[0] == '"' {
		s, _ := o.String("stop")
		return []string{s}, o.failed() == nil
	}
	elems, e := parseArray(raw, "stop")
	if e != nil {
		o.fail(errFieldType("stop", "array"))
		return nil, false
	}
	if len(elems) > maxStopStrings {
		return make([]string, len(elems)), true // too many: reported as a value error
	}
	out := make([]string, len(elems))
	for i, el := range elems {
		s, e := parseString(el, "stop["+itoa(i)+"]")
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
		Mode:                   s.cfg.OutputLenMode,
		NaturalOutputLen:       s.cfg.NaturalOutputLen,
		IgnoreEOS:              g.ignoreEOS,
		MinTokens:              g.minTokens,
		StopTokenIDs:           g.stopIDs,
		Stop:                   g.stop,
		IncludeStopStrInOutput: g.includeStr,
		Model:                  s.tok,
	}
	if rc := s.cfg.Reasoning; rc != nil {
		p.Reasoning = &plan.Reasoning{StartID: rc.StartThinkingTokenID, EndID: rc.EndThinkingTokenID, Ratio: rc.ThinkingRatio}
	}
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
