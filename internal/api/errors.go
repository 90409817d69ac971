package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/mocker-server/mocker-server/internal/httperr"
	"github.com/mocker-server/mocker-server/internal/jsonenc"
)

// Error types, the strings vLLM's server puts in error.type (clients match
// them).
const (
	typeBadRequest      = "Bad Request"     // not JSON, not an object, wrong content type, missing field, wrong JSON type
	typeBadRequestError = "BadRequestError" // value validation, context length, KV capacity
	typeNotFound        = "NotFoundError"
	typeConflict        = "ConflictError"
	typeTooLarge        = "Request Entity Too Large"
	typeInternal        = "InternalServerError"
	typeUnavailable     = "ServiceUnavailableError"
	typeRequestTimeout  = "Request Timeout"
	typeRateLimit       = "RateLimitError"
)

// apiError is an error answered with vLLM's nested error shape:
// {"error":{"message","type","param","code"}}.
type apiError struct {
	Status  int
	Type    string
	Message string
	Param   string // "" = null
}

func (e *apiError) Error() string { return e.Message }

// errBadRequest is a 400 "Bad Request" (syntax and typing problems).
func errBadRequest(param, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: typeBadRequest, Message: fmt.Sprintf(format, args...), Param: param}
}

// errInvalid is a 400 "BadRequestError" (value validation).
func errInvalid(param, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: typeBadRequestError, Message: fmt.Sprintf(format, args...), Param: param}
}

// errFieldType is the wrong-JSON-type error.
func errFieldType(field, want string) *apiError {
	return errBadRequest(field, "Invalid type for field '%s': expected %s", field, want)
}

// errFieldRequired is the missing-required-field error.
func errFieldRequired(field string) *apiError {
	return errBadRequest(field, "Field required: %s", field)
}

var (
	errStartingUp = &apiError{Status: http.StatusServiceUnavailable, Type: typeUnavailable, Message: "The server is starting up."}
	errShutdown   = &apiError{Status: http.StatusServiceUnavailable, Type: typeUnavailable, Message: "The server is shutting down."}
	errEngineDead = &apiError{Status: http.StatusServiceUnavailable, Type: typeUnavailable, Message: "The engine is not running."}
	errInternal   = &apiError{Status: http.StatusInternalServerError, Type: typeInternal, Message: "Internal Server Error"}
)

// errorBody is the JSON form of an apiError.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

func (e *apiError) body() errorBody {
	d := errorDetail{Message: e.Message, Type: e.Type, Code: e.Status}
	if e.Param != "" {
		p := e.Param
		d.Param = &p
	}
	return errorBody{Error: d}
}

// appendSSE appends the error as a mid-stream SSE event, for errors after
// the 200 status is out: param is always null there.
func (e *apiError) appendSSE(b []byte) []byte {
	b = append(b, `data: {"error":{"message":`...)
	b = jsonenc.AppendString(b, e.Message)
	b = append(b, `,"type":`...)
	b = jsonenc.AppendString(b, e.Type)
	b = append(b, `,"param":null,"code":`...)
	b = strconv.AppendInt(b, int64(e.Status), 10)
	return append(b, "}}\n\n"...)
}

// writeError answers err as JSON.
func writeError(w http.ResponseWriter, err *apiError) {
	encode(w, err.Status, err.body())
}

// encode writes v as compact JSON (no HTML escaping, no trailing newline)
// with the given status.
func encode(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only a programming error gets here (unsupported value).
		panic(fmt.Sprintf("api: encoding response: %v", err))
	}
	body := bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
	httperr.Write(w, status, body)
}

// Flat bodies that do not use the nested error shape, as vLLM's server
// (and FastAPI under it) answers them.
var (
	bodyUnauthorized     = []byte(`{"error":"Unauthorized"}`)
	bodyNotFound         = []byte(`{"detail":"Not Found"}`)
	bodyMethodNotAllowed = []byte(`{"detail":"Method Not Allowed"}`)
)
