// Package worker is one complete simulated server: one engine per DP rank,
// the HTTP API over them, its metrics registry and its ZMQ publishers. It
// runs the serve lifecycle (listen, serve, graceful shutdown) and the
// operator actions a fleet's admin API applies to one worker: kill,
// restart, drain, pause, slow and prefix-cache reset.
package worker

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/mocker-server/mocker-server/internal/api"
	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/events"
	"github.com/mocker-server/mocker-server/internal/kvtransfer"
	"github.com/mocker-server/mocker-server/internal/metrics"
	"github.com/mocker-server/mocker-server/internal/ui"
)

// Server timeouts. There is deliberately no overall write timeout: streams
// can be long; each SSE write sets its own deadline.
const (
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 120 * time.Second
	// handlerDrainTimeout bounds the wait for handlers once their contexts
	// are cancelled (after the grace period, or at once on kill).
	handlerDrainTimeout = 5 * time.Second
)

// Options are a worker's collaborators and seams. The zero value is a
// worker without metrics and without ZMQ publishing; Production fills in
// the real ones.
type Options struct {
	// Stderr receives the "listening on" line and the startup banner (and
	// the default logs).
	Stderr io.Writer
	// Banner says how much the first "listening on" is followed by.
	Banner BannerMode
	// AdminURL, when set, is named in the banner: the admin API serving
	// this worker.
	AdminURL string
	// Logger overrides the default text logger on Stderr at cfg.LogLevel.
	Logger *slog.Logger
	// Version is reported by GET /version and the build-info metric.
	Version string
	// Ready is called with the base URL ("http://127.0.0.1:PORT") each
	// time the worker's port is bound (first start and every restart).
	Ready func(baseURL string)
	// ShutdownGrace, when > 0, overrides cfg.ShutdownGrace: how long
	// in-flight requests may run on Stop before they are cancelled.
	ShutdownGrace time.Duration
	// Engines supplies each rank's collaborators.
	Engines EngineHooks
	// Metrics serves GET /metrics; Requests and DeliveryLag observe the
	// per-request histograms and the SSE delivery lag.
	Metrics     http.Handler
	Requests    api.RequestObserver
	DeliveryLag api.DeliveryLagObserver
	// HTTP counts every request in vLLM's HTTP metrics (http_requests_total,
	// …); may be nil.
	HTTP api.HTTPInstrumenter
	// MM counts multimodal cache lookups and unfetched items.
	MM api.MMObserver
	// Faults counts injected faults (mocker_injected_faults_total).
	Faults api.FaultObserver
	// Transfers counts failed KV pulls and release notifications of
	// disaggregated serving (vllm:nixl_num_failed_*); may be nil.
	Transfers TransferObserver
	// OnFailure is told when the HTTP server fails on its own (not by
	// Stop or Kill); nil means the failure is only logged.
	OnFailure func(error)
	// KVEvents returns rank's KV event PUB socket when one is bound that
	// another subscriber can connect to (SGLang's SubscribeKvEvents over
	// gRPC bridges it): its endpoint and topic; ok is false without one.
	// Production sets it; nil means none.
	KVEvents func(rank int) (endpoint, topic string, ok bool)
	// Release runs once when the worker stops for good (Stop), after its
	// engines have stopped: Production closes the ZMQ publishers here.
	Release func()
	// StartupGate schedules the opening of the startup gate (nil: a
	// wall-clock timer); tests pass their own to decide when it opens.
	StartupGate GateScheduler
	// Loaders read the timing profile, tokenizer and chat template.
	Loaders
	// ID is the identity stamped on every HTTP response as the
	// x-mocker-worker header (HeaderWorker), so that a client behind any
	// router can tell which worker served it; a fleet passes the worker's
	// admin id. Empty stamps nothing.
	ID string
	// UI is the live view's hub (GET /ui, docs/ui.md) when cfg.UI is on;
	// nil makes the worker create its own. A fleet passes one per worker
	// so that its admin page can show them all.
	UI *ui.Hub
}

// TransferObserver counts the failures of disaggregated handoffs.
type TransferObserver interface {
	api.TransferFailureObserver
	kvtransfer.NotificationObserver
}

// EngineHooks give each DP rank its observer and sinks; nil functions and
// nil results mean "none".
type EngineHooks struct {
	Observer func(rank int) engine.Observer
	KVSink   func(rank int) engine.KVEventSink
	FPMSink  func(rank int) engine.FPMSink
	// Inspector is set by the worker itself from its UI hub.
	Inspector func(rank int) engine.Inspector
}

// Production returns opts completed with the production wiring of cfg: a
// logger, the Prometheus registry (GET /metrics, observers of every rank)
// and the ZMQ KV-event and FPM publishers, closed by Release. Fields
// already set in opts are kept.
func Production(cfg *config.Config, opts Options) (Options, error) {
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	if opts.Logger == nil {
		opts.Logger = NewLogger(opts.Stderr, cfg.LogLevel)
	}
	reg := metrics.New(MetricsOptions(cfg), opts.Version)
	eopts, err := EventsOptions(cfg)
	if err != nil {
		return opts, err
	}
	pubs, err := events.Open(eopts, opts.Logger)
	if err != nil {
		return opts, fmt.Errorf("open ZMQ publishers: %w", err)
	}
	for r := 0; r < max(cfg.DPSize, 1); r++ {
		reg.RegisterKVPublisherCounters(r,
			func() uint64 { return pubs.KVBatchesSent(r) },
			func() uint64 { return pubs.KVBatchesDropped(r) })
	}
	opts.Engines = EngineHooks{
		Observer: reg.Observer,
		KVSink:   pubs.KVSink,
		FPMSink: func(r int) engine.FPMSink {
			return metrics.TeeFPM(reg.FPMSink(r), pubs.FPMSink(r))
		},
	}
	opts.Metrics, opts.Requests, opts.DeliveryLag, opts.Faults, opts.MM = reg.Handler(), reg, reg, reg, reg
	opts.HTTP = reg
	opts.Transfers = reg
	opts.KVEvents = func(r int) (string, string, bool) {
		k := pubs.KV(r)
		if k == nil || !k.Bound() {
			return "", "", false
		}
		return k.Endpoint(), k.Topic(), true
	}
	release := opts.Release
	opts.Release = func() {
		_ = pubs.Close()
		if release != nil {
			release()
		}
	}
	return opts, nil
}

// NewLogger returns the structured stderr logger at the configured level
// (info when the level does not parse).
func NewLogger(w io.Writer, level config.LogLevel) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}
