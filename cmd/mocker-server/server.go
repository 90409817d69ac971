package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mocker-server/mocker-server/internal/api"
	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/events"
	"github.com/mocker-server/mocker-server/internal/metrics"
	"github.com/mocker-server/mocker-server/internal/profile"
)

// Server timeouts (docs/http-api.md). There is deliberately no overall
// write timeout: streams can be long; each SSE write sets its own deadline.
const (
	readHeaderTimeout    = 10 * time.Second
	idleTimeout          = 120 * time.Second
	defaultShutdownGrace = 10 * time.Second
	// handlerDrainTimeout bounds the wait for handlers after the grace
	// period, once their contexts are cancelled.
	handlerDrainTimeout = 5 * time.Second
)

// serverOptions are the seams of the serve lifecycle. The zero value is the
// production setup without metrics and ZMQ publishing.
type serverOptions struct {
	// Stderr receives logs and the "listening on" line.
	Stderr io.Writer
	// Logger overrides the default text logger on Stderr at cfg.LogLevel.
	Logger *slog.Logger
	// Ready is called with the base URL ("http://127.0.0.1:PORT") once the
	// port is bound (tests use it to find an OS-assigned port).
	Ready func(baseURL string)
	// ShutdownGrace is how long in-flight requests may run after ctx ends
	// before they are cancelled (default 10 s).
	ShutdownGrace time.Duration
	// Engines supplies each rank's collaborators (metrics observer, KV
	// event and FPM sinks).
	Engines engineHooks
	// Metrics serves GET /metrics; Requests observes per-request
	// histograms (vllm:request_params_*).
	Metrics  http.Handler
	Requests api.RequestObserver
	// DeliveryLag observes the per-token SSE delivery lag.
	DeliveryLag api.DeliveryLagObserver
	// StartupGate schedules the opening of the startup gate when
	// cfg.StartupTime > 0 (nil: a wall-clock timer). Tests pass their own
	// to decide when the engine is "up".
	StartupGate gateScheduler
}

// gateScheduler calls open once after d has elapsed, unless the returned
// stop function is called first.
type gateScheduler func(d time.Duration, open func()) (stop func())

// wallClockGate is the production gateScheduler: the startup time is wall
// clock, not scaled by speedup_ratio.
func wallClockGate(d time.Duration, open func()) (stop func()) {
	timer := time.AfterFunc(d, open)
	return func() { timer.Stop() }
}

// engineHooks give each DP rank its observer and sinks; nil functions and
// nil results mean "none".
type engineHooks struct {
	Observer func(rank int) engine.Observer
	KVSink   func(rank int) engine.KVEventSink
	FPMSink  func(rank int) engine.FPMSink
}

// runServer is serve's production entry point: it wires the Prometheus
// registry and the ZMQ publishers into every rank and serves.
func runServer(ctx context.Context, cfg *config.Config, _, stderr io.Writer) error {
	return runServerGated(ctx, cfg, stderr, nil)
}

// runServerGated is runServer with the startup gate scheduled by gate (nil:
// the wall clock).
func runServerGated(ctx context.Context, cfg *config.Config, stderr io.Writer, gate gateScheduler) error {
	if err := startPprof(stderr); err != nil {
		return err
	}
	opts, closePubs, err := productionOptions(cfg, stderr)
	if err != nil {
		return err
	}
	defer closePubs()
	opts.StartupGate = gate
	return serve(ctx, cfg, opts)
}

// productionOptions builds the metrics registry and the ZMQ KV-event and
// FPM publishers for cfg. The returned close function must run after the
// engines have stopped.
func productionOptions(cfg *config.Config, stderr io.Writer) (serverOptions, func(), error) {
	log := newLogger(stderr, cfg.LogLevel)
	reg := metrics.New(cfg, version)
	pubs, err := events.Open(cfg, log)
	if err != nil {
		return serverOptions{}, nil, fmt.Errorf("open ZMQ publishers: %w", err)
	}
	for r := 0; r < cfg.DPSize; r++ {
		reg.RegisterKVPublisherCounters(r,
			func() uint64 { return pubs.KVBatchesSent(r) },
			func() uint64 { return pubs.KVBatchesDropped(r) })
	}
	opts := serverOptions{
		Stderr: stderr,
		Logger: log,
		Engines: engineHooks{
			Observer: reg.Observer,
			KVSink:   pubs.KVSink,
			FPMSink: func(r int) engine.FPMSink {
				return metrics.TeeFPM(reg.FPMSink(r), pubs.FPMSink(r))
			},
		},
		Metrics:     reg.Handler(),
		Requests:    reg,
		DeliveryLag: reg,
	}
	return opts, func() { _ = pubs.Close() }, nil
}

// newLogger returns the structured stderr logger at the configured level.
func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}

// loadProfile reads a timing profile file; tests wrap it to count loads.
var loadProfile = profile.Load

// loadTimingProfile loads cfg's planner profile when its timing model is
// the interpolated one (nil otherwise). A profile that fails to load or
// validate is a configuration error (exit status 2).
func loadTimingProfile(cfg *config.Config) (*engine.Profile, error) {
	if cfg.TimingModel != engine.TimingInterpolated {
		return nil, nil
	}
	p, err := loadProfile(cfg.PlannerProfileData)
	if err != nil {
		return nil, &config.Error{Problems: []string{err.Error()}}
	}
	return p, nil
}

