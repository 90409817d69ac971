package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// typeInvalidUserInput is the error type vLLM's adapter endpoints use for
// their own request checks.
const typeInvalidUserInput = "InvalidUserInput"

// loraAdapter is one served LoRA adapter. There are no weights: the path
// is recorded (and checked under lora_path_check exists).
type loraAdapter struct {
	engine.Adapter
	path   string
	parent string // the served model name listed as its parent
}

// adapterRegistry holds the served adapters of a server, shared by every
// rank. Ids come from one counter and are never reused, as in vLLM, so an
// adapter loaded again under the same name gets a new id (and, because the
// hash covers the name, the same block hashes).
type adapterRegistry struct {
	mu     sync.RWMutex
	byName map[string]*loraAdapter
	order  []string // load order, the order of /v1/models
	lastID int
}

func newAdapterRegistry() *adapterRegistry {
	return &adapterRegistry{byName: map[string]*loraAdapter{}}
}

// lookup returns the adapter served under name.
func (r *adapterRegistry) lookup(name string) (engine.Adapter, bool) {
	if r == nil {
		return engine.Adapter{}, false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	a, ok := r.byName[name]
	if !ok {
		return engine.Adapter{}, false
	}
	return a.Adapter, true
}

// list returns the adapters in load order.
func (r *adapterRegistry) list() []loraAdapter {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]loraAdapter, 0, len(r.order))
	for _, n := range r.order {
		out = append(out, *r.byName[n])
	}
	return out
}

// loadAdapter applies vLLM's checks for loading an adapter and registers it.
// The error carries the status, type and message vLLM answers with.
func (s *Server) loadAdapter(name, path, baseModel string) *apiError {
	r := s.adapters
	if name == "" || path == "" {
		return &apiError{Status: http.StatusBadRequest, Type: typeInvalidUserInput,
			Message: "Both 'lora_name' and 'lora_path' must be provided."}
	}
	if s.served[name] {
		// vLLM does not check this (the adapter would shadow the base
		// model); refusing it keeps every name meaning one thing.
		return &apiError{Status: http.StatusBadRequest, Type: typeInvalidUserInput,
			Message: fmt.Sprintf("The lora adapter '%s' has the name of a served model.", name)}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.byName[name]; ok {
		return &apiError{Status: http.StatusBadRequest, Type: typeInvalidUserInput,
			Message: fmt.Sprintf("The lora adapter '%s' has already been loaded.", name)}
	}
	if s.opts.LoRA.PathCheck == LoRAPathExists {
		if e := checkAdapterPath(name, path, s.opts.LoRA.MaxRank); e != nil {
			return e
		}
	}
	parent := s.opts.Model.ServedName()
	if baseModel != "" && s.served[baseModel] {
		parent = baseModel
	}
	r.lastID++
	a := &loraAdapter{Adapter: engine.Adapter{ID: r.lastID, Name: name}, path: path, parent: parent}
	r.byName[name] = a
	r.order = append(r.order, name)
	for _, e := range s.engines {
		// vLLM's add_lora: the engine loads it into its slots now. A
		// stopped engine serves nothing, so its error changes nothing.
		_ = e.LoadAdapter(a.Adapter)
	}
	s.log.Info("loaded LoRA adapter", "name", name, "path", path, "id", r.lastID)
	return nil
}

// unloadAdapter removes an adapter from the served names; its requests in
// flight finish under it. As in vLLM, the engine keeps it in its slots until
// they evict it.
func (s *Server) unloadAdapter(name string) *apiError {
	if name == "" {
		return &apiError{Status: http.StatusBadRequest, Type: typeInvalidUserInput,
			Message: "'lora_name' needs to be provided to unload a LoRA adapter."}
	}
	r := s.adapters
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.byName[name]; !ok {
		return &apiError{Status: http.StatusNotFound, Type: typeNotFound,
			Message: fmt.Sprintf("The lora adapter '%s' cannot be found.", name)}
	}
	delete(r.byName, name)
	r.order = slices.DeleteFunc(r.order, func(n string) bool { return n == name })
	s.log.Info("removed LoRA adapter", "name", name)
	return nil
}

// checkAdapterPath is the simulated "is there an adapter at path" check:
// the path must be a directory, and the rank ("r") of an adapter_config.json
// in it must not exceed max_lora_rank. The messages are vLLM's.
func checkAdapterPath(name, path string, maxRank int) *apiError {
	info, err := os.Stat(path)
	if err != nil || !info.IsDir() {
		return &apiError{Status: http.StatusNotFound, Type: typeNotFound,
			Message: fmt.Sprintf("Loading lora %s failed: No adapter found for %s", name, path)}
	}
	raw, err := os.ReadFile(filepath.Join(path, "adapter_config.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	var peft struct {
		R *int `json:"r"`
	}
	if err == nil {
		err = json.Unmarshal(raw, &peft)
	}
	if err != nil {
		return &apiError{Status: http.StatusBadRequest, Type: typeBadRequestError,
			Message: fmt.Sprintf("Loading lora %s failed: %v", name, err)}
	}
	if peft.R != nil && *peft.R > maxRank {
		return &apiError{Status: http.StatusBadRequest, Type: typeBadRequestError,
			Message: fmt.Sprintf("LoRA rank %d is greater than max_lora_rank %d.", *peft.R, maxRank)}
	}
	return nil
}

// LoadStaticAdapters loads the adapters of --lora-modules, with the checks
// of a runtime load; a failure stops startup, as in vLLM.
func (s *Server) LoadStaticAdapters() error {
	for _, m := range s.opts.LoRA.Modules {
		if e := s.loadAdapter(m.Name, m.Path, m.BaseModelName); e != nil {
			return fmt.Errorf("--lora-modules %s: %s", m.Name, e.Message)
		}
	}
	return nil
}

// handleLoadAdapter is POST /v1/load_lora_adapter.
func handleLoadAdapter(s *Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o, e := decodeBody(w, r, s.opts.HTTP.MaxRequestBodyBytes)
		if e == nil {
			e = adapterRequestFields(o, "lora_name", "lora_path")
		}
		if e == nil {
			name, _ := o.String("lora_name")
			path, _ := o.String("lora_path")
			e = s.loadAdapter(name, path, "")
			if e == nil {
				writePlain(w, fmt.Sprintf("Success: LoRA adapter '%s' added successfully.", name))
				return
			}
		}
		writeError(w, e)
	})
}

// handleUnloadAdapter is POST /v1/unload_lora_adapter.
func handleUnloadAdapter(s *Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o, e := decodeBody(w, r, s.opts.HTTP.MaxRequestBodyBytes)
		if e == nil {
			e = adapterRequestFields(o, "lora_name")
		}
		if e == nil {
			o.Int("lora_int_id") // optional in vLLM's request; only its type is checked
			e = o.failed()
		}
		if e == nil {
			name, _ := o.String("lora_name")
			e = s.unloadAdapter(name)
			if e == nil {
				writePlain(w, fmt.Sprintf("Success: LoRA adapter '%s' removed successfully.", name))
				return
			}
		}
		writeError(w, e)
	})
}

// adapterRequestFields checks that the required string fields are present
// and strings (pydantic's checks, before vLLM's own).
func adapterRequestFields(o object, keys ...string) *apiError {
	for _, k := range keys {
		if _, ok := o.String(k); !ok {
			if e := o.failed(); e != nil {
				return e
			}
			return errFieldRequired(k)
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
