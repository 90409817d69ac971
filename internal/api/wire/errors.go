package wire

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
	TypeBadRequestError = "BadRequestError" // value validation, context length, KV capacity
	TypeNotFound        = "NotFoundError"
	TypeConflict        = "ConflictError"
	typeTooLarge        = "Request Entity Too Large"
	TypeInternal        = "InternalServerError"
	TypeUnavailable     = "ServiceUnavailableError"
	TypeRequestTimeout  = "Request Timeout"
	TypeRateLimit       = "RateLimitError"
	TypeUnauthorized    = "AuthenticationError"
)

// APIError is an error answered with vLLM's nested error shape:
// {"error":{"message","type","param","code"}}.
type APIError struct {
	Status  int
	Type    string
	Message string
	Param   string // "" = null
	// Code is Anthropic's machine-readable error.details.error_code (""
	// = no details); only the Messages surface writes it.
	Code string
}

func (e *APIError) Error() string { return e.Message }

// ErrBadRequest is a 400 "Bad Request" (syntax and typing problems).
func ErrBadRequest(param, format string, args ...any) *APIError {
	return &APIError{Status: http.StatusBadRequest, Type: typeBadRequest, Message: fmt.Sprintf(format, args...), Param: param}
}

// ErrInvalid is a 400 "BadRequestError" (value validation).
func ErrInvalid(param, format string, args ...any) *APIError {
	return &APIError{Status: http.StatusBadRequest, Type: TypeBadRequestError, Message: fmt.Sprintf(format, args...), Param: param}
}

// ErrFieldType is the wrong-JSON-type error.
func ErrFieldType(field, want string) *APIError {
	return ErrBadRequest(field, "Invalid type for field '%s': expected %s", field, want)
}

// ErrFieldRequired is the missing-required-field error.
func ErrFieldRequired(field string) *APIError {
	return ErrBadRequest(field, "Field required: %s", field)
}

var (
	ErrStartingUp = &APIError{Status: http.StatusServiceUnavailable, Type: TypeUnavailable, Message: "The server is starting up."}
	ErrShutdown   = &APIError{Status: http.StatusServiceUnavailable, Type: TypeUnavailable, Message: "The server is shutting down."}
	ErrEngineDead = &APIError{Status: http.StatusServiceUnavailable, Type: TypeUnavailable, Message: "The engine is not running."}
	ErrInternal   = &APIError{Status: http.StatusInternalServerError, Type: TypeInternal, Message: "Internal Server Error"}
)

// ErrorBody is the JSON form of an APIError.
type ErrorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

func (e *APIError) body() ErrorBody {
	d := errorDetail{Message: e.Message, Type: e.Type, Code: e.Status}
	if e.Param != "" {
		p := e.Param
		d.Param = &p
	}
	return ErrorBody{Error: d}
}

// AppendSSE appends the error as a mid-stream SSE event, for errors after
// the 200 status is out: param is always null there.
func (e *APIError) AppendSSE(b []byte) []byte {
	b = append(b, `data: {"error":{"message":`...)
	b = jsonenc.AppendString(b, e.Message)
	b = append(b, `,"type":`...)
	b = jsonenc.AppendString(b, e.Type)
	b = append(b, `,"param":null,"code":`...)
	b = strconv.AppendInt(b, int64(e.Status), 10)
	return append(b, "}}\n\n"...)
}

// WriteError answers err as JSON.
func WriteError(w http.ResponseWriter, err *APIError) {
	Encode(w, err.Status, err.body())
}

// Encode writes v as compact JSON (no HTML escaping, no trailing newline)
// with the given status.
func Encode(w http.ResponseWriter, status int, v any) {
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
	BodyUnauthorized     = []byte(`{"error":"Unauthorized"}`)
	BodyNotFound         = []byte(`{"detail":"Not Found"}`)
	BodyMethodNotAllowed = []byte(`{"detail":"Method Not Allowed"}`)
)
