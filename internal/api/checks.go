package api

import "github.com/mocker-server/mocker-server/internal/tokenizer"

// The value checks every generation surface shares (phase 8 of
// docs/http-api.md), in the order buildGenerate runs them. Each reads the
// typed input and sets the parsed request's fields.

// checkInputs reports the value errors of the messages or prompts.
func checkInputs(_ *genRequest, in *genInput) *apiError {
	if in.chat {
		return checkMessages(in.msgs, in.badPart, in.msgsParam)
	}
	switch {
	case in.emptyPrompt:
		return errInvalid("prompt", "prompt must not be empty")
	case in.badTokenID != "":
		return errInvalid("prompt", "Token id %s is out of vocabulary", in.badTokenID)
	}
	return nil
}

// checkMessages checks chat messages (also /tokenize's): at least one,
// text content parts only. param names the messages field ("" =
// messages).
func checkMessages(msgs []tokenizer.Message, badPart, param string) *apiError {
	if param == "" {
		param = "messages"
	}
	switch {
	case len(msgs) == 0:
		return errInvalid(param, "messages must contain at least one message")
	case badPart != "":
		return errInvalid(badPart, "Only text content parts are supported by mocker-server.")
	}
	return nil
}

// checkChatFlags refuses continue_final_message with add_generation_prompt.
func checkChatFlags(addGen, contFinal bool) *apiError {
	if addGen && contFinal {
		return errInvalid("", "Cannot set both `continue_final_message` and `add_generation_prompt` to True.")
	}
	return nil
}

// checkLengths checks n, best_of, suffix, the requested max tokens and
// min_tokens.
func (s *Server) checkLengths(g *genRequest, in *genInput) *apiError {
	N := s.opts.Model.MaxModelLen
	g.maxName = "max_tokens"
	if in.maxTokensName != "" {
		g.maxName = in.maxTokensName
	}
	g.n = 1
	if n := in.n; n.Set {
		switch {
		case n.I < 1:
			return errInvalid("n", "n must be at least 1, got %s.", n)
		case n.I > maxN:
			return errInvalid("n", "n must be at most %d, got %s.", maxN, n)
		}
		g.n = int(n.I)
	}
	if !in.chat && in.bestOf.Set && in.bestOf.I != int64(g.n) {
		return errInvalid("best_of", "best_of is not supported")
	}
	if in.suffixSet {
		return errInvalid("suffix", "suffix is not currently supported")
	}
	switch {
	case in.maxCompletion.Set:
		g.maxReq, g.maxParam = in.maxCompletion, "max_completion_tokens"
	case in.maxTokens.Set:
		g.maxReq, g.maxParam = in.maxTokens, g.maxName
	}
	if g.maxReq.Set {
		if g.maxReq.I < 1 {
			return errInvalid(g.maxParam, "%s must be at least 1, got %s.", g.maxParam, g.maxReq)
		}
		if g.maxReq.I > int64(N) {
			return errInvalid(g.maxParam, "%s=%s cannot be greater than max_model_len=max_total_tokens=%d. Please request fewer output tokens. (parameter=%s, value=%s)",
				g.maxParam, g.maxReq, N, g.maxParam, g.maxReq)
		}
	}
	if mt := in.minTokens; mt.Set {
		if mt.I < 0 {
			return errInvalid("min_tokens", "min_tokens must be greater than or equal to 0, got %s.", mt)
		}
		// Values above max_model_len fail the "≤ effective max" check
		// of checkPrompt.
		g.minTokens = int(min(mt.I, int64(N)+1))
	}
	return nil
}

func checkSamplingOf(_ *genRequest, in *genInput) *apiError {
	sp := in.sampling
	return checkSampling(sp.temperature, sp.topP, sp.topK, sp.minP, sp.freqPen, sp.presPen, sp.repPen)
}

// checkLogprobs checks chat's logprobs and top_logprobs or completions'
// logprobs, and refuses prompt_logprobs.
func checkLogprobs(g *genRequest, in *genInput) *apiError {
	if in.chat {
		if tl := in.topLogprobs; tl.Set {
			if tl.I < 0 || tl.I > maxLogprobs {
				return errInvalid("top_logprobs", "top_logprobs must be between 0 and %d, got %s.", maxLogprobs, tl)
			}
			if tl.I > 0 && !in.chatLogprobs {
				return errInvalid("top_logprobs", "when using `top_logprobs`, `logprobs` must be set to true.")
			}
			g.topLogprobs = int(tl.I)
		}
		g.logprobs = in.chatLogprobs
	} else if k := in.logprobsK; k.Set {
		if k.I < 0 || k.I > maxLogprobs {
			return errInvalid("logprobs", "logprobs must be between 0 and %d, got %s.", maxLogprobs, k)
		}
		g.logprobs, g.topLogprobs = true, int(k.I)
	}
	if in.promptLogprobs {
		return errInvalid("prompt_logprobs", "prompt_logprobs is not supported by mocker-server")
	}
	return nil
}

