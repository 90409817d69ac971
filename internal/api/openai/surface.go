// Package openai is the chat completions and completions surfaces
// (POST /v1/chat/completions, /v1/completions): their body reader into the
// pipeline's typed input (input.go) and their non-streaming bodies
// (bodies.go). Their stream encoder stays in internal/api/pipeline
// (openai_stream.go), because the delivery shards render its next chunk
// ahead of the pass (prerender.go) with direct calls.
package openai

import (
	"net/http"
	"unicode/utf8"

	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/api/wire"
)

// HandleGenerate serves POST /v1/chat/completions (chat) and
// POST /v1/completions.
func HandleGenerate(s *pipeline.Server, chat bool) http.Handler {
	return pipeline.HandleSurface(s, openAISurface{chat: chat})
}

// openAISurface is /v1/chat/completions (chat) or /v1/completions.
type openAISurface struct{ chat bool }

func (a openAISurface) Parse(s *pipeline.Server, o wire.Object, r *http.Request) (*pipeline.GenRequest, *wire.APIError) {
	return parseGenerate(s, o, r, a.chat)
}

func (a openAISurface) Respond(j *pipeline.Job, w http.ResponseWriter) {
	if a.chat {
		wire.Encode(w, http.StatusOK, chatResponseOf(j))
	} else {
		wire.Encode(w, http.StatusOK, completionResponseOf(j))
	}
}

func (openAISurface) Encoder(j *pipeline.Job) pipeline.EventEncoder {
	return pipeline.NewOpenAIEncoder(j)
}

// usage of the whole request: prompts counted once each, completions over
// all choices.
func usageOf(j *pipeline.Job) usage {
	p := 0
	for i := range j.G.Prompts {
		p += len(j.G.Prompts[i].IDs)
	}
	u := usage{PromptTokens: p, TotalTokens: p + j.Completion, CompletionTokens: j.Completion}
	if j.S.Opts().HTTP.PromptTokensDetails {
		u.PromptTokensDetails = &promptTokensDetails{CachedTokens: j.Ch[0].Fin.CachedTokens}
	}
	return u
}

func chatResponseOf(j *pipeline.Job) *chatResponse {
	g := j.G
	resp := &chatResponse{
		ID:      "chatcmpl-" + g.BaseID,
		Object:  "chat.completion",
		Created: g.Created,
		Model:   g.Model,
		Choices: make([]chatChoice, len(j.Ch)),
		Usage:   usageOf(j),

		KVTransferParams: j.KVParams,
		Worker:           j.S.Opts().HTTP.WorkerID,
	}
	if g.ReturnIDs {
		resp.PromptTokenIDs = g.Prompts[0].IDs
	}
	lp := pipeline.NewLogprobRenderer(j)
	for i := range j.Ch {
		ch := &j.Ch[i]
		reasoning, content := ch.Plan.Texts(ch.N)
		msg := chatMessage{content: content, ReasoningKey: string(j.S.Opts().Generation.ReasoningField)}
		if j.S.Opts().Generation.Reasoning != nil && reasoning != "" {
			msg.reasoning = &reasoning
		}
		finish, stop := ch.Reasons()
		if ch.Calls != nil {
			out := ch.Calls.Result(&ch.Plan, ch.N, ch.Reason())
			msg.toolCalls, finish = out.ToolCalls, out.Finish
			msg.content, msg.ContentNull = "", out.Content == nil
			if out.Content != nil {
				msg.content = *out.Content
			}
		}
		c := chatChoice{Index: i, Message: msg, FinishReason: finish, StopReason: stop}
		ids := ch.Plan.IDs[:min(ch.N, len(ch.Plan.IDs))]
		if g.Logprobs {
			c.Logprobs = lp.AppendChatList(nil, ids)
		}
		if g.ReturnIDs {
			c.TokenIDs = wire.AppendUint32s(nil, ids)
		}
		resp.Choices[i] = c
	}
	return resp
}

func completionResponseOf(j *pipeline.Job) *completionResponse {
	g := j.G
	resp := &completionResponse{
		ID:      "cmpl-" + g.BaseID,
		Object:  "text_completion",
		Created: g.Created,
		Model:   g.Model,
		Choices: make([]completionChoice, len(j.Ch)),
		Usage:   usageOf(j),

		KVTransferParams: j.KVParams,
		Worker:           j.S.Opts().HTTP.WorkerID,
	}
	lp := pipeline.NewLogprobRenderer(j)
	var text []byte
	for i := range j.Ch {
		ch := &j.Ch[i]
		ps := &g.Prompts[ch.Prompt]
		text = text[:0]
		offset := 0
		if g.Echo {
			text = append(text, ps.Text...)
			offset = utf8.RuneCountInString(ps.Text)
		}
		text = ch.Plan.AppendText(text, ch.N)
		finish, stop := ch.Reasons()
		c := completionChoice{Index: i, Text: string(text), FinishReason: finish, StopReason: stop}
		ids := ch.Plan.IDs[:min(ch.N, len(ch.Plan.IDs))]
		if g.Logprobs {
			c.Logprobs = lp.AppendCompletionLists(nil, &ch.Plan, ids, offset)
		}
		if g.ReturnIDs {
			c.PromptTokenIDs = ps.IDs
			c.TokenIDs = wire.AppendUint32s(nil, ids)
		}
		resp.Choices[i] = c
	}
	return resp
}
