package api

import (
	"github.com/mocker-server/mocker-server/internal/tokenizer"
)

// genInput is one generation request as its surface reads it off the
// wire: typed fields, type-checked but not yet value-checked. Every
// generation surface fills one straight from its own body (chat and
// completions: readGenInput; Responses: responsesInput; Messages:
// messagesInput; SGLang: sglangInput) and hands it to Server.buildGenerate,
// which runs the checks they all share. Type errors name the surface's own
// fields.
type genInput struct {
	chat bool
	// body holds the fields the constraint, tool and chat-template phases
	// read (response_format, tools, chat_template_kwargs, …); a surface
	// without them gives an empty object (emptyObject).
	body object

	model    string
	hasModel bool
	bodyID   string // the body's request id (request_id; SGLang's rid)

	// Chat: the messages and the template's inputs.
	msgs      []tokenizer.Message
	msgsParam string // the surface's name of messages ("" = messages)
	badPart   string // path of a non-text content part
	toolsJSON []byte // the tools the template renders (compact JSON)
	addGen    bool
	contFinal bool
	// Completions: the prompts as sent, and their value errors.
	prompts     []rawPrompt
	emptyPrompt bool
	badTokenID  string
	echo        bool

	maxCompletion num    // chat's max_completion_tokens
	maxTokens     num    // max_tokens
	maxTokensName string // the field maxTokens came from ("" = max_tokens)
	minTokens     num
	ignoreEOS     bool
	stop          []string
	stopSet       bool
	stopIDs       []num // the first maxStopTokenIDs+1 ids
	stopIDCount   int   // ids sent
	includeStr    bool
	n             num

	stream        bool
	hasStreamOpts bool
	includeUsage  bool
	continuous    bool

	chatLogprobs   bool
	topLogprobs    num
	logprobsK      num // completions logprobs
	promptLogprobs bool

	seed        num
	priority    num
	truncate    num
	cacheSalt   string
	hasSalt     bool
	returnIDs   bool
	tokensAsIDs bool
	pd          pdRequest
	sampling    samplingInput
	suffixSet   bool
	bestOf      num
}

// samplingInput are the sampling parameters that have no effect on the
// mock's output but are range-checked as vLLM does.
type samplingInput struct {
	temperature, topP, topK, minP, freqPen, presPen, repPen num
}

// emptyObject is a body without fields, for surfaces whose requests carry
// no constraint, tool or template fields.
func emptyObject() object { return object{err: new(*apiError)} }

// readGenInput reads the fields of a chat or completions body (phase 6 of
// docs/http-api.md: field types and required fields). Type errors are
// recorded in o, first one wins, in the order the fields are read here.
func readGenInput(o object, chat bool, vocabSize int) *genInput {
	in := &genInput{chat: chat, body: o}
	if chat {
		in.msgs, in.badPart = parseMessages(o)
		if a, ok := o.Kind("tools", "array"); ok {
			in.toolsJSON = compactJSON(a)
		}
		in.addGen = o.Bool("add_generation_prompt", true)
		in.contFinal = o.Bool("continue_final_message", false)
	} else {
		in.prompts, in.emptyPrompt, in.badTokenID = parsePrompt(o, "prompt", vocabSize)
		in.echo = o.Bool("echo", false)
	}
	in.model, in.hasModel = o.String("model")
	if chat {
		in.maxCompletion = o.Int("max_completion_tokens")
	}
	in.maxTokens = o.Int("max_tokens")
	in.minTokens = o.Int("min_tokens")
	in.ignoreEOS = o.Bool("ignore_eos", false)
	in.stop, in.stopSet = parseStop(o)
	in.stopIDs, in.stopIDCount = parseStopIDs(o)
	in.includeStr = o.Bool("include_stop_str_in_output", false)
	in.n = o.Int("n")
	in.stream = o.Bool("stream", false)
	readStreamOptions(o, in)
	if chat {
		in.chatLogprobs = o.Bool("logprobs", false)
		in.topLogprobs = o.Int("top_logprobs")
	} else {
		in.logprobsK = o.Int("logprobs")
	}
	in.seed = o.Int("seed")
	in.priority = o.Int("priority")
	in.truncate = o.Int("truncate_prompt_tokens")
	in.cacheSalt, in.hasSalt = o.String("cache_salt")
	in.returnIDs = o.Bool("return_token_ids", false)
	in.tokensAsIDs = o.Bool("return_tokens_as_token_ids", false)
	in.bodyID, _ = o.String("request_id")
	in.pd = parsePD(o) // disaggregation (disagg.go)
	in.sampling = readSampling(o)
	if !chat {
		_, in.suffixSet = o.String("suffix")
		in.bestOf = o.Int("best_of")
		o.Bool("add_special_tokens", true)
	}
	in.promptLogprobs = o.has("prompt_logprobs")
	return in
}

// readStreamOptions reads stream_options.
func readStreamOptions(o object, in *genInput) {
	in.includeUsage = true
	so, ok := o.Object("stream_options")
	if !ok {
		return
	}
	in.hasStreamOpts = true
	in.includeUsage = so.Bool("include_usage", true)
	in.continuous = so.Bool("continuous_usage_stats", false)
}

// readSampling reads the range-checked sampling parameters under their
// OpenAI names.
func readSampling(o object) samplingInput {
	return samplingInput{
		temperature: o.Float("temperature"),
		topP:        o.Float("top_p"),
		topK:        o.Int("top_k"),
		minP:        o.Float("min_p"),
		freqPen:     o.Float("frequency_penalty"),
		presPen:     o.Float("presence_penalty"),
		repPen:      o.Float("repetition_penalty"),
	}
}

// parseStopIDs reads stop_token_ids: the first maxStopTokenIDs+1 ids (one
// more than allowed is enough to report too many) and how many were sent.
func parseStopIDs(o object) ([]num, int) {
	raw, _ := o.Array("stop_token_ids")
	ids := make([]num, 0, min(len(raw), maxStopTokenIDs+1))
	for i, el := range raw {
		if i > maxStopTokenIDs {
			break // already too many; no need to look further
		}
		v, e := parseInt(el, "stop_token_ids")
		if e != nil {
			o.fail(e)
			break
		}
		ids = append(ids, v)
	}
	return ids, len(raw)
}
