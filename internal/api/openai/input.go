package openai

import (
	"net/http"
	"slices"
	"strings"

	"github.com/mocker-server/mocker-server/internal/api/disagg"
	"github.com/mocker-server/mocker-server/internal/api/input"
	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/api/wire"
)

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
	chatFields = wire.SetOf(append(slices.Clone(commonFields),
		"messages", "max_completion_tokens", "top_logprobs", "add_generation_prompt",
		"continue_final_message", "tools", "tool_choice", "parallel_tool_calls",
		"chat_template", "chat_template_kwargs", "documents", "reasoning_effort", "mm_processor_kwargs")...)
	completionFields = wire.SetOf(append(slices.Clone(commonFields),
		"prompt", "suffix", "best_of", "add_special_tokens")...)
)

// parseGenerate reads a chat or completions body into the typed input
// (phase 1, field types and required fields) and runs the shared phases
// on it (BuildGenerate), in the order of docs/http-api.md: types, model,
// values, prompt, KV capacity.
func parseGenerate(s *pipeline.Server, o wire.Object, r *http.Request, chat bool) (*pipeline.GenRequest, *wire.APIError) {
	logUnknownGenFields(s, o, r, chat)
	in := readGenInput(o, chat, s.Tokenizer().VocabSize())
	if err := o.Failed(); err != nil {
		return nil, err
	}
	return s.BuildGenerate(in, r)
}

// logUnknownGenFields logs the chat or completions fields the server does
// not know (the legacy guided_* fields are known to ParseStructured).
func logUnknownGenFields(s *pipeline.Server, o wire.Object, r *http.Request, chat bool) {
	known := completionFields
	if chat {
		known = chatFields
	}
	unknown := slices.DeleteFunc(o.UnknownKeys(known), func(k string) bool { return strings.HasPrefix(k, "guided_") })
	if len(unknown) > 0 {
		slices.Sort(unknown)
		s.Logger().Debug("ignoring unknown request fields", "path", r.URL.Path, "fields", unknown)
	}
}

// readGenInput reads the fields of a chat or completions body (phase 6 of
// docs/http-api.md: field types and required fields). Type errors are
// recorded in o, first one wins, in the order the fields are read here.
func readGenInput(o wire.Object, chat bool, vocabSize int) *pipeline.GenInput {
	in := &pipeline.GenInput{Chat: chat, Body: o}
	if chat {
		in.Msgs, in.Media, in.BadPart = input.ParseMessages(o)
		in.MMKwargs = pipeline.ReadMMKwargs(o)
		if a, ok := o.Kind("tools", "array"); ok {
			in.ToolsJSON = wire.CompactJSON(a)
		}
		in.AddGen = o.Bool("add_generation_prompt", true)
		in.ContFinal = o.Bool("continue_final_message", false)
	} else {
		in.Prompts, in.EmptyPrompt, in.BadTokenID = input.ParsePrompt(o, "prompt", vocabSize)
		in.Echo = o.Bool("echo", false)
	}
	in.Model, in.HasModel = o.String("model")
	if chat {
		in.MaxCompletion = o.Int("max_completion_tokens")
	}
	in.MaxTokens = o.Int("max_tokens")
	in.MinTokens = o.Int("min_tokens")
	in.IgnoreEOS = o.Bool("ignore_eos", false)
	in.Stop, in.StopSet = input.ParseStop(o)
	in.StopIDs, in.StopIDCount = pipeline.ParseStopIDs(o)
	in.IncludeStr = o.Bool("include_stop_str_in_output", false)
	in.N = o.Int("n")
	in.Stream = o.Bool("stream", false)
	readStreamOptions(o, in)
	if chat {
		in.ChatLogprobs = o.Bool("logprobs", false)
		in.TopLogprobs = o.Int("top_logprobs")
	} else {
		in.LogprobsK = o.Int("logprobs")
	}
	in.Seed = o.Int("seed")
	in.Priority = o.Int("priority")
	in.Truncate = o.Int("truncate_prompt_tokens")
	in.CacheSalt, in.HasSalt = o.String("cache_salt")
	in.ReturnIDs = o.Bool("return_token_ids", false)
	in.TokensAsIDs = o.Bool("return_tokens_as_token_ids", false)
	in.BodyID, _ = o.String("request_id")
	in.PD = disagg.ParsePD(o) // disaggregation (disagg.go)
	in.Sampling = pipeline.ReadSampling(o)
	if !chat {
		_, in.SuffixSet = o.String("suffix")
		in.BestOf = o.Int("best_of")
		o.Bool("add_special_tokens", true)
	}
	in.PromptLogprobs = o.Has("prompt_logprobs")
	return in
}

// readStreamOptions reads stream_options.
func readStreamOptions(o wire.Object, in *pipeline.GenInput) {
	in.IncludeUsage = true
	so, ok := o.Object("stream_options")
	if !ok {
		return
	}
	in.HasStreamOpts = true
	in.IncludeUsage = so.Bool("include_usage", true)
	in.Continuous = so.Bool("continuous_usage_stats", false)
}
