// Package audio serves vLLM's speech-to-text endpoints,
// /v1/audio/transcriptions and /v1/audio/translations (docs/http-api.md,
// "Audio"), on the shared generation path: a multipart upload read with
// bounded memory, the clip's duration from its header, the encoder and
// decoder work of every 30-second window as one engine sequence, and the
// text of the planned tokens in each response format.
package audio

import (
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"strconv"

	"github.com/mocker-server/mocker-server/internal/api/input"
	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/mmproc"
)

// Task is what an endpoint asks of the model.
type Task int

// The two speech-to-text tasks.
const (
	Transcribe Task = iota // /v1/audio/transcriptions
	Translate              // /v1/audio/translations
)

// The model of a Whisper-class request (vLLM's WhisperForConditionalGeneration,
// mmproc.Transcription: the served model's settings when it is Whisper,
// large-v3's otherwise): audio is cut into windows of at most 30 s
// (max_audio_clip_s), each one engine request; a window's encoder output
// is 1500 positions (30 s of log-mel frames at 100 per second, halved by
// the encoder's stride-2 convolution), padded to 30 s whatever the
// window's length, which the engine prices as that many prompt tokens;
// the decoder then generates about as many tokens as speech of that
// length holds.
const tokensPerSecond = 3 // ~150 spoken words a minute, ~1.3 tokens a word

// transcription returns the served model's speech-to-text settings.
func transcription(s *pipeline.Server) mmproc.Transcription {
	if p := s.Opts().Multimodal.Processor; p != nil {
		if t, ok := p.Transcription(); ok {
			return t
		}
	}
	return mmproc.DefaultTranscription
}

// Response formats (vLLM's AudioResponseFormat).
const (
	formatJSON        = "json"
	formatText        = "text"
	formatVerboseJSON = "verbose_json"
	formatSRT         = "srt"
	formatVTT         = "vtt"
)

// Surface is one of the two endpoints.
type Surface struct{ Task Task }

// audioRequest is what Respond and the stream encoder need of a request.
type audioRequest struct {
	task     Task
	format   string
	language string
	seconds  float64
	windows  int
	window   int // seconds
	// usagePrompt is vLLM's streamed prompt_tokens: the decoder prompt's
	// tokens plus get_num_audio_tokens, the clip's log-mel frames.
	usagePrompt int
}

func req(j *pipeline.Job) *audioRequest { return j.G.Ext.(*audioRequest) }

var knownFields = map[string]bool{"file": true, "model": true, "language": true, "prompt": true,
	"response_format": true, "temperature": true, "timestamp_granularities[]": true, "stream": true,
	"stream_include_usage": true, "stream_continuous_usage_stats": true, "to_language": true,
	"seed": true, "max_completion_tokens": true, "top_p": true, "top_k": true, "min_p": true,
	"frequency_penalty": true, "presence_penalty": true, "repetition_penalty": true}