// checkStops checks the stop strings and stop token ids.
func (s *Server) checkStops(g *genRequest, in *genInput) *apiError {
	if in.stopSet {
		if len(in.stop) > maxStopStrings {
			return errInvalid("stop", "stop must contain at most %d strings", maxStopStrings)
		}
		for _, st := range in.stop {
			if st == "" {
				return errInvalid("stop", "stop strings must not be empty")
			}
			if len(st) > maxStopStringLen {
				return errInvalid("stop", "stop strings must be at most %d bytes, got %d", maxStopStringLen, len(st))
			}
		}
		g.stop = in.stop
	}
	if in.stopIDCount > maxStopTokenIDs {
		return errInvalid("stop_token_ids", "stop_token_ids must contain at most %d ids", maxStopTokenIDs)
	}
	for _, v := range in.stopIDs {
		if v.I < 0 || v.I >= int64(s.tok.VocabSize()) {
			return errInvalid("stop_token_ids", "Token id %s is out of vocabulary", v)
		}
		g.stopIDs = append(g.stopIDs, uint32(v.I))
	}
	return nil
}

// checkPromptOptions checks truncation, the cache salt, the priority, the
// seed and the stream options.
func (s *Server) checkPromptOptions(g *genRequest, in *genInput) *apiError {
	var e *apiError
	if g.truncate, e = s.checkTruncate(in.truncate); e != nil {
		return e
	}
	if g.cacheSalt, e = checkCacheSalt(in.cacheSalt, in.hasSalt); e != nil {
		return e
	}
	if e := s.setPriority(g, in.priority); e != nil {
		return e
	}
	if in.seed.Set {
		v := in.seed.I
		g.seed = &v
	}
	if in.hasStreamOpts && !g.stream {
		return errInvalid("stream_options", "Stream options can only be defined when `stream=True`.")
	}
	g.includeUsage = (in.hasStreamOpts && in.includeUsage) || s.opts.HTTP.ForceIncludeUsage
	g.continuousUsage = in.hasStreamOpts && in.continuous
	if in.chat {
		return checkChatFlags(in.addGen, in.contFinal)
	}
	return nil
}

// checkTruncate checks truncate_prompt_tokens (0: no truncation).
func (s *Server) checkTruncate(truncate num) (int, *apiError) {
	if !truncate.Set {
		return 0, nil
	}
	N := s.opts.Model.MaxModelLen
	if truncate.I < 1 || truncate.I > int64(N) {
		return 0, errInvalid("truncate_prompt_tokens", "truncate_prompt_tokens must be between 1 and %d, got %s.", N, truncate)
	}
	return int(truncate.I), nil
}

// checkCacheSalt checks cache_salt: when given, a non-empty string.
func checkCacheSalt(salt string, given bool) (string, *apiError) {
	if given && salt == "" {
		return "", errInvalid("cache_salt", "cache_salt must be a non-empty string")
	}
	return salt, nil
}

// checkConstraints reads the output constraint and, for chat, the tools
// (which --exclude-tools-when-tool-choice-none may keep from the template).
func (s *Server) checkConstraints(g *genRequest, in *genInput) *apiError {
	var e *apiError
	if g.structured, e = parseStructured(in.body); e != nil {
		return e
	}
	if !in.chat {
		return nil
	}
	if g.tools, e = s.parseTools(in.body); e != nil {
		return e
	}
	if raw, _ := in.body.raw("tool_choice"); s.opts.Tools.ExcludeWhenChoiceNone && string(raw) == `"none"` {
		in.toolsJSON = nil // vLLM renders no tools then
	}
	return nil
}

// setPriority applies a request's priority field: any value but 0 needs
// the priority scheduling policy.
func (s *Server) setPriority(g *genRequest, priority num) *apiError {
	if !priority.Set || priority.I == 0 {
		return nil
	}
	if !s.opts.Generation.PriorityScheduling {
		return errInvalid("priority", "Got priority %s but Priority scheduling is not enabled.", priority)
	}
	g.priority = int(max(min(priority.I, 1<<31-1), -(1 << 31)))
	return nil
}
