package pipeline

import (
	"context"

	"github.com/mocker-server/mocker-server/internal/api/input"
	"github.com/mocker-server/mocker-server/internal/api/toolcall"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/tokenizer"
)

// The value checks every generation surface shares (phase 8 of
// docs/http-api.md), in the order BuildGenerate runs them. Each reads the
// typed input and sets the parsed request's fields.

// checkInputs reports the value errors of the messages or prompts.
func checkInputs(_ *GenRequest, in *GenInput) *wire.APIError {
	if in.Chat {
		return CheckMessages(in.Msgs, in.BadPart, in.MsgsParam)
	}
	switch {
	case in.EmptyPrompt:
		return wire.ErrInvalid("prompt", "prompt must not be empty")
	case in.BadTokenID != "":
		return wire.ErrInvalid("prompt", "Token id %s is out of vocabulary", in.BadTokenID)
	}
	return nil
}

// CheckMessages checks chat messages (also /tokenize's): at least one,
// content parts of known types only. param names the messages field ("" =
// messages).
func CheckMessages(msgs []tokenizer.Message, badPart, param string) *wire.APIError {
	if param == "" {
		param = "messages"
	}
	switch {
	case len(msgs) == 0:
		return wire.ErrInvalid(param, "messages must contain at least one message")
	case badPart != "":
		return wire.ErrInvalid(badPart, "Unsupported content part type: supported are text, image_url, input_image, input_audio, audio_url, video_url, image_embeds and audio_embeds.")
	}
	return nil
}

// CheckChatFlags refuses continue_final_message with add_generation_prompt.
func CheckChatFlags(addGen, contFinal bool) *wire.APIError {
	if addGen && contFinal {
		return wire.ErrInvalid("", "Cannot set both `continue_final_message` and `add_generation_prompt` to True.")
	}
	return nil
}

// checkBudgets applies --max-prompts-per-request and
// --max-sequences-per-request (prompts × n) before anything is tokenized
// or submitted: a 17 KB body of 2,000 prompts × n=128 would otherwise
// queue 256,000 sequences on one engine. Runs after checkLengths (g.N).
func (s *Server) checkBudgets(g *GenRequest, in *GenInput) *wire.APIError {
	b := s.opts.Budgets
	prompts := max(len(in.Prompts), 1) // chat: one conversation
	if b.MaxPromptsPerRequest > 0 && prompts > b.MaxPromptsPerRequest {
		return wire.ErrInvalid("prompt", "The request has %d prompts, more than the limit of %d (--max-prompts-per-request).",
			prompts, b.MaxPromptsPerRequest)
	}
	if b.MaxSequencesPerRequest > 0 && prompts*g.N > b.MaxSequencesPerRequest {
		return wire.ErrInvalid("n", "The request asks for %d prompts × n=%d = %d sequences, more than the limit of %d (--max-sequences-per-request).",
			prompts, g.N, prompts*g.N, b.MaxSequencesPerRequest)
	}
	return nil
}

// checkLengths checks n, best_of, suffix, the requested max tokens and
// min_tokens.
func (s *Server) checkLengths(g *GenRequest, in *GenInput) *wire.APIError {
	N := s.opts.Model.MaxModelLen
	g.maxName = "max_tokens"
	if in.MaxTokensName != "" {
		g.maxName = in.MaxTokensName
	}
	g.N = 1
	if n := in.N; n.Set {
		switch {
		case n.I < 1:
			return wire.ErrInvalid("n", "n must be at least 1, got %s.", n)
		case n.I > maxN:
			return wire.ErrInvalid("n", "n must be at most %d, got %s.", maxN, n)
		}
		g.N = int(n.I)
	}
	if !in.Chat && in.BestOf.Set && in.BestOf.I != int64(g.N) {
		return wire.ErrInvalid("best_of", "best_of is not supported")
	}
	if in.SuffixSet {
		return wire.ErrInvalid("suffix", "suffix is not currently supported")
	}
	switch {
	case in.MaxCompletion.Set:
		g.maxReq, g.maxParam = in.MaxCompletion, "max_completion_tokens"
	case in.MaxTokens.Set:
		g.maxReq, g.maxParam = in.MaxTokens, g.maxName
	}
	if g.maxReq.Set {
		if g.maxReq.I < 1 {
			return wire.ErrInvalid(g.maxParam, "%s must be at least 1, got %s.", g.maxParam, g.maxReq)
		}
		if g.maxReq.I > int64(N) {
			return wire.ErrInvalid(g.maxParam, "%s=%s cannot be greater than max_model_len=max_total_tokens=%d. Please request fewer output tokens. (parameter=%s, value=%s)",
				g.maxParam, g.maxReq, N, g.maxParam, g.maxReq)
		}
	}
	if mt := in.MinTokens; mt.Set {
		if mt.I < 0 {
			return wire.ErrInvalid("min_tokens", "min_tokens must be greater than or equal to 0, got %s.", mt)
		}
		// Values above max_model_len fail the "≤ effective max" check
		// of checkPrompt.
		g.minTokens = int(min(mt.I, int64(N)+1))
	}
	return nil
}

