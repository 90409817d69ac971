package openai

import (
	"encoding/json"

	"github.com/mocker-server/mocker-server/internal/api/disagg"
	"github.com/mocker-server/mocker-server/internal/api/toolcall"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/jsonenc"
	"github.com/mocker-server/mocker-server/internal/plan"
)

// Non-streaming response bodies. Field order is vLLM's key order, so
// byte-level comparisons with a real server's answers stay meaningful.

type usage struct {
	PromptTokens        int                  `json:"prompt_tokens"`
	TotalTokens         int                  `json:"total_tokens"`
	CompletionTokens    int                  `json:"completion_tokens"`
	PromptTokensDetails *promptTokensDetails `json:"prompt_tokens_details"`
}

type promptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

type chatResponse struct {
	ID                string                   `json:"id"`
	Object            string                   `json:"object"`
	Created           int64                    `json:"created"`
	Model             string                   `json:"model"`
	Choices           []chatChoice             `json:"choices"`
	ServiceTier       *string                  `json:"service_tier"`
	SystemFingerprint *string                  `json:"system_fingerprint"`
	Usage             usage                    `json:"usage"`
	PromptLogprobs    *struct{}                `json:"prompt_logprobs"`
	PromptTokenIDs    []uint32                 `json:"prompt_token_ids,omitempty"`
	KVTransferParams  *disagg.KVTransferParams `json:"kv_transfer_params"`
	Worker            string                   `json:"mocker_worker,omitempty"` // pipeline.WorkerField
}

type chatChoice struct {
	Index        int                 `json:"index"`
	Message      chatMessage         `json:"message"`
	Logprobs     json.RawMessage     `json:"logprobs"` // nil = null
	FinishReason engine.FinishReason `json:"finish_reason"`
	StopReason   plan.StopReason     `json:"stop_reason"`
	TokenIDs     json.RawMessage     `json:"token_ids,omitempty"`
}

// chatMessage is the assistant message; its reasoning key is configurable
// (reasoning | reasoning_content), hence the hand-written encoding.
type chatMessage struct {
	content      string
	ContentNull  bool                    // content null (an auto tool call)
	toolCalls    []toolcall.ToolCallJSON // message.tool_calls; nil = []
	reasoning    *string                 // nil = null
	ReasoningKey string
}

func (m chatMessage) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 160+len(m.content))
	b = append(b, `{"role":"assistant","content":`...)
	if m.ContentNull {
		b = append(b, "null"...)
	} else {
		b = jsonenc.AppendString(b, m.content)
	}
	b = append(b, `,"refusal":null,"annotations":null,"audio":null,"function_call":null,"tool_calls":`...)
	b = toolcall.AppendToolCalls(b, m.toolCalls)
	b = append(b, ',')
	key := m.ReasoningKey
	if key == "" {
		key = "reasoning"
	}
	b = jsonenc.AppendString(b, key)
	b = append(b, ':')
	if m.reasoning == nil {
		b = append(b, "null"...)
	} else {
		b = jsonenc.AppendString(b, *m.reasoning)
	}
	return append(b, '}'), nil
}

type completionResponse struct {
	ID                string                   `json:"id"`
	Object            string                   `json:"object"`
	Created           int64                    `json:"created"`
	Model             string                   `json:"model"`
	Choices           []completionChoice       `json:"choices"`
	ServiceTier       *string                  `json:"service_tier"`
	SystemFingerprint *string                  `json:"system_fingerprint"`
	Usage             usage                    `json:"usage"`
	KVTransferParams  *disagg.KVTransferParams `json:"kv_transfer_params"`
	Worker            string                   `json:"mocker_worker,omitempty"` // pipeline.WorkerField
}

type completionChoice struct {
	Index          int                 `json:"index"`
	Text           string              `json:"text"`
	Logprobs       json.RawMessage     `json:"logprobs"` // nil = null
	FinishReason   engine.FinishReason `json:"finish_reason"`
	StopReason     plan.StopReason     `json:"stop_reason"`
	PromptLogprobs *struct{}           `json:"prompt_logprobs"`
	PromptTokenIDs []uint32            `json:"prompt_token_ids,omitempty"`
	TokenIDs       json.RawMessage     `json:"token_ids,omitempty"`
}
