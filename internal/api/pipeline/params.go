package pipeline

import (
	"net/http"
	"slices"

	"github.com/mocker-server/mocker-server/internal/api/disagg"
	"github.com/mocker-server/mocker-server/internal/api/input"
	"github.com/mocker-server/mocker-server/internal/api/toolcall"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/kv"
	"github.com/mocker-server/mocker-server/internal/plan"
	"github.com/mocker-server/mocker-server/internal/tokenizer"
)

// Request limits: bounds that keep one request from costing unbounded work;
// exceeding one is a 400 naming the field.
const (
	maxN             = 128
	maxStopStringLen = 1024
	maxStopTokenIDs  = 64
	maxLogprobs      = 20
)

// GenRequest is a parsed and validated generation request of either
// endpoint.
type GenRequest struct {
	Chat    bool
	Model   string // echoed in responses
	BaseID  string // request id without the chatcmpl-/cmpl- prefix
	Created int64

	Stream          bool
	includeUsage    bool // final usage chunk of a stream
	continuousUsage bool // usage on every chunk

	N          int
	maxReq     wire.Num // M_req as sent (max_completion_tokens, else max_tokens)
	maxParam   string   // the field M_req came from
	maxName    string   // the surface's name of max_tokens
	toContext  bool     // no max tokens: the rest of the context (GenInput.MaxToContext)
	minTokens  int
	ignoreEOS  bool
	stop       []string
	stopIDs    []uint32
	includeStr bool

	Logprobs     bool // chat logprobs: true / completions logprobs set
	TopLogprobs  int  // chat top_logprobs / completions logprobs k
	seed         *int64
	priority     int
	Truncate     int // 0 = no truncation
	CacheSalt    string
	adapter      engine.Adapter           // the LoRA adapter named by model (zero: base model)
	ReturnIDs    bool                     // return_token_ids
	tokensAsIDs  bool                     // return_tokens_as_token_ids
	Echo         bool                     // completions only
	Rank         int                      // X-data-parallel-rank, -1 = route
	tools        *toolcall.ToolSpec       // chat tool calls; nil = none
	structured   *toolcall.StructuredSpec // output constraint; nil = free text
	Prompts      []PromptSpec
	maxEffective int              // largest M over the prompts (metrics)
	pd           disagg.PDRequest // disaggregated prefill/decode (disagg.go)

	// Ext is what only one surface's requests carry: that surface's own
	// request type (nil elsewhere), which only its package reads.
	Ext any

	// NaturalLen, when > 0, is the median of the natural length of each
	// output (internal/plan; under --output-len-mode max an output ends
	// naturally only when the client did not set the limit, MaxFromClient,
	// as a chat without max_tokens): the audio endpoints, whose transcript's
	// length follows the audio's.
	NaturalLen    int
	MaxFromClient bool

	echo bool // answer with Prompts[i].EchoText (--response-mode echo)
}

// PromptSpec is one prompt after tokenization and the max-token and
// context-length checks (checkPrompt).
type PromptSpec struct {
	IDs    []uint32 // after truncate_prompt_tokens
	Text   string   // the prompt text as given (string prompts, chat), for echo
	IsText bool     // given as text (context-length message form)
	M      int      // effective max tokens
	// EchoText is what the answer repeats under GenerationOptions.Echo:
	// a chat's last message, a completion's prompt as sent (token ids as
	// "1,2,3", as llm-d-inference-sim echoes them).
	EchoText string
	// MM are the prompt's multimodal items' placeholder runs in IDs,
	// MMFLOPs their encoder FLOPs and MMWork their encoder passes.
	MM      []kv.MMFeature
	MMFLOPs []float64
	MMWork  []*engine.EncoderWork
	// MMPads are the items' pad-value runs in IDs (SGLang mode).
	MMPads []kv.MMPad
}

// BuildGenerate runs the phases every generation surface shares on a
// typed input: the model (and LoRA adapter), the request id, the value
// checks, the output constraints and tools, routing and disaggregation,
// then rendering and tokenization, the per-prompt max-token and
// context-length rules, and the KV capacity check.
func (s *Server) BuildGenerate(in *GenInput, r *http.Request) (*GenRequest, *wire.APIError) {
	return s.BuildGenerateMeta(in, MetaOf(r))
}

