package pipeline

import (
	"github.com/mocker-server/mocker-server/internal/api/disagg"
	"github.com/mocker-server/mocker-server/internal/api/input"
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
	// without them gives an empty object (EmptyObject).
	Body wire.Object
	// SGLangConstraint says Body is SGLang's sampling_params: the
	// constraint phase reads SGLang's names (regex, json_schema, ebnf,
	// structural_tag) instead of vLLM's and OpenAI's.
	SGLangConstraint bool

	Model    string
	HasModel bool
	BodyID   string // the body's request id (request_id; SGLang's rid)

	// Chat: the messages and the template's inputs.
	Msgs      []tokenizer.Message
	MsgsParam string // the surface's name of messages ("" = messages)
	BadPart   string // path of a content part of no known type
	// Media are the messages' multimodal parts in order (multimodal.go).
	Media []input.MediaPart
	// MMKwargs are the request's mm_processor_kwargs (ReadMMKwargs), for
	// its media.
	MMKwargs  MMKwargs
	ToolsJSON []byte // the tools the template renders (compact JSON)
	AddGen    bool
	ContFinal bool
	// Completions: the prompts as sent, and their value errors.
	Prompts     []input.RawPrompt
	EmptyPrompt bool
	BadTokenID  string
	Echo        bool

	MaxCompletion wire.Num // chat's max_completion_tokens
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
	LogprobsK      wire.Num // completions logprobs
	PromptLogprobs bool
	// MaxToContext: without a max tokens value a prompt may generate up
	// to the rest of the context, as vLLM's engine allows a request whose
	// SamplingParams have max_tokens=None (its gRPC server's), instead of
	// the completions endpoint's 16.
	MaxToContext bool

	Seed        wire.Num
	Priority    wire.Num
	Truncate    wire.Num
	CacheSalt   string
	HasSalt     bool
	ReturnIDs   bool
	TokensAsIDs bool
	PD          disagg.PDRequest
	Sampling    SamplingInput
	SuffixSet   bool
	BestOf      wire.Num
	// NoEcho keeps the planned output under --response-mode echo: a
	// request whose prompt is not text a client sent (the audio
	// endpoints' encoder positions).
	NoEcho bool
}

// SamplingInput are the sampling parameters that have no effect on the
// mock's output but are range-checked as vLLM does.
type SamplingInput struct {
	Temperature, TopP, TopK, minP, freqPen, presPen, RepPen wire.Num
}

// SamplingValues returns the sampling input of a front end that reads the
// values itself (gRPC) rather than from a JSON body.
func SamplingValues(temperature, topP, topK, minP, freqPen, presPen, repPen wire.Num) SamplingInput {
	return SamplingInput{Temperature: temperature, TopP: topP, TopK: topK, minP: minP,
		freqPen: freqPen, presPen: presPen, RepPen: repPen}
}

// EmptyObject is a body without fields, for surfaces whose requests carry
// no constraint, tool or template fields.
func EmptyObject() wire.Object { return wire.Object{Err: new(*wire.APIError)} }

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

// MaxStopTokenIDs is the most stop token ids a request may carry; a front
// end needs to keep only one more than this to have too many reported.
const MaxStopTokenIDs = maxStopTokenIDs

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
