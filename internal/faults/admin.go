package faults

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/mocker-server/mocker-server/internal/httperr"
)

// maxAdminBody bounds an admin request body; settings are small.
const maxAdminBody = 1 << 20

// NewAdminHandler serves the run-time failure settings of in, for the
// /admin/faults route of a single server or a fleet worker's admin API:
//
//	GET        the current settings as JSON
//	PUT        replace the settings (absent keys reset to their zero value)
//	POST       change only the keys present in the body
//
// With a key, every method requires "Authorization: Bearer <key>";
// without it, or with a wrong key, the answer is 401 {"error":"Unauthorized"}
// (vLLM's flat shape, as for its API key). An empty key means
// the caller authenticates (the fleet admin API guards all its routes). A
// new setting applies from the next request on and restarts the script's
// arrival count and time origin. Other errors use vLLM's shape
// {"error":{"message","type","param","code"}}.
func NewAdminHandler(in *Injector, key string) http.Handler {
	want := []byte(key)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if len(want) > 0 && (!ok || subtle.ConstantTimeCompare([]byte(token), want) != 1) {
			// vLLM's (FastAPI's) flat shape, which the API key's 401 and
			// the fleet's admin API answer too: one 401 for every key.
			httperr.Write(w, http.StatusUnauthorized, httperr.Flat("Unauthorized"))
			return
		}
		switch r.Method {
		case http.MethodGet:
		case http.MethodPut, http.MethodPost:
			s := Settings{}
			if r.Method == http.MethodPost {
				s = in.Settings()
			}
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxAdminBody))
			if err != nil {
				writeAdminError(w, http.StatusBadRequest, "BadRequestError", "Invalid body: "+err.Error())
				return
			}
			if key := unknownKey(body); key != "" {
				writeAdminError(w, http.StatusBadRequest, "BadRequestError",
					fmt.Sprintf("unknown key %q; the keys are %s", key, strings.Join(settingsKeys, ", ")))
				return
			}
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&s); err != nil {
				writeAdminError(w, http.StatusBadRequest, "BadRequestError", "Invalid JSON body: "+err.Error())
				return
			}
			if err := in.Update(s); err != nil {
				writeAdminError(w, http.StatusBadRequest, "BadRequestError", err.Error())
				return
			}
		default:
			w.Header().Set("Allow", "GET, PUT, POST")
			writeAdminError(w, http.StatusMethodNotAllowed, "MethodNotAllowedError", r.Method+" "+r.URL.Path+": use GET, PUT or POST")
			return
		}
		body, _ := json.Marshal(in.Settings())
		httperr.Write(w, http.StatusOK, body)
	})
}

// settingsKeys are the JSON keys of Settings, in its order, for the
// message that refuses an unknown one.
var settingsKeys = []string{"failure_rate", "failure_types", "failure_script", "allow_fault_headers"}

// unknownKey returns the first key of a JSON object body that Settings does
// not have, in sorted order (deterministic), or "" (also when body is no
// object: the decoder then says what is wrong).
func unknownKey(body []byte) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return ""
	}
	var unknown []string
	for k := range m {
		if !slices.Contains(settingsKeys, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return ""
	}
	slices.Sort(unknown)
	return unknown[0]
}

func writeAdminError(w http.ResponseWriter, status int, typ, msg string) {
	httperr.Write(w, status, httperr.Nested(status, typ, msg, ""))
}

// String renders settings for logs.
func (s Settings) String() string {
	return fmt.Sprintf("failure_rate=%v failure_types=%q failure_script=%q allow_fault_headers=%v",
		s.FailureRate, s.FailureTypes, s.Script, s.AllowHeaders)
}
