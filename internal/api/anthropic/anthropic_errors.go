package anthropic

import (
	"net/http"

	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/httperr"
	"github.com/mocker-server/mocker-server/internal/jsonenc"
)

// anthropicErrorType is Anthropic's error type for an HTTP status.
func anthropicErrorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusServiceUnavailable, 529:
		return "overloaded_error"
	}
	return "api_error"
}

// WriteAnthropicError answers e in Anthropic's error shape,
// {"type":"error","error":{"type","message"}}, with the error's status, as
// vLLM's Anthropic router translates its ErrorResponse; an error with a
// Code adds Anthropic's "details":{"error_code"}. Every error of the
// Messages routes is written here: validation, faults, limits, and the
// startup and drain gates.
func WriteAnthropicError(w http.ResponseWriter, e *wire.APIError) {
	b := append([]byte(`{"type":"error","error":{"type":"`), anthropicErrorType(e.Status)...)
	b = append(b, `","message":`...)
	b = jsonenc.AppendString(b, e.Message)
	if e.Code != "" {
		b = append(b, `,"details":{"error_code":`...)
		b = jsonenc.AppendString(b, e.Code)
		b = append(b, '}')
	}
	httperr.Write(w, e.Status, append(b, "}}"...))
}

// errThreadUnsupported refuses a request with a thread field (Anthropic's
// message threads, a beta: the server keeps the conversation and later
// turns send only their new messages). The mock keeps no conversations, so
// it answers as Anthropic answers a thread it cannot serve: 400
// invalid_request_error with details.error_code
// "thread_unsupported_request" and no unsupported list. The SDK's tool
// runner (@anthropic-ai/sdk 1.15, ThreadState.recoversFrom) takes exactly
// that as "continue unthreaded" and sends the full history from then on;
// silently ignoring the field would lose every earlier turn.
func errThreadUnsupported() *wire.APIError {
	return &wire.APIError{Status: http.StatusBadRequest, Type: wire.TypeBadRequestError, Param: "thread",
		Code:    "thread_unsupported_request",
		Message: "thread: message threads are not available on this server; send the full conversation in messages without thread"}
}

func (MessagesSurface) WriteError(w http.ResponseWriter, e *wire.APIError) { WriteAnthropicError(w, e) }
