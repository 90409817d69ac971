package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mocker-server/mocker-server/internal/api"
	"github.com/mocker-server/mocker-server/internal/apiopts"
	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/grpcfront"
	"github.com/mocker-server/mocker-server/internal/kvtransfer"
	"github.com/mocker-server/mocker-server/internal/ui"
)

// errKilled is the cancellation cause of requests on a killed worker.
var errKilled = errors.New("worker killed")

// instance is one life of a worker between a start and a stop or kill:
// fresh engines (and so a fresh KV pool), the HTTP layer over them and the
// listener. A restart replaces the instance; the worker's metrics and
// publishers outlive it.
type instance struct {
	log     *slog.Logger
	engines []*engine.Engine
	srv     *api.Server
	kvt     *kvtransfer.Service // nil unless the worker serves disaggregated requests
	hs      *http.Server
	ln      net.Listener
	url     string
	// grpc serves --grpc-port on grpcLn (nil without it).
	grpc      *grpcfront.Server
	grpcLn    net.Listener
	grpcNames string // the services served, for the startup line

	stopEngines context.CancelFunc
	engineWG    sync.WaitGroup
	cancelReqs  context.CancelCauseFunc
	active      atomic.Int64 // handlers running
	closing     atomic.Bool  // set before a deliberate close: Serve's error is expected
	stopStartup func()

	connMu sync.Mutex
	conns  map[net.Conn]struct{}
}

// buildEngines creates one engine per DP rank; they share the timing
// profile read at the worker's first start.
func buildEngines(cfg *config.Config, log *slog.Logger, hooks EngineHooks, profile *engine.Profile) ([]*engine.Engine, error) {
	engineCfg := cfg.EngineConfig(profile)
	engines := make([]*engine.Engine, max(cfg.DPSize, 1))
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
		if hooks.Inspector != nil {
			opts.Inspector = hooks.Inspector(r)
		}
		e, err := engine.New(engineCfg, opts)
		if err != nil {
			return nil, err
		}
		engines[r] = e
	}
	return engines, nil
}

// startInstance builds the engines and the HTTP layer, binds host:port and
// starts serving. beforeServe, when set, runs once the engines run and the
// port is bound but before any request is read (connections wait in the
// listen backlog); its error stops the instance.
func (w *Worker) startInstance(port, grpcPort int, beforeServe func(*instance) error) (*instance, error) {
	cfg := w.cfg
	engines, err := buildEngines(cfg, w.log, w.hooks, w.files.profile)
	if err != nil {
		return nil, err
	}
	in := &instance{log: w.log, engines: engines, conns: map[net.Conn]struct{}{}, stopStartup: func() {}}
	deps, err := in.startKVTransfer(cfg, w.log, w.opts.Transfers)
	if err != nil {
		return nil, err
	}
	opts := apiopts.FromConfig(cfg, w.files.mm)
	opts.HTTP.WorkerID = w.opts.ID
	in.srv = api.NewServer(opts, engines, api.Deps{
		Logger:              w.log,
		Metrics:             w.opts.Metrics,
		Requests:            w.opts.Requests,
		HTTP:                w.opts.HTTP,
		DeliveryLag:         w.opts.DeliveryLag,
		Faults:              w.faults,
		FaultObserver:       w.opts.Faults,
		Version:             w.opts.Version,
		Tokenizer:           w.files.model,
		ChatTemplate:        w.files.chat,
		RequestChatTemplate: requestChatTemplate(cfg, w.files.chat),
		MM:                  w.opts.MM,

		KVTransfer:       deps.KVTransfer,
		SideChannel:      deps.SideChannel,
		TransferFailures: deps.TransferFailures,
	})
	if err := in.srv.LoadStaticAdapters(); err != nil {
		in.closeKVTransfer()
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(port)))
	if err != nil {
		in.closeKVTransfer()
		return nil, fmt.Errorf("listen on %s:%d: %w", cfg.Host, port, err)
	}
	in.ln = ln
	if in.kvt != nil {
		in.kvt.SetHTTPPort(ln.Addr().(*net.TCPAddr).Port)
	}
	in.url = "http://" + ln.Addr().String()
	if hub := w.opts.UI; hub != nil {
		hub.SetServerInfo(ui.ServerInfo{Address: ln.Addr().String(), EngineType: string(cfg.EngineType),
			Role: string(cfg.WorkerType), DPSize: max(cfg.DPSize, 1), BlockSize: cfg.EffectiveBlockSize(),
			NumBlocks: cfg.NumGPUBlocks})
	}

	// Engines run until the HTTP side is done with them.
	engCtx, stopEngines := context.WithCancel(context.Background())
	in.stopEngines = stopEngines
	for r, e := range engines {
		in.engineWG.Go(func() {
			defer func() {
				if v := recover(); v != nil {
					w.log.Error("engine panicked", "engine", r, "panic", v)
					in.srv.MarkEngineDead(r)
				}
			}()
			_ = e.Run(engCtx)
			if engCtx.Err() == nil {
				in.srv.MarkEngineDead(r)
			}
		})
	}

	// The startup gate imitates model loading, which a speedup ratio does
	// not shorten (see wallClockGate).
	if cfg.StartupTime > 0 {
		in.srv.SetReady(false)
		schedule := w.opts.StartupGate
		if schedule == nil {
			schedule = wallClockGate
		}
		in.stopStartup = schedule(time.Duration(cfg.StartupTime*float64(time.Second)), func() {
			in.srv.SetReady(true)
			w.log.Info("startup time elapsed; serving")
		})
	}

	baseCtx, cancelReqs := context.WithCancelCause(context.Background())
	in.cancelReqs = cancelReqs
	inner := in.srv.Handler()
	if hub := w.opts.UI; hub != nil {
		inner = ui.Route(inner, ui.Handler(hub, ui.HandlerOptions{APIKeys: cfg.APIKey}))
	}
	if cfg.DevMode {
		inner = sleepRoutes(inner, engines, w.log, w.opts.HTTP)
	}
	id := w.opts.ID
	in.hs = &http.Server{
		Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			in.active.Add(1)
			defer in.active.Add(-1)
			if id != "" {
				// Set before the API writes anything, so every answer
				// (stream, error, health) carries it.
				rw.Header()[HeaderWorker] = []string{id}
			}
			inner.ServeHTTP(rw, r)
		}),
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		BaseContext:       func(net.Listener) context.Context { return baseCtx },
		ConnContext:       api.ConnContext,
		ConnState:         in.trackConn,
		ErrorLog:          slog.NewLogLogger(w.log.Handler(), slog.LevelWarn),
	}
	if err := w.startGRPC(in, grpcPort); err != nil {
		_ = ln.Close()
		in.stop()
		return nil, err
	}
	if beforeServe != nil {
		if err := beforeServe(in); err != nil {
			in.kill()
			return nil, err
		}
	}
	go func() {
		err := in.hs.Serve(api.JSONErrorListener(ln))
		if err != nil && !errors.Is(err, http.ErrServerClosed) && !in.closing.Load() {
			w.log.Error("http server failed", "err", err)
			if w.opts.OnFailure != nil {
				w.opts.OnFailure(err)
			}
		}
	}()
	return in, nil
}

