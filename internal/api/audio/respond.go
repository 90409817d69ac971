package audio

import (
	"bytes"
	"compress/zlib"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/engine"
)

// windowText is the text of window i's delivered tokens.
func windowText(j *pipeline.Job, i int) string {
	ch := &j.Ch[i]
	return string(ch.Plan.AppendText(nil, ch.N))
}

// segment is one window of a verbose_json answer (vLLM's
// TranscriptionSegment): the mock has no timestamps inside a window, so a
// window is one segment.
type segment struct {
	ID               int      `json:"id"`
	AvgLogprob       float64  `json:"avg_logprob"`
	CompressionRatio float64  `json:"compression_ratio"`
	End              float64  `json:"end"`
	NoSpeechProb     *float64 `json:"no_speech_prob"`
	Seek             float64  `json:"seek"`
	Start            float64  `json:"start"`
	Temperature      float64  `json:"temperature"`
	Text             string   `json:"text"`
	Tokens           []uint32 `json:"tokens"`
}

// segments are the windows' segments, in order.
func segments(j *pipeline.Job) []segment {
	ar := req(j)
	out := make([]segment, len(j.Ch))
	for i := range j.Ch {
		text := windowText(j, i)
		start := float64(i * ar.window)
		out[i] = segment{ID: i, AvgLogprob: 0, CompressionRatio: compressionRatio(text),
			Start: start, End: math.Min(start+float64(ar.window), ar.seconds), Seek: start,
			Text: text, Tokens: j.Ch[i].Plan.IDs[:min(j.Ch[i].N, len(j.Ch[i].Plan.IDs))]}
	}
	return out
}

// compressionRatio is vLLM's: the text's bytes over their zlib size.
func compressionRatio(text string) float64 {
	if text == "" {
		return 0
	}
	var b bytes.Buffer
	zw := zlib.NewWriter(&b)
	_, _ = zw.Write([]byte(text))
	_ = zw.Close()
	return float64(len(text)) / float64(b.Len())
}

// Respond writes the answer in the request's response_format: vLLM's
// TranscriptionResponse ({"text","usage":{"type":"duration","seconds"}};
// a translation has no usage), the plain text, TranscriptionResponseVerbose,
// or SubRip / WebVTT subtitles of the segments.
func (Surface) Respond(j *pipeline.Job, w http.ResponseWriter) {
	ar := req(j)
	var text strings.Builder
	for i := range j.Ch {
		text.WriteString(windowText(j, i))
	}
	switch ar.format {
	case formatText:
		writeText(w, "text/plain; charset=utf-8", text.String())
	case formatVerboseJSON:
		lang := ar.language
		if lang == "" {
			lang = "en"
		}
		wire.Encode(w, http.StatusOK, map[string]any{
			"duration": strconv.FormatFloat(ar.seconds, 'f', -1, 64), "language": lang,
			"text": text.String(), "segments": segments(j), "words": nil})
	case formatSRT:
		writeText(w, "text/plain; charset=utf-8", subtitles(segments(j), false))
	case formatVTT:
		writeText(w, "text/vtt; charset=utf-8", subtitles(segments(j), true))
	default:
		body := map[string]any{"text": text.String()}
		if ar.task == Transcribe {
			// Rounded up, as OpenAI's usage is.
			body["usage"] = map[string]any{"type": "duration", "seconds": int(math.Ceil(ar.seconds))}
		}
		wire.Encode(w, http.StatusOK, body)
	}
}

func writeText(w http.ResponseWriter, ct, s string) {
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(s))
}

// subtitles renders segments as SubRip (1-based cues, "00:00:00,000") or
// WebVTT (a header, "00:00:00.000").
func subtitles(segs []segment, vtt bool) string {
	var b strings.Builder
	sep := ","
	if vtt {
		b.WriteString("WEBVTT\n\n")
		sep = "."
	}
	for i, s := range segs {
		if !vtt {
			fmt.Fprintf(&b, "%d\n", i+1)
		}
		fmt.Fprintf(&b, "%s --> %s\n%s\n\n", stamp(s.Start, sep), stamp(s.End, sep), strings.TrimSpace(s.Text))
	}
	return b.String()
}