func checkSamplingOf(_ *GenRequest, in *GenInput) *wire.APIError {
	sp := in.Sampling
	return checkSampling(sp.Temperature, sp.TopP, sp.TopK, sp.minP, sp.freqPen, sp.presPen, sp.RepPen)
}

// checkLogprobs checks chat's logprobs and top_logprobs or completions'
// logprobs, and refuses prompt_logprobs.
func checkLogprobs(g *GenRequest, in *GenInput) *wire.APIError {
	if in.Chat {
		if tl := in.TopLogprobs; tl.Set {
			if tl.I < 0 || tl.I > maxLogprobs {
				return wire.ErrInvalid("top_logprobs", "top_logprobs must be between 0 and %d, got %s.", maxLogprobs, tl)
			}
			if tl.I > 0 && !in.ChatLogprobs {
				return wire.ErrInvalid("top_logprobs", "when using `top_logprobs`, `logprobs` must be set to true.")
			}
			g.TopLogprobs = int(tl.I)
		}
		g.Logprobs = in.ChatLogprobs
	} else if k := in.LogprobsK; k.Set {
		if k.I < 0 || k.I > maxLogprobs {
			return wire.ErrInvalid("logprobs", "logprobs must be between 0 and %d, got %s.", maxLogprobs, k)
		}
		g.Logprobs, g.TopLogprobs = true, int(k.I)
	}
	if in.PromptLogprobs {
		return wire.ErrInvalid("prompt_logprobs", "prompt_logprobs is not supported by mocker-server")
	}
	return nil
}

// checkStops checks the stop strings and stop token ids.
func (s *Server) checkStops(g *GenRequest, in *GenInput) *wire.APIError {
	if in.StopSet {
		if len(in.Stop) > input.MaxStopStrings {
			return wire.ErrInvalid("stop", "stop must contain at most %d strings", input.MaxStopStrings)
		}
		for _, st := range in.Stop {
			if st == "" {
				return wire.ErrInvalid("stop", "stop strings must not be empty")
			}
			if len(st) > maxStopStringLen {
				return wire.ErrInvalid("stop", "stop strings must be at most %d bytes, got %d", maxStopStringLen, len(st))
			}
		}
		g.stop = in.Stop
	}
	if in.StopIDCount > maxStopTokenIDs {
		return wire.ErrInvalid("stop_token_ids", "stop_token_ids must contain at most %d ids", maxStopTokenIDs)
	}
	for _, v := range in.StopIDs {
		if v.I < 0 || v.I >= int64(s.tok.VocabSize()) {
			return wire.ErrInvalid("stop_token_ids", "Token id %s is out of vocabulary", v)
		}
		g.stopIDs = append(g.stopIDs, uint32(v.I))
	}
	return nil
}

