package api

import (
	"net/http"

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

// writeAnthropicError answers e in Anthropic's error shape,
// {"type":"error","error":{"type","message"}}, with the error's status, as
// vLLM's Anthropic router translates its ErrorResponse. Every error of the
// Messages routes is written here: validation, faults, limits, and the
// startup and drain gates.
func writeAnthropicError(w http.ResponseWriter, e *apiError) {
	b := append([]byte(`{"type":"error","error":{"type":"`), anthropicErrorType(e.Status)...)
	b = append(b, `","message":`...)
	b = jsonenc.AppendString(b, e.Message)
	httperr.Write(w, e.Status, append(b, "}}"...))
}

func (messagesSurface) writeError(w http.ResponseWriter, e *apiError) { writeAnthropicError(w, e) }
