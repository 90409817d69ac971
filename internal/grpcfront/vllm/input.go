package vllm

import (
	"strconv"

	"github.com/mocker-server/mocker-server/internal/api/input"
	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/grpcfront/vllm/vllmpb"
)

// genInput reads a GenerateRequest into the pipeline's typed input the way
// vLLM's servicer builds its prompt and SamplingParams
// (_sampling_params_from_proto): proto3 zeros mean vLLM's defaults
// (top_p 0 → 1, repetition_penalty 0 → 1, n 0 → 1), the optional fields
// count only when present, and max_tokens absent lets the prompt generate
// up to the rest of the context. vocab bounds the token ids.
func genInput(req *vllmpb.GenerateRequest, vocab int) (*pipeline.GenInput, *wire.APIError) {
	in := &pipeline.GenInput{Body: pipeline.EmptyObject(), BodyID: req.GetRequestId(),
		Stream: req.GetStream(), MaxToContext: true}
	switch x := req.GetInput().(type) {
	case *vllmpb.GenerateRequest_Tokenized:
		ids := x.Tokenized.GetInputIds()
		in.EmptyPrompt = len(ids) == 0
		for _, id := range ids {
			if int64(id) >= int64(vocab) {
				in.BadTokenID = strconv.FormatUint(uint64(id), 10)
				break
			}
		}
		in.Prompts = []input.RawPrompt{{IDs: ids}}
	case *vllmpb.GenerateRequest_Text:
		in.Prompts = []input.RawPrompt{{Text: x.Text, IsText: true}}
		in.EmptyPrompt = x.Text == ""
	default:
		// vLLM's servicer takes request.text then: an empty prompt.
		in.EmptyPrompt = true
	}
	sp := req.GetSamplingParams()
	if sp == nil {
		sp = &vllmpb.SamplingParams{}
	}
	var temperature, topP, topK, minP, freqPen, presPen, repPen wire.Num
	if sp.Temperature != nil {
		temperature = float(float64(sp.GetTemperature()))
	}
	if v := sp.GetTopP(); v != 0 {
		topP = float(float64(v))
	}
	if v := sp.GetTopK(); v != 0 {
		topK = integer(int64(v))
	}
	if v := sp.GetMinP(); v != 0 {
		minP = float(float64(v))
	}
	if v := sp.GetFrequencyPenalty(); v != 0 {
		freqPen = float(float64(v))
	}
	if v := sp.GetPresencePenalty(); v != 0 {
		presPen = float(float64(v))
	}
	if v := sp.GetRepetitionPenalty(); v != 0 {
		repPen = float(float64(v))
	}
	in.Sampling = pipeline.SamplingValues(temperature, topP, topK, minP, freqPen, presPen, repPen)
	if sp.MaxTokens != nil {
		in.MaxTokens = integer(int64(sp.GetMaxTokens()))
	}
	if v := sp.GetMinTokens(); v != 0 {
		in.MinTokens = integer(int64(v))
	}
	in.Stop, in.StopSet = sp.GetStop(), len(sp.GetStop()) > 0
	ids := sp.GetStopTokenIds()
	in.StopIDCount = len(ids)
	for _, id := range ids[:min(len(ids), pipeline.MaxStopTokenIDs+1)] {
		in.StopIDs = append(in.StopIDs, integer(int64(id)))
	}
	in.IgnoreEOS = sp.GetIgnoreEos()
	in.IncludeStr = sp.GetIncludeStopStrInOutput()
	if v := sp.GetN(); v != 0 {
		in.N = integer(int64(v))
	}
	if sp.Logprobs != nil {
		in.LogprobsK = integer(int64(sp.GetLogprobs()))
	}
	in.PromptLogprobs = sp.PromptLogprobs != nil
	if sp.Seed != nil {
		in.Seed = integer(int64(sp.GetSeed()))
	}
	if sp.TruncatePromptTokens != nil {
		in.Truncate = integer(int64(sp.GetTruncatePromptTokens()))
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

// constraintBody is the structured-outputs object of a request's
// constraint (vLLM's StructuredOutputsParams, which the servicer builds
// from the oneof), for the pipeline's constraint phase.
func constraintBody(sp *vllmpb.SamplingParams) (wire.Object, *wire.APIError) {
	so := map[string]any{}
	switch c := sp.GetConstraint().(type) {
	case *vllmpb.SamplingParams_JsonSchema:
		so["json"] = c.JsonSchema
	case *vllmpb.SamplingParams_Regex:
		so["regex"] = c.Regex
	case *vllmpb.SamplingParams_Grammar:
		so["grammar"] = c.Grammar
	case *vllmpb.SamplingParams_StructuralTag:
		so["structural_tag"] = c.StructuralTag
	case *vllmpb.SamplingParams_JsonObject:
		so["json_object"] = c.JsonObject
	case *vllmpb.SamplingParams_Choice:
		so["choice"] = append([]string{}, c.Choice.GetChoices()...) // never null
	}
	return wire.ObjectOf(map[string]any{"structured_outputs": so})
}

// integer and float are the typed input's numbers of values read from
// protobuf; Raw is what error messages quote.
func integer(v int64) wire.Num {
	return wire.Num{I: v, F: float64(v), Raw: strconv.FormatInt(v, 10), Set: true}
}

func float(v float64) wire.Num {
	return wire.Num{I: int64(v), F: v, Raw: strconv.FormatFloat(v, 'g', -1, 32), Set: true}
}
