package pipeline

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/engine"
)

// typeInvalidUserInput is the error type vLLM's adapter endpoints use for
// their own request checks.
const typeInvalidUserInput = "InvalidUserInput"

// loraAdapter is one served LoRA adapter. There are no weights: the path
// is recorded (and checked under lora_path_check exists).
type loraAdapter struct {
	engine.Adapter
	Path   string
	Parent string // the served model name listed as its parent
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

// List returns the adapters in load order.
func (r *adapterRegistry) List() []loraAdapter {
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

// LoadAdapter applies vLLM's checks for loading an adapter and registers it.
// The error carries the status, type and message vLLM answers with.
func (s *Server) LoadAdapter(name, path, baseModel string) *wire.APIError {
	r := s.adapters
	if name == "" || path == "" {
		return &wire.APIError{Status: http.StatusBadRequest, Type: typeInvalidUserInput,
			Message: "Both 'lora_name' and 'lora_path' must be provided."}
	}
	if s.served[name] {
		// vLLM does not check this (the adapter would shadow the base
		// model); refusing it keeps every name meaning one thing.
		return &wire.APIError{Status: http.StatusBadRequest, Type: typeInvalidUserInput,
			Message: fmt.Sprintf("The lora adapter '%s' has the name of a served model.", name)}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.byName[name]; ok {
		return &wire.APIError{Status: http.StatusBadRequest, Type: typeInvalidUserInput,
			Message: fmt.Sprintf("The lora adapter '%s' has already been loaded.", name)}
	}
	if max := s.opts.Budgets.MaxLoRAAdapters; max > 0 && len(r.byName) >= max {
		// Each adapter costs the registry and every engine a slot table
		// entry: unbounded, a client could load tens of thousands.
		return &wire.APIError{Status: http.StatusBadRequest, Type: typeInvalidUserInput,
			Message: fmt.Sprintf("Cannot load the lora adapter '%s': %d adapters are loaded, the limit (--max-lora-adapters).", name, len(r.byName))}
	}
	if s.opts.LoRA.PathCheck == settings.LoRAPathExists {
		if e := checkAdapterPath(name, path, s.opts.LoRA.MaxRank); e != nil {
			return e
		}
	}
	parent := s.opts.Model.ServedName()
	if baseModel != "" && s.served[baseModel] {
		parent = baseModel
	}
	r.lastID++
	a := &loraAdapter{Adapter: engine.Adapter{ID: r.lastID, Name: name}, Path: path, Parent: parent}
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

// UnloadAdapter removes an adapter from the served names; its requests in
// flight finish under it. As in vLLM, the engine keeps it in its slots until
// they evict it.
func (s *Server) UnloadAdapter(name string) *wire.APIError {
	if name == "" {
		return &wire.APIError{Status: http.StatusBadRequest, Type: typeInvalidUserInput,
			Message: "'lora_name' needs to be provided to unload a LoRA adapter."}
	}
	r := s.adapters
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.byName[name]; !ok {
		return &wire.APIError{Status: http.StatusNotFound, Type: wire.TypeNotFound,
			Message: fmt.Sprintf("The lora adapter '%s' cannot be found.", name)}
	}
	delete(r.byName, name)
	r.order = slices.DeleteFunc(r.order, func(n string) bool { return n == name })
	s.log.Info("removed LoRA adapter", "name", name)
	return nil
}

// maxAdapterConfigBytes bounds the adapter_config.json read (a real one
// is well under a kilobyte).
const maxAdapterConfigBytes = 1 << 20

// checkAdapterPath is the simulated "is there an adapter at path" check:
// the path must be a directory holding a regular adapter_config.json (not
// a symlink, which could point anywhere) that is a JSON object, and its
// rank ("r") must not exceed max_lora_rank. Every way the check fails but
// the rank gives one message, vLLM's for a missing adapter, so that the
// answer tells a client nothing about the server's files beyond "no
// adapter here".
func checkAdapterPath(name, path string, maxRank int) *wire.APIError {
	notFound := &wire.APIError{Status: http.StatusNotFound, Type: wire.TypeNotFound,
		Message: fmt.Sprintf("Loading lora %s failed: No adapter found for %s", name, path)}
	r, ok := adapterRank(path)
	if !ok {
		return notFound
	}
	if r != nil && *r > maxRank {
		return &wire.APIError{Status: http.StatusBadRequest, Type: wire.TypeBadRequestError,
			Message: fmt.Sprintf("LoRA rank %d is greater than max_lora_rank %d.", *r, maxRank)}
	}
	return nil
}

// adapterRank reads the rank of the adapter at dir; false when there is
// no readable adapter there.
func adapterRank(dir string) (*int, bool) {
	info, err := os.Stat(dir)
	if err != nil || !info.IsDir() {
		return nil, false
	}
	file := filepath.Join(dir, "adapter_config.json")
	link, err := os.Lstat(file)
	if err != nil || !link.Mode().IsRegular() {
		return nil, false
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	// The file opened is the one checked, not a symlink swapped in since.
	if opened, err := f.Stat(); err != nil || !os.SameFile(link, opened) {
		return nil, false
	}
	raw, err := io.ReadAll(io.LimitReader(f, maxAdapterConfigBytes+1))
	if err != nil || len(raw) > maxAdapterConfigBytes {
		return nil, false
	}
	var peft struct {
		R *int `json:"r"`
	}
	if json.Unmarshal(raw, &peft) != nil {
		return nil, false
	}
	return peft.R, true
}

// LoadStaticAdapters loads the adapters of --lora-modules, with the checks
// of a runtime load; a failure stops startup, as in vLLM.
func (s *Server) LoadStaticAdapters() error {
	for _, m := range s.opts.LoRA.Modules {
		if e := s.LoadAdapter(m.Name, m.Path, m.BaseModelName); e != nil {
			return fmt.Errorf("--lora-modules %s: %s", m.Name, e.Message)
		}
	}
	return nil
}
