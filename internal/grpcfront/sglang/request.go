package sglang

import (
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/mocker-server/mocker-server/internal/api/input"
	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	pb "github.com/mocker-server/mocker-server/internal/grpcfront/sglang/sglangpb"
)

// The GenerateRequest fields the mock reads are below. What SGLang
// applies and the mock cannot (logprobs, hidden states, custom logit
// processors, input embeddings, multimodal inputs, logit_bias, grammar
// constraints) is refused by unsupported, as HTTP /generate refuses it;
// the disaggregation bootstrap fields, timestamp, log_metrics and the
// logprob detail fields (meaningful only with return_logprob) are
// accepted and ignored.

// unsupported is the INVALID_ARGUMENT error for the first field the
// request sets that the mock cannot apply, in HTTP /generate's words;
// nil when there is none.
func unsupported(req *pb.GenerateRequest) *wire.APIError {
	field := ""
	sp := req.GetSamplingParams()
	switch {
	case req.GetReturnLogprob():
		field = "return_logprob"
	case req.GetReturnHiddenStates():
		field = "return_hidden_states"
	case req.GetCustomLogitProcessor() != "":
		field = "custom_logit_processor"
	case len(req.GetInputEmbeds()) > 0:
		field = "input_embeds"
	case proto.Size(req.GetMmInputs()) > 0: // an empty message asks for nothing
		field = "mm_inputs"
	case len(sp.GetLogitBias()) > 0:
		field = "sampling_params.logit_bias"
	default:
		return nil
	}
	return wire.ErrInvalid(field, "%s is not supported by mocker-server", field)
}

// constraintBody is the constraint oneof as the sampling_params object
// HTTP /generate's constraint phase reads (SGLang's names; ebnf_grammar
// is HTTP's ebnf), so both paths apply and refuse constraints alike.
func constraintBody(sp *pb.SamplingParams) (wire.Object, *wire.APIError) {
	c := map[string]string{}
	switch k := sp.GetConstraint().(type) {
	case *pb.SamplingParams_Regex:
		c["regex"] = k.Regex
	case *pb.SamplingParams_JsonSchema:
		c["json_schema"] = k.JsonSchema
	case *pb.SamplingParams_EbnfGrammar:
		c["ebnf"] = k.EbnfGrammar
	case *pb.SamplingParams_StructuralTag:
		c["structural_tag"] = k.StructuralTag
	}
	return wire.ObjectOf(c)
}

// genInput turns a GenerateRequest into the pipeline's typed generation
// input, with SGLang's defaults where the proto leaves a field at its zero
// value; maxInput is SGLang's max_req_input_len. The error is an
// *wire.APIError the caller maps to a status code.
func genInput(req *pb.GenerateRequest, vocabSize, maxModelLen, maxInput int) (*pipeline.GenInput, *wire.APIError) {
	tok := req.GetTokenized()
	if tok == nil {
		// SGLang's servicer: ValueError("Tokenized input must be provided").
		return nil, wire.ErrInvalid("tokenized", "Tokenized input must be provided")
	}
	ids := tok.GetInputIds()
	// SGLang's scheduler (validate_input_length) refuses a prompt that
	// leaves no room in the context, with a 400 abort: INVALID_ARGUMENT.
	if len(ids) >= maxInput {
		return nil, wire.ErrInvalid("input_ids", "Input length (%d tokens) exceeds the maximum allowed length (%d tokens). Use a shorter input or enable --allow-auto-truncate.", len(ids), maxInput)
	}
	if e := unsupported(req); e != nil {
		return nil, e
	}
	in := &pipeline.GenInput{Body: pipeline.EmptyObject(), IncludeUsage: true, BodyID: req.GetRequestId(),
		Stream: req.GetStream(), MaxTokensName: "max_new_tokens", SGLangConstraint: true}
	in.Prompts = []input.RawPrompt{{IDs: ids}}
	switch {
	case len(ids) == 0:
		in.EmptyPrompt = true
	default:
		for _, id := range ids {
			if int64(id) >= int64(vocabSize) {
				in.BadTokenID = strconv.FormatUint(uint64(id), 10)
				break
			}
		}
	}
	sp := req.GetSamplingParams()
	if sp == nil {
		sp = &pb.SamplingParams{}
	}
	if e := readSampling(sp, in, len(ids), maxModelLen); e != nil {
		return nil, e
	}
	if sp.GetConstraint() != nil {
		body, e := constraintBody(sp)
		if e != nil {
			return nil, e
		}
		in.Body = body
	}
	return in, nil
}