// stamp formats seconds as HH:MM:SS<sep>mmm.
func stamp(sec float64, sep string) string {
	ms := int64(math.Round(sec * 1000))
	return fmt.Sprintf("%02d:%02d:%02d%s%03d", ms/3600000, ms/60000%60, ms/1000%60, sep, ms%1000)
}

// Encoder streams vLLM's transcription (translation) chunks.
func (Surface) Encoder(j *pipeline.Job) pipeline.EventEncoder {
	ar := req(j)
	e := &encoder{j: j, sent: make([]int, len(j.Ch)), object: "transcription.chunk", id: "trsc-" + j.G.BaseID}
	if ar.task == Translate {
		e.object, e.id = "translation.chunk", "trsl-"+j.G.BaseID
	}
	return e
}

// encoder writes one chunk per delivered token, the windows in order (a
// later window's tokens wait until the earlier ones end, as vLLM reads
// the windows' results one after the other), the last chunk of each window
// with its finish_reason, then the usage chunk when asked for and [DONE].
type encoder struct {
	j          *pipeline.Job
	object, id string
	sent       []int // tokens of each window already written
	next       int   // the window being written
	completion int
}

type delta struct {
	Content string `json:"content"`
}

type streamChoice struct {
	Delta        delta   `json:"delta"`
	FinishReason *string `json:"finish_reason,omitempty"`
	StopReason   *string `json:"stop_reason,omitempty"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type chunk struct {
	ID      string         `json:"id"`
	Object  string         `json:"object"`
	Created int64          `json:"created"`
	Model   string         `json:"model"`
	Choices []streamChoice `json:"choices"`
	Usage   *usage         `json:"usage,omitempty"`
}

func (e *encoder) Begin(b []byte) []byte { return b }

func (e *encoder) Render(st *pipeline.Streamer, items []engine.OutputItem) {
	for i := range items {
		e.j.Record(&items[i])
	}
	for e.next < len(e.j.Ch) {
		ch := &e.j.Ch[e.next]
		if ch.Fin.Rejection != nil {
			return // the stream ends with Fail's error event
		}
		for pos := e.sent[e.next]; pos < min(ch.N, len(ch.Plan.IDs)); pos++ {
			text, _ := ch.Plan.Segment(pos)
			e.completion++
			last := ch.Done && pos == min(ch.N, len(ch.Plan.IDs))-1
			st.Buf = e.appendChunk(st.Buf, text, last, ch)
		}
		e.sent[e.next] = min(ch.N, len(ch.Plan.IDs))
		if !ch.Done {
			return
		}
		e.next++
	}
}

func (e *encoder) appendChunk(b []byte, text string, last bool, ch *pipeline.Choice) []byte {
	c := streamChoice{Delta: delta{Content: text}}
	if last {
		reason := string(ch.Reason())
		c.FinishReason = &reason
	}
	out := chunk{ID: e.id, Object: e.object, Created: e.j.G.Created, Model: e.j.G.Model, Choices: []streamChoice{c}}
	if e.j.G.ContinuousUsage() {
		u := e.usage()
		out.Usage = &u
	}
	return appendEvent(b, out)
}

// usage is vLLM's streamed usage: prompt_tokens the decoder prompt's
// tokens plus the clip's audio tokens (get_num_audio_tokens), not the
// encoder positions the engine prices.
func (e *encoder) usage() usage {
	prompt := req(e.j).usagePrompt
	return usage{PromptTokens: prompt, CompletionTokens: e.completion, TotalTokens: prompt + e.completion}
}

func appendEvent(b []byte, v any) []byte {
	data, _ := json.Marshal(v)
	b = append(b, "data: "...)
	b = append(b, data...)
	return append(b, "\n\n"...)
}

func (e *encoder) End(b []byte) []byte {
	if e.j.G.IncludeUsage() {
		u := e.usage()
		b = appendEvent(b, chunk{ID: e.id, Object: e.object, Created: e.j.G.Created, Model: e.j.G.Model,
			Choices: []streamChoice{}, Usage: &u})
	}
	return append(b, pipeline.SSEDone...)
}

func (e *encoder) Fail(b []byte, err *wire.APIError) []byte {
	b = err.AppendSSE(b)
	return append(b, pipeline.SSEDone...)
}