// buildEngines creates one engine per DP rank with the rank's hooks. A
// timing profile is read once here and shared by every rank.
func buildEngines(cfg *config.Config, log *slog.Logger, hooks engineHooks) ([]*engine.Engine, error) {
	timingProfile, err := loadTimingProfile(cfg)
	if err != nil {
		return nil, err
	}
	engineCfg := cfg.EngineConfig(timingProfile)
	engines := make([]*engine.Engine, cfg.DPSize)
	for r := range engines {
		opts := engine.Options{Rank: r, Logger: log.With("engine", r)}
		if hooks.Observer != nil {
			opts.Observer = hooks.Observer(r)
		}
		if hooks.KVSink != nil {
			opts.KVSink = hooks.KVSink(r)
		}
		if hooks.FPMSink != nil {
			opts.FPMSink = hooks.FPMSink(r)
		}
		e, err := engine.New(engineCfg, opts)
		if err != nil {
			return nil, err
		}
		engines[r] = e
	}
	return engines, nil
}

// serve runs the engines and the HTTP server until ctx ends, then shuts
// down gracefully (docs/http-api.md): stop accepting, let in-flight requests
// finish for up to ShutdownGrace, cancel the rest, stop the engines, and
// return nil.
func serve(ctx context.Context, cfg *config.Config, opts serverOptions) error {
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	log := opts.Logger
	if log == nil {
		log = newLogger(opts.Stderr, cfg.LogLevel)
	}
	grace := opts.ShutdownGrace
	if grace <= 0 {
		grace = defaultShutdownGrace
	}
	if cfg.DPSize < 1 {
		cfg.DPSize = 1
	}

	textModel, chat, err := loadTextModel(cfg)
	if err != nil {
		return err
	}
	engines, err := buildEngines(cfg, log, opts.Engines)
	if err != nil {
		return err
	}
	srv := api.NewServer(cfg, engines, api.Deps{
		Logger:       log,
		Metrics:      opts.Metrics,
		Requests:     opts.Requests,
		DeliveryLag:  opts.DeliveryLag,
		Version:      version,
		Tokenizer:    textModel,
		ChatTemplate: chat,
	})
	if err := srv.LoadStaticAdapters(); err != nil {
		return err
	}

	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)))
	if err != nil {
		return fmt.Errorf("listen on %s:%d: %w", cfg.Host, cfg.Port, err)
	}
	baseURL := "http://" + ln.Addr().String()
	log.Info("listening", "addr", ln.Addr().String(), "port", ln.Addr().(*net.TCPAddr).Port,
		"model", cfg.ServedName(), "engine_type", cfg.EngineType, "dp_size", cfg.DPSize)
	fmt.Fprintf(opts.Stderr, "listening on %s\n", baseURL)

	// Engines run until the HTTP side is done with them.
	engCtx, stopEngines := context.WithCancel(context.Background())
	var engWG sync.WaitGroup
	for r, e := range engines {
		engWG.Go(func() {
			defer func() {
				if v := recover(); v != nil {
					log.Error("engine panicked", "engine", r, "panic", v)
					srv.MarkEngineDead(r)
				}
			}()
			_ = e.Run(engCtx)
			if engCtx.Err() == nil {
				srv.MarkEngineDead(r)
			}
		})
	}

	// The startup gate imitates model loading, which a speedup ratio does not
	// shorten (see wallClockGate).
	stopStartup := func() {}
	if cfg.StartupTime > 0 {
		srv.SetReady(false)
		schedule := opts.StartupGate
		if schedule == nil {
			schedule = wallClockGate
		}
		stopStartup = schedule(time.Duration(cfg.StartupTime*float64(time.Second)), func() {
			srv.SetReady(true)
			log.Info("startup time elapsed; serving")
		})
	}

	baseCtx, cancelRequests := context.WithCancelCause(context.Background())
	var active atomic.Int64 // handlers running, to wait for after cancellation
	inner := srv.Handler()
	hs := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			active.Add(1)
			defer active.Add(-1)
			inner.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		BaseContext:       func(net.Listener) context.Context { return baseCtx },
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()
	if opts.Ready != nil {
		opts.Ready(baseURL)
	}

	var result error
	select {
	case <-ctx.Done():
		log.Info("shutting down", "grace", grace)
	case err := <-serveErr:
		result = err
		log.Error("http server failed", "err", err)
	}

	shCtx, cancelShutdown := context.WithTimeout(context.Background(), grace)
	if err := hs.Shutdown(shCtx); err != nil {
		// Cancel what is left: handlers see ErrShuttingDown as the cause,
		// cancel their engine work and answer 503 or a final SSE error
		// event; then the connections are closed.
		log.Warn("in-flight requests did not finish in time; cancelling them", "in_flight", srv.InFlight())
		cancelRequests(api.ErrShuttingDown)
		for deadline := time.Now().Add(handlerDrainTimeout); active.Load() > 0 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
	}
	cancelShutdown()
	cancelRequests(api.ErrShuttingDown)
	_ = hs.Close()
	stopStartup()
	stopEngines()
	engWG.Wait()
	if result == nil || errors.Is(result, http.ErrServerClosed) {
		log.Info("stopped")
		return nil
	}
	return result
}
