// Package httperr writes the JSON error answers of the server's HTTP
// endpoints outside the API surfaces (the admin, fault, side-channel and
// live-view endpoints). Each endpoint keeps its own error shape — clients
// match it byte for byte — so a shape is a body built by a small
// constructor (Nested, Flat) or by the caller; what every endpoint shares
// is how the answer is written (Write).
package httperr

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// Write answers with status and body, a complete JSON document:
// Content-Type application/json, Content-Length, then the body in one
// Write. net/http would add the same Content-Length itself for a small
// body; setting it keeps a large one from being sent chunked.
func Write(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// nested is the inner object of Nested's body, its fields in the order
// encoding/json writes a map's keys (sorted), which is how the admin
// endpoints wrote it first.
type nested struct {
	Code    int     `json:"code"`
	Message string  `json:"message"`
	Param   *string `json:"param"`
	Type    string  `json:"type"`
}

// Nested returns the nested error shape of vLLM's (and OpenAI's) API,
// {"error":{"code":…,"message":…,"param":…,"type":…}}, with status as the
// code and param null when it is "". Strings are escaped as encoding/json
// escapes them ('<', '>', '&' as \u003c, \u003e, \u0026).
func Nested(status int, typ, msg, param string) []byte {
	e := nested{Code: status, Message: msg, Type: typ}
	if param != "" {
		e.Param = &param
	}
	return marshal(struct {
		Error nested `json:"error"`
	}{e})
}

// Flat returns the flat error shape {"error":msg} of FastAPI's
// authentication errors and of the disaggregation side channel.
func Flat(msg string) []byte {
	return marshal(struct {
		Error string `json:"error"`
	}{msg})
}

func marshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Only strings and ints are marshalled: this cannot fail.
		panic("httperr: " + err.Error())
	}
	return b
}
