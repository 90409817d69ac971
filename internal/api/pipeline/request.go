package pipeline

import (
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/tokenizer"
)

// GenInput is one generation request as its surface reads it off the
// wire: typed fields, type-checked but not yet value-checked. Every
// generation surface fills one straight from its own body (chat and
// completions: readGenInput; Responses: responsesInput; Messages:
// messagesInput; SGLang: sglangInput) and hands it to Server.buildGenerate,
// which runs the checks they all share. Type errors name the surface's own
// fields.
type GenInput struct {
	Chat bool
	// Body holds the fields the constraint, tool and chat-template phases
	// read (response_format, tools, chat_template_kwargs, …); a surface
	// without them gives an empty object (emptyObject).
	Body wire.Object

	Model    string
	HasModel bool
	BodyID   string // the body's request id (request_id; SGLang's rid)

	// Chat: the messages and the template's inputs.
	Msgs      []tokenizer.Message
	MsgsParam string // the surface's name of messages ("" = messages)
	BadPart   string // path of a non-text content part
	ToolsJSON []byte // the tools the template renders (compact JSON)
	AddGen    bool
	contFinal bool
	// Completions: the prompts as sent, and their value errors.
	Prompts     []RawPrompt
	EmptyPrompt bool
	BadTokenID  string
	echo        bool

	maxCompletion wire.Num // chat's max_completion_tokens
	MaxTokens     wire.Num // max_tokens
	MaxTokensName string   // the field maxTokens came from ("" = max_tokens)
	MinTokens     wire.Num
	IgnoreEOS     bool
	Stop          []string
	StopSet       bool
	StopIDs       []wire.Num // the first maxStopTokenIDs+1 ids
	StopIDCount   int        // ids sent
	IncludeStr    bool
	N             wire.Num

	Stream        bool
	HasStreamOpts bool
	IncludeUsage  bool
	Continuous    bool

	ChatLogprobs   bool
	TopLogprobs    wire.Num
	logprobsK      wire.Num // completions logprobs
	promptLogprobs bool

	Seed        wire.Num
	Priority    wire.Num
	Truncate    wire.Num
	CacheSalt   string
	HasSalt     bool
	returnIDs   bool
	tokensAsIDs bool
	PD          pdRequest
	Sampling    SamplingInput
	suffixSet   bool
	bestOf      wire.Num
}

// SamplingInput are the sampling parameters that have no effect on the
// mock's output but are range-checked as vLLM does.
type SamplingInput struct {
	Temperature, TopP, TopK, minP, freqPen, presPen, RepPen wire.Num
}

// EmptyObject is a body without fields, for surfaces whose requests carry
// no constraint, tool or template fields.
func EmptyObject() wire.Object { return wire.Object{Err: new(*wire.APIError)} }

// readGenInput reads the fields of a chat or completions body (phase 6 of
// docs/http-api.md: field types and required fields). Type errors are
// recorded in o, first one wins, in the order the fields are read here.
func readGenInput(o wire.Object, chat bool, vocabSize int) *GenInput {
	in := &GenInput{Chat: chat, Body: o}
	if chat {
		in.Msgs, in.BadPart = ParseMessages(o)
		if a, ok := o.Kind("tools", "array"); ok {
			in.ToolsJSON = wire.CompactJSON(a)
		}
		in.AddGen = o.Bool("add_generation_prompt", true)
		in.contFinal = o.Bool("continue_final_message", false)
	} else {
		in.Prompts, in.EmptyPrompt, in.BadTokenID = ParsePrompt(o, "prompt", vocabSize)
		in.echo = o.Bool("echo", false)
	}
	in.Model, in.HasModel = o.String("model")
	if chat {
		in.maxCompletion = o.Int("max_completion_tokens")
	}
	in.MaxTokens = o.Int("max_tokens")
	in.MinTokens = o.Int("min_tokens")
	in.IgnoreEOS = o.Bool("ignore_eos", false)
	in.Stop, in.StopSet = ParseStop(o)
	in.StopIDs, in.StopIDCount = ParseStopIDs(o)
	in.IncludeStr = o.Bool("include_stop_str_in_output", false)
	in.N = o.Int("n")
	in.Stream = o.Bool("stream", false)
	readStreamOptions(o, in)
	if chat {
		in.ChatLogprobs = o.Bool("logprobs", false)
		in.TopLogprobs = o.Int("top_logprobs")
	} else {
		in.logprobsK = o.Int("logprobs")
	}
	in.Seed = o.Int("seed")
	in.Priority = o.Int("priority")
	in.Truncate = o.Int("truncate_prompt_tokens")
	in.CacheSalt, in.HasSalt = o.String("cache_salt")
	in.returnIDs = o.Bool("return_token_ids", false)
	in.tokensAsIDs = o.Bool("return_tokens_as_token_ids", false)
	in.BodyID, _ = o.String("request_id")
	in.PD = ParsePD(o) // disaggregation (disagg.go)
	in.Sampling = ReadSampling(o)
	if !chat {
		_, in.suffixSet = o.String("suffix")
		in.bestOf = o.Int("best_of")
		o.Bool("add_special_tokens", true)
	}
	in.promptLogprobs = o.Has("prompt_logprobs")
	return in
}

// readStreamOptions reads stream_options.
func readStreamOptions(o wire.Object, in *GenInput) {
	in.IncludeUsage = true
	so, ok := o.Object("stream_options")
	if !ok {
		return
	}
	in.HasStreamOpts = true
	in.IncludeUsage = so.Bool("include_usage", true)
	in.Continuous = so.Bool("continuous_usage_stats", false)
}

// ReadSampling reads the range-checked sampling parameters under their
// OpenAI names.
func ReadSampling(o wire.Object) SamplingInput {
	return SamplingInput{
		Temperature: o.Float("temperature"),
		TopP:        o.Float("top_p"),
		TopK:        o.Int("top_k"),
		minP:        o.Float("min_p"),
		freqPen:     o.Float("frequency_penalty"),
		presPen:     o.Float("presence_penalty"),
		RepPen:      o.Float("repetition_penalty"),
	}
}

// ParseStopIDs reads stop_token_ids: the first maxStopTokenIDs+1 ids (one
// more than allowed is enough to report too many) and how many were sent.
func ParseStopIDs(o wire.Object) ([]wire.Num, int) {
	raw, _ := o.Array("stop_token_ids")
	ids := make([]wire.Num, 0, min(len(raw), maxStopTokenIDs+1))
	for i, el := range raw {
		if i > maxStopTokenIDs {
			break // already too many; no need to look further
		}
		v, e := wire.ParseInt(el, "stop_token_ids")
		if e != nil {
			o.Fail(e)
			break
		}
		ids = append(ids, v)
	}
	return ids, len(raw)
}
