// Package pipeline is the shared core of the HTTP layer (docs/http-api.md):
// the Server's state, the typed generation input every surface reads its
// body into and the checks they share, request submission to a DP rank's
// engine, the generic surface handler (Surface, HandleSurface), SSE delivery
// (streamer, delivery shards, write deadlines, stuck-reader aborts), injected
// faults, rate limits, LoRA adapters, disaggregation, middleware, the
// auxiliary endpoints, and the chat and completions surfaces. Surfaces with
// their own wire format (internal/api/responses, anthropic, embeddings,
// sglang) plug in through Surface and EventEncoder; internal/api routes them.
package pipeline

import (
	"crypto/subtle"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mocker-server/mocker-server/internal/api/disagg"
	"github.com/mocker-server/mocker-server/internal/api/ratelimit"
	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/faults"
	"github.com/mocker-server/mocker-server/internal/tokenizer"
)

// Server is the HTTP layer over dp_size engines.
type Server struct {
	Opts    settings.Options
	Engines []*engine.Engine
	// Adapters are the served LoRA adapters; nil without --enable-lora.
	Adapters *adapterRegistry
	Tok      tokenizer.Model
	chat     settings.ChatRenderer
	Log      *slog.Logger
	Metrics  http.Handler
	reqObs   settings.RequestObserver
	lagObs   settings.DeliveryLagObserver
	Version  string
	kvt      disagg.KVTransfer
	Side     http.Handler
	pdObs    disagg.TransferFailureObserver

	faults   *faults.Injector
	faultObs settings.FaultObserver
	limits   *ratelimit.Limiter
	Stuck    *stuckWatch
	Delivery *delivery
	Now      func() time.Time
	// WriteTimeout bounds every SSE write (sseWriteTimeout).
	WriteTimeout time.Duration

	served  map[string]bool
	apiKeys [][]byte
	handler http.Handler

	ready         atomic.Bool  // startup gate (false = 503)
	draining      atomic.Bool  // generation answers 503 (operator.go)
	HealthFailing atomic.Bool  // /health answers 503 (operator.go)
	dead          atomic.Int32 // engines whose actor has died
	Inflight      atomic.Int64 // generation requests in flight (GET /load)
	rr            atomic.Uint64
	ranks         []rankLoad
}

// rankLoad counts the engine sequences the router dispatched to a rank that
// have not finished yet (least_loaded routing).
type rankLoad struct {
	seqs atomic.Int64
	_    [56]byte // keep ranks on separate cache lines
}

// NewServer builds the HTTP layer's state over one engine per DP rank
// (engines[r] is rank r); routes builds its handler (the route table lives
// in internal/api, above the surfaces, so that the core imports none of them). The engines' Run loops are the caller's business. The server
// starts ready unless opts.HTTP.StartClosed; then the caller opens the gate
// with SetReady(true) when the startup time has elapsed.
func NewServer(opts settings.Options, engines []*engine.Engine, deps settings.Deps, routes func(*Server) http.Handler) *Server {
	s := &Server{
		Opts:     opts,
		Engines:  engines,
		Tok:      deps.Tokenizer,
		chat:     deps.ChatTemplate,
		Log:      deps.Logger,
		Metrics:  deps.Metrics,
		reqObs:   deps.Requests,
		lagObs:   deps.DeliveryLag,
		kvt:      deps.KVTransfer,
		Side:     deps.SideChannel,
		pdObs:    deps.TransferFailures,
		Version:  deps.Version,
		Now:      deps.Now,
		faults:   deps.Faults,
		faultObs: deps.FaultObserver,
		served:   make(map[string]bool, len(opts.Model.ServedNames)),
		ranks:    make([]rankLoad, len(engines)),

		WriteTimeout: sseWriteTimeout,
	}
	if s.Log == nil {
		s.Log = slog.New(slog.DiscardHandler)
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.Tok == nil {
		s.Tok = tokenizer.Builtin()
	}
	for _, name := range opts.Model.ServedNames {
		s.served[name] = true
	}
	if len(s.served) == 0 {
		s.served[opts.Model.ServedName()] = true
	}
	for _, k := range opts.HTTP.APIKeys {
		s.apiKeys = append(s.apiKeys, []byte(k))
	}
	if opts.LoRA.Enabled {
		s.Adapters = newAdapterRegistry()
	}
	if s.faults == nil {
		inj, err := faults.New(opts.Faults, faults.Options{Seed: opts.Seed})
		if err != nil {
			// Load validated the settings; only a hand-built config gets here.
			s.Log.Error("invalid failure settings; no faults will be injected", "err", err)
		}
		s.faults = inj
	}
	if l := opts.Limits; l.MaxConcurrentRequests > 0 || l.RPM > 0 || l.TPM > 0 {
		s.limits = ratelimit.NewLimiter(l.MaxConcurrentRequests, l.RPM, l.TPM, time.Now)
	}
	s.Stuck = &stuckWatch{limit: opts.HTTP.MaxUnflushedTokens, log: s.Log.Warn}
	s.Delivery = newDelivery(defaultShards(), engines, s.lagObs)
	s.ready.Store(!opts.HTTP.StartClosed)
	s.handler = routes(s)
	return s
}

// Handler returns the server's HTTP handler (the router with its middleware).
func (s *Server) Handler() http.Handler { return s.handler }

// SetReady opens (true) or closes (false) the startup gate: while closed,
// /health, /ping and the generation endpoints answer 503.
func (s *Server) SetReady(ready bool) { s.ready.Store(ready) }

// MarkEngineDead records that a rank's engine actor stopped unexpectedly:
// /health answers 503 from then on.
func (s *Server) MarkEngineDead(rank int) {
	s.dead.Add(1)
	s.Log.Error("engine actor died", "engine", rank)
}

// InFlight returns the number of generation requests in flight (GET /load).
func (s *Server) InFlight() int64 { return s.Inflight.Load() }

// authorized reports whether the request carries one of the API keys
// (constant-time comparison): as a Bearer token, or on the Anthropic
// Messages routes also in x-api-key, where Anthropic's clients put it
// (vLLM itself checks only the Bearer token).
func (s *Server) authorized(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	const prefix = "Bearer "
	if len(h) < len(prefix) || h[:len(prefix)] != prefix {
		if k := r.Header.Get("X-Api-Key"); k != "" && strings.HasPrefix(r.URL.Path, "/v1/messages") {
			return s.knownKey([]byte(k))
		}
		return false
	}
	return s.knownKey([]byte(h[len(prefix):]))
}

// knownKey compares tok with every API key in constant time.
func (s *Server) knownKey(tok []byte) bool {
	ok := 0
	for _, k := range s.apiKeys {
		ok |= subtle.ConstantTimeCompare(tok, k)
	}
	return ok == 1
}

// Healthy reports whether /health answers 200.
func (s *Server) Healthy() bool { return s.ready.Load() && s.dead.Load() == 0 }