// checkPromptOptions checks truncation, the cache salt, the priority, the
// seed and the stream options.
func (s *Server) checkPromptOptions(g *GenRequest, in *GenInput) *wire.APIError {
	var e *wire.APIError
	if g.Truncate, e = s.CheckTruncate(in.Truncate); e != nil {
		return e
	}
	if g.CacheSalt, e = CheckCacheSalt(in.CacheSalt, in.HasSalt); e != nil {
		return e
	}
	if e := s.SetPriority(g, in.Priority); e != nil {
		return e
	}
	if in.Seed.Set {
		v := in.Seed.I
		g.seed = &v
	}
	if in.HasStreamOpts && !g.Stream {
		return wire.ErrInvalid("stream_options", "Stream options can only be defined when `stream=True`.")
	}
	g.includeUsage = (in.HasStreamOpts && in.IncludeUsage) || s.opts.HTTP.ForceIncludeUsage
	g.continuousUsage = in.HasStreamOpts && in.Continuous
	if in.Chat {
		return CheckChatFlags(in.AddGen, in.ContFinal)
	}
	return nil
}

// CheckTruncate checks truncate_prompt_tokens (0: no truncation).
func (s *Server) CheckTruncate(truncate wire.Num) (int, *wire.APIError) {
	if !truncate.Set {
		return 0, nil
	}
	N := s.opts.Model.MaxModelLen
	if truncate.I < 1 || truncate.I > int64(N) {
		return 0, wire.ErrInvalid("truncate_prompt_tokens", "truncate_prompt_tokens must be between 1 and %d, got %s.", N, truncate)
	}
	return int(truncate.I), nil
}

// CheckCacheSalt checks cache_salt: when given, a non-empty string.
func CheckCacheSalt(salt string, given bool) (string, *wire.APIError) {
	if given && salt == "" {
		return "", wire.ErrInvalid("cache_salt", "cache_salt must be a non-empty string")
	}
	return salt, nil
}

// checkConstraints reads the output constraint and, for chat, the tools
// (which --exclude-tools-when-tool-choice-none may keep from the template).
func (s *Server) checkConstraints(ctx context.Context, g *GenRequest, in *GenInput) *wire.APIError {
	var e *wire.APIError
	b := s.opts.Budgets
	sc := toolcall.SchemaContext{Ctx: ctx, MaxBytes: b.MaxSchemaBytes, MaxEnum: b.MaxSchemaEnum, MaxSteps: b.MaxSchemaSteps}
	parse := toolcall.ParseStructured
	if in.SGLangConstraint {
		parse = toolcall.ParseSGLangStructured
	}
	if g.structured, e = parse(sc, in.Body); e != nil {
		return e
	}
	if !in.Chat {
		return nil
	}
	if g.tools, e = toolcall.ParseTools(sc, in.Body, s.opts.Tools.AutoToolChoice, s.opts.Tools.Parser); e != nil {
		return e
	}
	if g.tools != nil {
		g.tools.SetConversation(in.Msgs)
	}
	if raw, _ := in.Body.Raw("tool_choice"); s.opts.Tools.ExcludeWhenChoiceNone && string(raw) == `"none"` {
		in.ToolsJSON = nil // vLLM renders no tools then
	}
	return nil
}

// SetPriority applies a request's priority field: any value but 0 needs
// the priority scheduling policy.
func (s *Server) SetPriority(g *GenRequest, priority wire.Num) *wire.APIError {
	if !priority.Set || priority.I == 0 {
		return nil
	}
	if !s.opts.Generation.PriorityScheduling {
		return wire.ErrInvalid("priority", "Got priority %s but Priority scheduling is not enabled.", priority)
	}
	g.priority = int(max(min(priority.I, 1<<31-1), -(1 << 31)))
	return nil
}

// NotGeneratingMessage answers a generation request to a model with no
// generation task (--runner pooling) on the surfaces that exist for
// every runner: SGLang's /generate and the gRPC services' Generate.
const NotGeneratingMessage = "This model does not support generation: mocker-server serves it as a pooling model (--runner pooling)."

// CheckGenerates is a 400 with NotGeneratingMessage when the served
// model has no generation task; nil when it generates.
func (s *Server) CheckGenerates() *wire.APIError {
	if s.opts.Pooling.Generates() {
		return nil
	}
	return wire.ErrInvalid("", NotGeneratingMessage)
}
