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
	"github.com/mocker-server/mocker-server/internal/media"
	"github.com/mocker-server/mocker-server/internal/tokenizer"
)

// Server is the HTTP layer over dp_size engines.
type Server struct {
	opts    settings.Options
	engines []*engine.Engine
	// adapters are the served LoRA adapters; nil without --enable-lora.
	adapters *adapterRegistry
	tok      tokenizer.Model
	chat     settings.ChatRenderer
	// reqChat compiles a request's chat_template (nil: none is rendered).
	reqChat func(string) (settings.ChatRenderer, error)
	log     *slog.Logger
	metrics http.Handler
	httpObs settings.HTTPInstrumenter
	reqObs  settings.RequestObserver
	lagObs  settings.DeliveryLagObserver
	version string
	kvt     disagg.KVTransfer
	side    http.Handler
	pdObs   disagg.TransferFailureObserver
	mmObs   settings.MMObserver
	mmCache *media.ItemCache

	faults   *faults.Injector
	faultObs settings.FaultObserver
	limits   *ratelimit.Limiter
	stuck    *stuckWatch
	delivery *delivery
	now      func() time.Time
	// writeTimeout bounds every SSE write (sseWriteTimeout).
	writeTimeout time.Duration

	served  map[string]bool
	apiKeys [][]byte
	handler http.Handler

	ready         atomic.Bool  // startup gate (false = 503)
	draining      atomic.Bool  // generation answers 503 (operator.go)
	healthFailing atomic.Bool  // /health answers 503 (operator.go)
	dead          atomic.Int32 // engines whose actor has died
	inflight      atomic.Int64 // generation requests in flight (GET /load)
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
		opts:     opts,
		engines:  engines,
		tok:      deps.Tokenizer,
		chat:     deps.ChatTemplate,
		reqChat:  deps.RequestChatTemplate,
		log:      deps.Logger,
		metrics:  deps.Metrics,
		httpObs:  deps.HTTP,
		reqObs:   deps.Requests,
		lagObs:   deps.DeliveryLag,
		kvt:      deps.KVTransfer,
		side:     deps.SideChannel,
		pdObs:    deps.TransferFailures,
		mmObs:    deps.MM,
		mmCache:  media.NewItemCache(opts.Multimodal.ProcessorCacheBytes),
		version:  deps.Version,
		now:      deps.Now,
		faults:   deps.Faults,
		faultObs: deps.FaultObserver,
		served:   make(map[string]bool, len(opts.Model.ServedNames)),
		ranks:    make([]rankLoad, len(engines)),

		writeTimeout: sseWriteTimeout,
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.tok == nil {
		s.tok = tokenizer.Builtin()
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
		s.adapters = newAdapterRegistry()
	}
	if s.faults == nil {
		inj, err := faults.New(opts.Faults, faults.Options{Seed: opts.Seed})
		if err != nil {
			// Load validated the settings; only a hand-built config gets here.
			s.log.Error("invalid failure settings; no faults will be injected", "err", err)
		}
		s.faults = inj
	}
	if l := opts.Limits; l.MaxConcurrentRequests > 0 || l.RPM > 0 || l.TPM > 0 {
		s.limits = ratelimit.NewLimiter(l.MaxConcurrentRequests, l.RPM, l.TPM, time.Now)
	}
	s.stuck = &stuckWatch{limit: opts.HTTP.MaxUnflushedTokens, log: s.log.Warn}
	s.delivery = newDelivery(defaultShards(), engines, s.lagObs)
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
	s.log.Error("engine actor died", "engine", rank)
}

// InFlight returns the number of generation requests in flight (GET /load).
func (s *Server) InFlight() int64 { return s.inflight.Load() }

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

// Opts returns the settings the server was built with (read only).
func (s *Server) Opts() *settings.Options { return &s.opts }

// Engines returns the engine of each DP rank.
func (s *Server) Engines() []*engine.Engine { return s.engines }

// Adapters returns the served LoRA adapters (nil without --enable-lora).
func (s *Server) Adapters() *adapterRegistry { return s.adapters }

// Tokenizer returns the model's tokenizer.
func (s *Server) Tokenizer() tokenizer.Model { return s.tok }

// Logger returns the request logger.
func (s *Server) Logger() *slog.Logger { return s.log }

// MetricsHandler serves GET /metrics.
func (s *Server) MetricsHandler() http.Handler { return s.metrics }

// HTTPInstrumenter counts the requests the router serves (nil: none).
func (s *Server) HTTPInstrumenter() settings.HTTPInstrumenter { return s.httpObs }

// Version is what GET /version reports.
func (s *Server) Version() string { return s.version }

// SideChannel serves the prefill side of KV pulls (nil: none).
func (s *Server) SideChannel() http.Handler { return s.side }

// Now is the wall clock of "created" timestamps.
func (s *Server) Now() time.Time { return s.now() }

// HealthFailing reports whether the operator made /health answer 503.
func (s *Server) HealthFailing() bool { return s.healthFailing.Load() }

// SetWriteTimeout changes the deadline of every SSE write that waits for
// its client (sseWriteTimeout by default); tests shorten it.
func (s *Server) SetWriteTimeout(d time.Duration) { s.writeTimeout = d }

// HandedBack counts the streams a delivery shard gave back to their handler
// because the client's socket was full.
func (s *Server) HandedBack() int64 { return s.delivery.handedBack.Load() }

// RenderedAhead counts the chunks the delivery shards rendered ahead of
// their pass (prerender.go).
func (s *Server) RenderedAhead() int64 { return s.delivery.renderedAhead() }

// StuckStreams counts the streams blocked in a write with at least limit
// undelivered output items (what the stuck-reader watch aborts).
func (s *Server) StuckStreams(limit int) int {
	s.stuck.mu.Lock()
	defer s.stuck.mu.Unlock()
	n := 0
	for st := range s.stuck.streams {
		if st.writing.Load() != 0 && st.j.out.Len() >= limit {
			n++
		}
	}
	return n
}