// readSampling reads SamplingParams. Proto3 cannot tell an unset scalar
// from its zero, so the zeros that are invalid values in SGLang's
// SamplingParams (top_p 0, top_k 0) or mean "no penalty" (repetition
// penalty 0) stand for the default, as the gateway's own conversion
// treats them; every other value is range-checked as SGLang does.
func readSampling(sp *pb.SamplingParams, in *pipeline.GenInput, promptLen, maxModelLen int) *wire.APIError {
	in.Sampling = pipeline.SamplingInput{
		Temperature: floatNum(sp.GetTemperature(), true),
		TopP:        floatNum(sp.GetTopP(), sp.GetTopP() != 0),
		TopK:        intNum(int64(sp.GetTopK()), sp.GetTopK() != 0),
		RepPen:      floatNum(sp.GetRepetitionPenalty(), sp.GetRepetitionPenalty() != 0),
	}
	if e := checkRanges(sp); e != nil {
		return e
	}
	// max_new_tokens unset: SGLang's scheduler lets the output run to the
	// context length; set: it is clipped to what the context leaves, not
	// refused (SGLang's init_req_max_new_tokens).
	room := maxModelLen - promptLen
	if sp.MaxNewTokens == nil {
		in.MaxTokens = intNum(int64(max(room, 0)), true)
	} else {
		in.MaxTokens = intNum(min(int64(sp.GetMaxNewTokens()), int64(max(room, 0))), true)
	}
	if m := sp.GetMinNewTokens(); m > 0 {
		in.MinTokens = intNum(int64(m), true)
	}
	if stop := sp.GetStop(); len(stop) > 0 {
		in.Stop, in.StopSet = stop, true
	}
	if ids := sp.GetStopTokenIds(); len(ids) > 0 {
		in.StopIDCount = len(ids)
		for _, id := range ids[:min(len(ids), 65)] {
			in.StopIDs = append(in.StopIDs, intNum(int64(id), true))
		}
	}
	in.IgnoreEOS = sp.GetIgnoreEos()
	if n := sp.GetN(); n > 1 {
		in.N = intNum(int64(n), true)
	}
	return nil
}

// checkRanges applies SGLang's SamplingParams.verify to the fields the
// pipeline's shared checks do not cover in SGLang's form.
func checkRanges(sp *pb.SamplingParams) *wire.APIError {
	switch {
	case sp.GetMinP() < 0 || sp.GetMinP() > 1:
		return wire.ErrInvalid("min_p", "min_p must be in [0, 1], got %v.", sp.GetMinP())
	case sp.GetFrequencyPenalty() < -2 || sp.GetFrequencyPenalty() > 2:
		return wire.ErrInvalid("frequency_penalty", "frequency_penalty must be in [-2, 2], got %v.", sp.GetFrequencyPenalty())
	case sp.GetPresencePenalty() < -2 || sp.GetPresencePenalty() > 2:
		return wire.ErrInvalid("presence_penalty", "presence_penalty must be in [-2, 2], got %v.", sp.GetPresencePenalty())
	case sp.GetRepetitionPenalty() < 0 || sp.GetRepetitionPenalty() > 2:
		return wire.ErrInvalid("repetition_penalty", "repetition_penalty must be in [0, 2], got %v.", sp.GetRepetitionPenalty())
	case sp.MaxNewTokens != nil && sp.GetMinNewTokens() > sp.GetMaxNewTokens():
		return wire.ErrInvalid("min_new_tokens", "min_new_tokens must be in [0, max_new_tokens(%d)], got %d.", sp.GetMaxNewTokens(), sp.GetMinNewTokens())
	}
	return nil
}

func floatNum(f float32, set bool) wire.Num {
	if !set {
		return wire.Num{}
	}
	v := float64(f)
	return wire.Num{F: v, I: int64(v), Raw: strconv.FormatFloat(v, 'g', -1, 32), Set: true}
}

func intNum(i int64, set bool) wire.Num {
	if !set {
		return wire.Num{}
	}
	return wire.Num{I: i, F: float64(i), Raw: strconv.FormatInt(i, 10), Set: true}
}
