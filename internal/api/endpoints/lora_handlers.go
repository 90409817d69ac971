package endpoints

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/api/wire"
)

// HandleLoadAdapter is POST /v1/load_lora_adapter.
func HandleLoadAdapter(s *pipeline.Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o, e := wire.DecodeBody(w, r, s.Opts().HTTP.MaxRequestBodyBytes)
		if e == nil {
			e = adapterRequestFields(o, "lora_name", "lora_path")
		}
		if e == nil {
			name, _ := o.String("lora_name")
			path, _ := o.String("lora_path")
			e = s.LoadAdapter(name, path, "")
			if e == nil {
				writePlain(w, fmt.Sprintf("Success: LoRA adapter '%s' added successfully.", name))
				return
			}
		}
		wire.WriteError(w, e)
	})
}

// HandleUnloadAdapter is POST /v1/unload_lora_adapter.
func HandleUnloadAdapter(s *pipeline.Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o, e := wire.DecodeBody(w, r, s.Opts().HTTP.MaxRequestBodyBytes)
		if e == nil {
			e = adapterRequestFields(o, "lora_name")
		}
		if e == nil {
			o.Int("lora_int_id") // optional in vLLM's request; only its type is checked
			e = o.Failed()
		}
		if e == nil {
			name, _ := o.String("lora_name")
			e = s.UnloadAdapter(name)
			if e == nil {
				writePlain(w, fmt.Sprintf("Success: LoRA adapter '%s' removed successfully.", name))
				return
			}
		}
		wire.WriteError(w, e)
	})
}

// adapterRequestFields checks that the required string fields are present
// and strings (pydantic's checks, before vLLM's own).
func adapterRequestFields(o wire.Object, keys ...string) *wire.APIError {
	for _, k := range keys {
		if _, ok := o.String(k); !ok {
			if e := o.Failed(); e != nil {
				return e
			}
			return wire.ErrFieldRequired(k)
		}
	}
	return nil
}

// writePlain writes vLLM's bare success string: a body with no media type.
func writePlain(w http.ResponseWriter, body string) {
	h := w.Header()
	h["Content-Type"] = nil // no sniffed text/plain: vLLM sends none
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(body))
}