// trackConn keeps the open connections so that kill can reset them.
func (in *instance) trackConn(c net.Conn, s http.ConnState) {
	in.connMu.Lock()
	defer in.connMu.Unlock()
	switch s {
	case http.StateNew:
		in.conns[c] = struct{}{}
	case http.StateClosed, http.StateHijacked:
		delete(in.conns, c)
	}
}

// shutdown stops the instance gracefully: stop accepting, let in-flight
// requests finish for up to grace, cancel the rest, stop the engines.
func (in *instance) shutdown(grace time.Duration) {
	in.closing.Store(true)
	grpcDone := make(chan struct{})
	go func() {
		in.shutdownGRPC(grace)
		close(grpcDone)
	}()
	shCtx, cancel := context.WithTimeout(context.Background(), grace)
	if err := in.hs.Shutdown(shCtx); err != nil {
		// Cancel what is left: handlers see ErrShuttingDown as the cause,
		// cancel their engine work and answer 503 or a final SSE error
		// event; then the connections are closed.
		in.log.Warn("in-flight requests did not finish in time; cancelling them", "in_flight", in.srv.InFlight())
		in.cancelReqs(api.ErrShuttingDown)
		in.waitHandlers()
	}
	cancel()
	in.cancelReqs(api.ErrShuttingDown)
	_ = in.hs.Close()
	<-grpcDone // the gRPC calls end before the engines stop
	in.stop()
}

// kill stops the instance the hard way: the listener closes (new
// connections are refused), every open connection is reset (clients see
// ECONNRESET mid-stream), handlers are cancelled, the engines stop.
func (in *instance) kill() {
	in.closing.Store(true)
	in.connMu.Lock()
	for c := range in.conns {
		// A *net.TCPConn, or api.JSONErrorListener's wrapper of one.
		if tc, ok := c.(interface{ SetLinger(sec int) error }); ok {
			_ = tc.SetLinger(0) // close with RST instead of FIN
		}
	}
	in.connMu.Unlock()
	// Close closes the listener and every connection (reset, see above).
	_ = in.hs.Close()
	in.killGRPC()
	in.cancelReqs(errKilled)
	in.waitHandlers()
	in.stop()
}

// waitHandlers waits, bounded, for cancelled handlers to return.
func (in *instance) waitHandlers() {
	for deadline := time.Now().Add(handlerDrainTimeout); in.active.Load() > 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
}

// stop ends the startup timer, the engines and the side channel.
func (in *instance) stop() {
	in.stopStartup()
	in.stopEngines()
	in.engineWG.Wait()
	in.closeKVTransfer()
}
