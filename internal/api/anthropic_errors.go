package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
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

// anthropicErrorShape gives every error answer of next (validation,
// faults, limits, startup and drain gates) Anthropic's shape.
func anthropicErrorShape(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&anthropicErrors{ResponseWriter: w}, r)
	})
}

// anthropicErrors rewrites the OpenAI-shaped error bodies of the shared
// generation path ({"error":{"message","type","param","code"}}) into
// Anthropic's {"type":"error","error":{"type","message"}}, as vLLM's
// Anthropic router translates its ErrorResponse. Every error body of that
// path is written by writeJSON: headers, WriteHeader, one Write.
type anthropicErrors struct {
	http.ResponseWriter
	status int // a held error status, 0 = passing through
}

func (a *anthropicErrors) Unwrap() http.ResponseWriter { return a.ResponseWriter }

func (a *anthropicErrors) WriteHeader(code int) {
	if code >= 400 && a.status == 0 && strings.HasPrefix(a.Header().Get("Content-Type"), "application/json") {
		a.status = code
		return
	}
	a.ResponseWriter.WriteHeader(code)
}

func (a *anthropicErrors) Write(p []byte) (int, error) {
	if a.status == 0 {
		return a.ResponseWriter.Write(p)
	}
	code := a.status
	a.status = 0
	var body struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	out := p
	if json.Unmarshal(p, &body) == nil && bytes.HasPrefix(p, []byte(`{"error":{`)) {
		b := append([]byte(`{"type":"error","error":{"type":"`), anthropicErrorType(code)...)
		b = append(b, `","message":`...)
		b = appendString(b, body.Error.Message)
		out = append(b, "}}"...)
		a.Header().Set("Content-Length", strconv.Itoa(len(out)))
	}
	a.ResponseWriter.WriteHeader(code)
	if _, err := a.ResponseWriter.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}
