// Package api is mocker-server's OpenAI-compatible HTTP layer
// (docs/http-api.md): a chi router, the chat and completions handlers with SSE
// streaming, the auxiliary endpoints, request validation and errors. It
// tokenizes and plans each request (internal/tokenizer, internal/plan) and
// submits one engine sequence per choice to a DP rank's engine.
package api

import (
	"crypto/subtle"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/faults"
	"github.com/mocker-server/mocker-server/internal/tokenizer"
)

// RequestObserver receives the per-HTTP-request size observations
// (vllm:request_params_n, vllm:request_params_max_tokens,
// vllm:request_max_num_generation_tokens). It is called once per generation
// request that reached the engine, when the request ends, with the DP rank
// that served it (the histograms carry the engine label), n, the effective
// max tokens M (the largest over the prompts of a multi-prompt completions
// request) and the largest number of tokens any choice generated. It must be
// safe for concurrent use and must not block.
type RequestObserver interface {
	ObserveRequest(rank, n, maxTokens, maxGenerated int)
}

// DeliveryLagObserver receives, per streamed token, how late (seconds) its
// bytes were flushed to the client after the token's modeled delivery time
// (engine.OutputItem.Time, the deadline of the pass that produced it):
// mocker_token_delivery_lag_seconds{dp_rank}. It is called from handler
// goroutines once per token right after each flush; it must be safe for
// concurrent use, cheap and non-blocking. metrics.Registry implements it.
type DeliveryLagObserver interface {
	ObserveDeliveryLag(rank int, seconds float64)
}

// Deps are the Server's collaborators. Every field is optional.
type Deps struct {
	// Logger receives request logs (unknown fields at debug, recovered
	// panics at error). Default: discard.
	Logger *slog.Logger
	// Metrics serves GET /metrics. Default: an empty 200 text/plain body.
	Metrics http.Handler
	// Requests observes per-HTTP-request histograms (may be nil).
	Requests RequestObserver
	// DeliveryLag observes the per-token SSE delivery lag (may be nil).
	DeliveryLag DeliveryLagObserver
	// Faults decides injected faults; nil builds one from the
	// options' failure settings (seeded by Options.Seed).
	Faults *faults.Injector
	// FaultObserver counts injected faults (may be nil).
	FaultObserver FaultObserver
	// Version is reported by GET /version.
	Version string
	// Now is the wall clock for "created" timestamps. Default time.Now.
	Now func() time.Time
	// Tokenizer tokenizes prompts and renders generated tokens. Default:
	// the built-in pseudo-word tokenizer.
	Tokenizer tokenizer.Model
	// ChatTemplate renders chat requests. Default: the built-in ChatML
	// template.
	ChatTemplate ChatRenderer
	// KVTransfer is the side channel of disaggregated prefill/decode;
	// required when the configuration serves disaggregated requests.
	KVTransfer KVTransfer
	// SideChannel serves the prefill side of KV pulls under /kv_transfer/
	// (may be nil).
	SideChannel http.Handler
	// TransferFailures counts failed KV pulls (may be nil).
	TransferFailures TransferFailureObserver
}

// Server is the HTTP layer over dp_size engines.
type Server struct {
	opts    Options
	engines []*engine.Engine
	// adapters are the served LoRA adapters; nil without --enable-lora.
	adapters *adapterRegistry
	tok      tokenizer.Model
	chat     ChatRenderer
	log      *slog.Logger
	metrics  http.Handler
	reqObs   RequestObserver
	lagObs   DeliveryLagObserver
	version  string
	kvt      KVTransfer
	side     http.Handler
	pdObs    TransferFailureObserver

	faults   *faults.Injector
	faultObs FaultObserver
	limits   *limiter
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

// NewServer builds the HTTP layer over one engine per DP rank (engines[r] is
// rank r). The engines' Run loops are the caller's business. The server
// starts ready unless opts.HTTP.StartClosed; then the caller opens the gate
// with SetReady(true) when the startup time has elapsed.
func NewServer(opts Options, engines []*engine.Engine, deps Deps) *Server {
	s := &Server{
		opts:     opts,
		engines:  engines,
		tok:      deps.Tokenizer,
		chat:     deps.ChatTemplate,
		log:      deps.Logger,
		metrics:  deps.Metrics,
		reqObs:   deps.Requests,
		lagObs:   deps.DeliveryLag,
		kvt:      deps.KVTransfer,
		side:     deps.SideChannel,
		pdObs:    deps.TransferFailures,
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
		s.limits = newLimiter(l.MaxConcurrentRequests, l.RPM, l.TPM, time.Now)
	}
	s.stuck = &stuckWatch{limit: opts.HTTP.MaxUnflushedTokens, log: s.log.Warn}
	s.delivery = newDelivery(defaultShards(), engines, s.lagObs)
	s.ready.Store(!opts.HTTP.StartClosed)
	s.handler = s.routes()
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

// healthy reports whether /health answers 200.
func (s *Server) healthy() bool { return s.ready.Load() && s.dead.Load() == 0 }