// BuildGenerateMeta is BuildGenerate for a request that did not come over
// HTTP: m carries what the phases read from the HTTP request's headers.
func (s *Server) BuildGenerateMeta(in *GenInput, m Meta) (*GenRequest, *wire.APIError) {
	g := &GenRequest{Chat: in.Chat, toContext: in.MaxToContext, Rank: -1, Echo: in.Echo, ignoreEOS: in.IgnoreEOS,
		includeStr: in.IncludeStr, Stream: in.Stream, ReturnIDs: in.ReturnIDs,
		tokensAsIDs: in.TokensAsIDs, pd: in.PD}
	if e := s.ResolveModel(g, in.Model, in.HasModel); e != nil {
		return nil, e
	}
	g.BaseID = input.RequestID(m.RequestID, in.BodyID)
	for _, check := range [...]func(*GenRequest, *GenInput) *wire.APIError{
		checkInputs, s.checkLengths, s.checkBudgets, checkSamplingOf, checkLogprobs, s.checkStops,
		s.checkPromptOptions,
	} {
		if e := check(g, in); e != nil {
			return nil, e
		}
	}
	// The schemas are compiled under the request's context: their work
	// stops when the client leaves.
	if e := s.checkConstraints(m.Ctx, g, in); e != nil {
		return nil, e
	}
	var e *wire.APIError
	if g.Rank, e = s.RankOf(m.Rank); e != nil {
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
	if s.opts.Generation.Echo && !in.NoEcho {
		setEchoTexts(g, in, raw)
		g.echo = true
	}
	return g, s.checkCapacity(g)
}

// tokenizePrompts renders a chat request with its template or tokenizes
// the text prompts of a completions request (phase 9).
func (s *Server) tokenizePrompts(in *GenInput) ([]input.RawPrompt, *wire.APIError) {
	if in.Chat && len(in.Media) > 0 {
		items, e := s.resolveMedia(in.Media, in.MMKwargs)
		if e != nil {
			return nil, e
		}
		text, e := s.renderChat(in.Body, in.Msgs, items, in.ToolsJSON, in.AddGen, in.ContFinal)
		if e != nil {
			return nil, e
		}
		x, e := s.expandPrompt(text, items, false)
		if e != nil {
			return nil, e
		}
		return []input.RawPrompt{{Text: text, IDs: x.ids, IsText: true, MM: x.mm, MMFLOPs: x.flops, MMWork: x.works, MMPads: x.pads}}, nil
	}
	if in.Chat {
		text, e := s.RenderChat(in.Body, in.Msgs, in.ToolsJSON, in.AddGen, in.ContFinal)
		if e != nil {
			return nil, e
		}
		// A rendered chat prompt already holds the template's special
		// tokens; vLLM adds none (add_special_tokens defaults to false).
		return []input.RawPrompt{{Text: text, IDs: s.tok.Encode(text, false), IsText: true}}, nil
	}
	for i := range in.Prompts {
		if in.Prompts[i].IsText {
			in.Prompts[i].IDs = s.tok.Encode(in.Prompts[i].Text, true)
		}
	}
	return in.Prompts, nil
}

// checkPrompts truncates each prompt and applies the max-token and
// context-length rules (checkPrompt).
func (s *Server) checkPrompts(g *GenRequest, raw []input.RawPrompt) *wire.APIError {
	g.Prompts = make([]PromptSpec, len(raw))
	for i, rp := range raw {
		ps, e := s.checkPrompt(g, rp)
		if e != nil {
			return e
		}
		g.Prompts[i] = ps
		g.maxEffective = max(g.maxEffective, ps.M)
	}
	return nil
}

// checkCapacity is phase 10, KV capacity: the engine's own rule, so the
// answer here and a rejection at the head of its queue can never disagree.
// Every rank has the same configuration, so rank 0 answers for all.
func (s *Server) checkCapacity(g *GenRequest) *wire.APIError {
	for _, ps := range g.Prompts {
		if rej := s.engines[0].CheckAdmissible(len(ps.IDs), ps.M); rej != nil {
			return wire.ErrInvalid("", "%s", rej.Message)
		}
	}
	return nil
}

// ResolveModel sets the request's reported model name and LoRA adapter
// from the model field (absent: the base model). Any served name is
// accepted; responses carry the first one whichever was asked for, as
// vLLM's do, or the LoRA adapter's name.
func (s *Server) ResolveModel(g *GenRequest, model string, hasModel bool) *wire.APIError {
	g.Model = s.opts.Model.ServedName()
	if !hasModel {
		return nil
	}
	adapter, isAdapter := s.adapters.lookup(model)
	if !s.served[model] && !isAdapter {
		return &wire.APIError{Status: http.StatusNotFound, Type: wire.TypeNotFound,
			Message: "The model `" + model + "` does not exist.", Param: "model"}
	}
	if isAdapter {
		// vLLM answers with the adapter's name for an adapter's request.
		g.Model = model
		g.adapter = adapter
	}
	return nil
}

// checkPrompt truncates one tokenized prompt and applies the max-token and
// context-length rules: the effective max tokens is the request's limit,
// else max_model_len − prompt (chat) or min(16, max_model_len − prompt)
// (completions), as in vLLM.
func (s *Server) checkPrompt(g *GenRequest, rp input.RawPrompt) (PromptSpec, *wire.APIError) {
	ids := rp.IDs
	if len(ids) == 0 {
		return PromptSpec{}, wire.ErrInvalid("", "The prompt is empty after tokenization")
	}
	truncated := false
	if g.Truncate > 0 && len(ids) > g.Truncate {
		ids = ids[len(ids)-g.Truncate:]
		truncated = true
	}
	N, p := s.opts.Model.MaxModelLen, len(ids)
	var m int
	switch {
	case g.maxReq.Set:
		m = int(g.maxReq.I)
		if p+m > N {
			return PromptSpec{}, contextLengthError(N, m, p, rp.IsText)
		}
	case p > N:
		return PromptSpec{}, contextLengthError(N, 0, p, rp.IsText)
	case p == N:
		return PromptSpec{}, wire.ErrInvalid(g.maxName, "%s must be at least 1, got 0.", g.maxName)
	case g.Chat || g.toContext:
		m = N - p
	default:
		m = min(16, N-p)
	}
	if g.minTokens > m {
		return PromptSpec{}, wire.ErrInvalid("min_tokens", "min_tokens must be less than or equal to max_tokens=%d, got %d.", m, g.minTokens)
	}
	ps := PromptSpec{IDs: ids, Text: rp.Text, IsText: rp.IsText, M: m}
	ps.MM, ps.MMFLOPs, ps.MMWork = truncatedMM(rp.MM, rp.MMFLOPs, rp.MMWork, len(rp.IDs)-len(ids))
	ps.MMPads = truncatedPads(rp.MMPads, len(rp.IDs)-len(ids))
	if !rp.IsText || truncated {
		ps.Text = tokenizer.DecodeLiteral(ids)
	}
	return ps, nil
}

// contextLengthError is vLLM's context-length message:
// text prompts report vLLM's lower bound P = N − M + 1, token prompts the
// exact count.
func contextLengthError(N, M, p int, isText bool) *wire.APIError {
	const tail = "Please reduce the length of the input prompt or the number of requested output tokens."
	if isText {
		P := N - M + 1
		return wire.ErrInvalid("input_tokens", "This model's maximum context length is %d tokens. However, you requested %d output tokens and your prompt contains at least %d input tokens, for a total of at least %d tokens. %s (parameter=input_tokens, value=%d)",
			N, M, P, N+1, tail, P)
	}
	return wire.ErrInvalid("input_tokens", "This model's maximum context length is %d tokens. However, you requested %d output tokens and your prompt contains %d input tokens, for a total of %d tokens. %s (parameter=input_tokens, value=%d)",
		N, M, p, p+M, tail, p)
}

// checkSampling validates the sampling parameters that have no effect
// but are still range-checked as vLLM does, so a bad value fails here too.
func checkSampling(temperature, topP, topK, minP, freqPen, presPen, repPen wire.Num) *wire.APIError {
	switch {
	case temperature.Set && temperature.F < 0:
		return wire.ErrInvalid("temperature", "temperature must be non-negative, got %s.", temperature)
	case topP.Set && !(topP.F > 0 && topP.F <= 1):
		return wire.ErrInvalid("top_p", "top_p must be in (0, 1], got %s.", topP)
	case topK.Set && topK.I < -1:
		return wire.ErrInvalid("top_k", "top_k must be -1 (disable), or at least 1, got %s.", topK)
	case minP.Set && !(minP.F >= 0 && minP.F <= 1):
		return wire.ErrInvalid("min_p", "min_p must be in [0, 1], got %s.", minP)
	case freqPen.Set && !(freqPen.F >= -2 && freqPen.F <= 2):
		return wire.ErrInvalid("frequency_penalty", "frequency_penalty must be in [-2, 2], got %s.", freqPen)
	case presPen.Set && !(presPen.F >= -2 && presPen.F <= 2):
		return wire.ErrInvalid("presence_penalty", "presence_penalty must be in [-2, 2], got %s.", presPen)
	case repPen.Set && !(repPen.F > 0):
		return wire.ErrInvalid("repetition_penalty", "repetition_penalty must be greater than zero, got %s.", repPen)
	}
	return nil
}

// PlanParams are the per-choice inputs of plan.Plan common to a request.
func (s *Server) PlanParams(g *GenRequest) plan.Params {
	p := plan.Params{
		SetsMax:                g.maxReq.Set,
		Chat:                   g.Chat,
		Mode:                   s.opts.Generation.OutputLenMode,
		NaturalOutputLen:       s.opts.Generation.NaturalOutputLen,
		NaturalSigma:           s.opts.Generation.NaturalSigma,
		IgnoreEOS:              g.ignoreEOS,
		MinTokens:              g.minTokens,
		StopTokenIDs:           g.stopIDs,
		Stop:                   g.stop,
		IncludeStopStrInOutput: g.includeStr,
		Model:                  s.tok,
	}
	p.Reasoning = s.opts.Generation.Reasoning
	if g.NaturalLen > 0 {
		p.Chat, p.SetsMax, p.NaturalOutputLen = true, g.MaxFromClient, g.NaturalLen
	}
	return p
}

// LogUnknownFields logs, at debug level, the body fields an endpoint does
// not know (they are ignored, as vLLM ignores extra fields).
func (s *Server) LogUnknownFields(o wire.Object, r *http.Request, known map[string]bool) {
	if unknown := o.UnknownKeys(known); len(unknown) > 0 {
		slices.Sort(unknown)
		s.log.Debug("ignoring unknown request fields", "path", r.URL.Path, "fields", unknown)
	}
}

// CheckModel applies the model rule to an optional model field: absent is
// fine, otherwise it must be a served model name (404).
func (s *Server) CheckModel(o wire.Object) *wire.APIError {
	model, ok := o.String("model")
	if e := o.Failed(); e != nil {
		return e
	}
	if _, isAdapter := s.adapters.lookup(model); ok && !s.served[model] && !isAdapter {
		return &wire.APIError{Status: http.StatusNotFound, Type: wire.TypeNotFound,
			Message: "The model `" + model + "` does not exist.", Param: "model"}
	}
	return nil
}

// IncludeUsage reports whether a stream ends with a usage chunk
// (stream_options.include_usage, or --enable-force-include-usage).
func (g *GenRequest) IncludeUsage() bool { return g.includeUsage }

// ContinuousUsage reports whether every chunk of a stream carries usage.
func (g *GenRequest) ContinuousUsage() bool { return g.continuousUsage }

// truncatedPads shifts the pad-value runs by the cut tokens of a truncated
// prompt; a run that was cut, even in part, is dropped, as truncatedMM
// drops its item.
func truncatedPads(pads []kv.MMPad, cut int) []kv.MMPad {
	if cut == 0 || len(pads) == 0 {
		return pads
	}
	out := make([]kv.MMPad, 0, len(pads))
	for _, p := range pads {
		if p.Offset >= cut {
			p.Offset -= cut
			out = append(out, p)
		}
	}
	return out
}

// truncatedMM shifts the items' runs by the cut tokens of a truncated
// prompt; an item whose run was cut, even in part, leaves the prompt (its
// tokens are then ordinary ones to the block hash).
func truncatedMM(mm []kv.MMFeature, flops []float64, works []*engine.EncoderWork, cut int) ([]kv.MMFeature, []float64, []*engine.EncoderWork) {
	if cut == 0 || len(mm) == 0 {
		return mm, flops, works
	}
	out := make([]kv.MMFeature, 0, len(mm))
	var outF []float64
	var outW []*engine.EncoderWork
	for i, f := range mm {
		if f.Offset >= cut {
			f.Offset -= cut
			out = append(out, f)
			if i < len(flops) {
				outF = append(outF, flops[i])
			}
			if i < len(works) {
				outW = append(outW, works[i])
			}
		}
	}
	return out, outF, outW
}