// Parse reads the form into a generation of one sequence per window.
func (sf Surface) Parse(s *pipeline.Server, o wire.Object, r *http.Request) (*pipeline.GenRequest, *wire.APIError) {
	s.LogUnknownFields(o, r, knownFields)
	raw, _ := o.Raw(fileKey)
	var facts fileFacts
	if err := json.Unmarshal(raw, &facts); err != nil {
		return nil, wire.ErrInternal
	}
	ar := &audioRequest{task: sf.Task, format: formatJSON, seconds: facts.Seconds}
	if f, ok := o.String("response_format"); ok {
		ar.format = f
	}
	ar.language, _ = o.String("language")
	prompt, _ := o.String("prompt")
	model, hasModel := o.String("model")
	in := &pipeline.GenInput{Body: pipeline.EmptyObject(), Model: model, HasModel: hasModel,
		Stream:       o.Bool("stream", false),
		IncludeUsage: o.Bool("stream_include_usage", false),
		Continuous:   o.Bool("stream_continuous_usage_stats", false),
		Seed:         o.Int("seed"),
		Sampling:     pipeline.ReadSampling(o),
		// A transcript is planned under --response-mode echo too: there is
		// no text prompt to echo.
		NoEcho: true,
	}
	maxTokens := o.Int("max_completion_tokens")
	if e := o.Failed(); e != nil {
		return nil, e
	}
	if e := checkFormat(ar.format, in); e != nil {
		return nil, e
	}
	in.HasStreamOpts = in.IncludeUsage || in.Continuous

	// One sequence per window; each is the window's encoder positions
	// (ids drawn from the file's hash, so the same audio hits the prefix
	// cache as vLLM's multimodal hash makes it) and the decoder prompt.
	tr := transcription(s)
	ar.windows, ar.window = tr.Windows(facts.Seconds), tr.WindowSeconds
	vocab := s.Tokenizer().VocabSize()
	decoder := s.Tokenizer().Encode(decoderPrompt(sf.Task, ar.language, prompt), false)
	// vLLM's InputPreprocessor puts the decoder start token
	// (<|startoftranscript|>) in front of a decoder prompt that does not
	// begin with it: a prompt's "<|prev|>…" (preprocess.py,
	// _prepare_decoder_input_ids_for_generation).
	if sot := s.Tokenizer().Encode(startOfTranscript, false); !slices.Equal(decoder[:min(len(sot), len(decoder))], sot) {
		decoder = append(sot, decoder...)
	}
	ar.usagePrompt = len(decoder) + tr.AudioTokens(facts.Seconds)
	for w := range ar.windows {
		ids := make([]uint32, 0, tr.EncoderPositions+len(decoder))
		for k := range tr.EncoderPositions {
			ids = append(ids, placeholderID(facts.Hash, w, k, vocab))
		}
		in.Prompts = append(in.Prompts, input.RawPrompt{IDs: append(ids, decoder...)})
	}
	// The decoder's output ends naturally after about as many tokens as the
	// window's speech holds (a seeded length, mean tokensPerSecond × the
	// longest window), within Whisper's 448 decoder positions
	// (max_model_len) and the request's max_completion_tokens, as vLLM
	// takes the smaller.
	m := int64(tr.MaxDecoderTokens)
	if maxTokens.Set {
		m = min(m, maxTokens.I)
	}
	in.MaxTokens = wire.Num{I: m, F: float64(m), Raw: strconv.FormatInt(m, 10), Set: true}
	in.MaxTokensName = "max_completion_tokens"
	g, e := s.BuildGenerate(in, r)
	if e != nil {
		return nil, e
	}
	g.NaturalLen = max(1, int(math.Ceil(tokensPerSecond*math.Min(facts.Seconds, float64(tr.WindowSeconds)))))
	g.MaxFromClient = maxTokens.Set
	g.Ext = ar
	return g, nil
}

// checkFormat refuses a response format vLLM does not write, stream
// options without streaming, and a streamed format that is not JSON or
// text, with vLLM's messages.
func checkFormat(format string, in *pipeline.GenInput) *wire.APIError {
	switch format {
	case formatJSON, formatText, formatVerboseJSON, formatSRT, formatVTT:
	default:
		return wire.ErrInvalid("response_format", "Input should be 'json', 'text', 'srt', 'verbose_json' or 'vtt'")
	}
	if (in.IncludeUsage || in.Continuous) && !in.Stream {
		param := "stream_include_usage"
		if !in.IncludeUsage {
			param = "stream_continuous_usage_stats"
		}
		return wire.ErrInvalid(param, "Stream options can only be defined when `stream=True`.")
	}
	if in.Stream && format != formatJSON && format != formatText {
		return wire.ErrInvalid("response_format", "%s format doesn't support streaming case", format)
	}
	return nil
}

// startOfTranscript is Whisper's decoder start token.
const startOfTranscript = "<|startoftranscript|>"

// decoderPrompt is Whisper's decoder prompt as vLLM's
// get_generation_prompt writes it (whisper.py at d1a2e946): the previous
// text after "<|prev|>" (vLLM's spelling, not the tokenizer's
// <|startofprev|>), the start of the transcript, the language and the
// task.
func decoderPrompt(t Task, language, prompt string) string {
	if language == "" {
		language = "en"
	}
	task := "<|transcribe|>"
	if t == Translate {
		task = "<|translate|>"
	}
	p := startOfTranscript + "<|" + language + "|>" + task + "<|notimestamps|>"
	if prompt != "" {
		p = "<|prev|>" + prompt + p
	}
	return p
}

// placeholderID is the k-th encoder position of window w of the audio with
// hash h: a token id in [1, vocab).
func placeholderID(h uint64, w, k, vocab int) uint32 {
	x := h ^ uint64(w)<<32 ^ uint64(k)
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return uint32(1 + x%uint64(max(vocab-1, 1)))
}
