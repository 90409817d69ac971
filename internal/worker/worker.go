package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/faults"
	"github.com/mocker-server/mocker-server/internal/ui"
)

// Errors of the operator actions (errors.Is).
var (
	// ErrNotRunning: the action needs a running worker (not killed, not
	// stopped, started).
	ErrNotRunning = errors.New("worker is not running")
	// ErrStopped: the worker has stopped for good.
	ErrStopped = errors.New("worker stopped")
	// ErrInvalidTiming: a slow action's values are out of range.
	ErrInvalidTiming = errors.New("invalid timing change")
)

// Worker is one simulated server. Its methods are safe for concurrent use;
// operator actions are applied one at a time.
type Worker struct {
	cfg   *config.Config
	opts  Options
	log   *slog.Logger
	hooks EngineHooks
	grace time.Duration
	// faults decides the worker's injected faults (nil: none).
	faults *faults.Injector

	// publishing gates the engines' KV-event and FPM sinks (sinks.go).
	publishing atomic.Bool
	// files were read at the first start (loaders.go).
	files files
	// bannerShown: the startup banner is printed once; a restart says
	// only "listening on".
	bannerShown bool

	mu       sync.Mutex
	started  bool
	stopped  bool
	inst     *instance // nil before the start, after a kill and after Stop
	port     int       // bound port, reused by restarts
	url      string
	grpcPort int // bound gRPC port, reused by restarts (-1: none)
	grpcAddr string
	// started0 is when the worker first started (the gRPC servers'
	// uptime).
	started0   time.Time
	draining   bool
	paused     bool
	healthFail bool
	// slow is the last slow action's settings (zero: none since the start).
	slow Slowdown
}

// New returns a worker for a validated configuration; Start runs it.
func New(cfg *config.Config, opts Options) *Worker {
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	if opts.Logger == nil {
		opts.Logger = NewLogger(opts.Stderr, cfg.LogLevel)
	}
	w := &Worker{cfg: cfg, opts: opts, log: opts.Logger, grace: opts.ShutdownGrace, port: cfg.Port, grpcPort: cfg.GRPCPort}
	if w.grace <= 0 {
		w.grace = time.Duration(cfg.ShutdownGrace * float64(time.Second))
	}
	// One injector for the worker's whole life: its arrival count and
	// script clock survive restarts. Load validated the settings.
	inj, err := faults.New(cfg.FaultSettings(), faults.Options{Seed: cfg.Seed})
	if err != nil {
		w.log.Error("invalid failure settings; no faults will be injected", "err", err)
	}
	w.faults = inj
	w.hooks = EngineHooks{Observer: opts.Engines.Observer}
	if cfg.UI {
		if w.opts.UI == nil {
			w.opts.UI = ui.NewHub(ui.Options{Name: cfg.Model})
		}
		w.hooks.Inspector = w.opts.UI.Inspector
	} else {
		w.opts.UI = nil
	}
	if f := opts.Engines.KVSink; f != nil {
		w.hooks.KVSink = func(r int) engine.KVEventSink {
			if s := f(r); s != nil {
				return gatedKVSink{sink: s, on: &w.publishing}
			}
			return nil
		}
	}
	if f := opts.Engines.FPMSink; f != nil {
		w.hooks.FPMSink = func(r int) engine.FPMSink {
			if s := f(r); s != nil {
				return gatedFPMSink{sink: s, on: &w.publishing}
			}
			return nil
		}
	}
	return w
}

// UI returns the worker's live-view hub, nil when --ui=false.
func (w *Worker) UI() *ui.Hub { return w.opts.UI }

// Faults returns the worker's fault injector (nil when its settings were
// invalid), for an admin API to mount faults.NewAdminHandler on.
func (w *Worker) Faults() *faults.Injector { return w.faults }

// Config returns the worker's configuration (read-only).
func (w *Worker) Config() *config.Config { return w.cfg }

// Start builds the engines, binds the HTTP port and starts serving.
func (w *Worker) Start() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return ErrStopped
	}
	if w.started {
		return errors.New("worker already started")
	}
	var err error
	if w.files, err = w.opts.Loaders.load(w.cfg); err != nil {
		return err
	}
	if w.files.mm == nil && w.cfg.MMProcessorKwargs != nil && w.opts.Logger != nil {
		// vLLM takes the flag for a text-only model too; here it has no
		// processor to configure, so say so once instead of nothing.
		w.opts.Logger.Warn("accepted, no effect without a multimodal processor (--mm-processor-model none): --mm-processor-kwargs")
	}
	w.started0 = time.Now()
	if err := w.startLocked(nil); err != nil {
		return err
	}
	w.started = true
	return nil
}

func (w *Worker) startLocked(beforeServe func(*instance) error) error {
	w.publishing.Store(true)
	in, err := w.startInstance(w.port, w.grpcPort, beforeServe)
	if err != nil {
		w.publishing.Store(false)
		return err
	}
	w.inst = in
	w.port = in.ln.Addr().(*net.TCPAddr).Port
	w.url = in.url
	if in.grpcLn != nil {
		w.grpcPort = in.grpcLn.Addr().(*net.TCPAddr).Port
		w.grpcAddr = in.grpcLn.Addr().String()
	}
	if h := w.cfg.HardwareTiming; h != nil {
		// What vLLM reports at startup as "GPU KV cache size" (docs/hardware.md).
		w.log.Info("hardware timing model", "gpu", w.cfg.Hardware, "tensor_parallel_size", w.cfg.TensorParallelSize,
			"kernels", h.Framework(), "num_gpu_blocks", w.cfg.NumGPUBlocks, "kv_cache_tokens", w.cfg.NumGPUBlocks*w.cfg.BlockSize)
	}
	if !w.bannerShown {
		w.bannerShown = true
		w.printBanner(in.ln.Addr().String(), in.url)
	} else {
		w.log.Info("listening", "addr", in.ln.Addr().String(), "port", w.port)
		fmt.Fprintf(w.opts.Stderr, "listening on %s\n", in.url)
	}
	if w.grpcAddr != "" {
		w.log.Info("gRPC listening", "addr", w.grpcAddr, "services", in.grpcNames)
		fmt.Fprintf(w.opts.Stderr, "gRPC listening on %s (%s)\n", w.grpcAddr, in.grpcNames)
	}
	if w.opts.Ready != nil {
		w.opts.Ready(in.url)
	}
	return nil
}

// Stop shuts the worker down for good, gracefully (in-flight requests get
// the shutdown grace), and releases its publishers. Idempotent.
func (w *Worker) Stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	w.stopped = true
	if w.inst != nil {
		w.log.Info("shutting down", "grace", w.grace)
		w.inst.shutdown(w.grace)
		w.inst = nil
	}
	w.publishing.Store(false)
	if w.opts.Release != nil {
		w.opts.Release()
	}
	w.log.Info("stopped")
}

// Kill stops the worker abruptly, as a crashed process would: its port
// refuses connections, open connections are reset (streams fail at the
// client), nothing more is published and the KV pool is gone. Killing a
// killed worker does nothing.
func (w *Worker) Kill() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.checkStarted(); err != nil {
		return err
	}
	w.killLocked()
	return nil
}

func (w *Worker) killLocked() {
	if w.inst == nil {
		return
	}
	w.publishing.Store(false)
	w.inst.kill()
	w.inst = nil
	w.draining, w.paused, w.healthFail = false, false, false
	w.slow = Slowdown{}
	w.log.Info("killed")
}

// Restart brings a killed or running worker back with fresh engines (an
// empty KV pool) on the same port. Every rank publishes AllBlocksCleared
// before the first request is read; the KV-event sequence numbers continue, since the
// publishers outlive the engines. A running worker is killed first.
// Drain, pause and slow settings do not survive a restart.
func (w *Worker) Restart(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.checkStarted(); err != nil {
		return err
	}
	w.killLocked()
	announce := func(in *instance) error {
		// No request has been read yet, so every pool is empty and the
		// reset succeeds; with prefix caching on it publishes
		// AllBlocksCleared.
		return in.eachEngine(func(e *engine.Engine) error {
			if _, err := e.ResetPrefixCache(ctx); err != nil {
				return fmt.Errorf("announce the cleared pool: %w", err)
			}
			return nil
		})
	}
	if err := w.startLocked(announce); err != nil {
		return err
	}
	w.log.Info("restarted")
	return nil
}

// Drain stops admitting: new generation requests answer 503 while running
// ones finish. Undrain admits again.
func (w *Worker) Drain() error   { return w.setDraining(true) }
func (w *Worker) Undrain() error { return w.setDraining(false) }

func (w *Worker) setDraining(on bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.checkRunning(); err != nil {
		return err
	}
	w.inst.srv.SetDraining(on)
	w.draining = on
	return nil
}

// Pause stops every rank's engine from running passes: streams stall, no
// token is lost. /health keeps answering 200 unless failHealth, then it
// answers 503 until Resume.
func (w *Worker) Pause(ctx context.Context, failHealth bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.checkRunning(); err != nil {
		return err
	}
	if err := w.inst.eachEngine(func(e *engine.Engine) error { return e.Pause(ctx) }); err != nil {
		return err
	}
	w.inst.srv.SetHealthFailing(failHealth)
	w.paused, w.healthFail = true, failHealth
	return nil
}

// Resume lets a paused worker's engines run again and clears a failing
// health check.
func (w *Worker) Resume(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.checkRunning(); err != nil {
		return err
	}
	if err := w.inst.eachEngine(func(e *engine.Engine) error { return e.Resume(ctx) }); err != nil {
		return err
	}
	w.inst.srv.SetHealthFailing(false)
	w.paused, w.healthFail = false, false
	return nil
}

// Slowdown is a run-time timing change; nil fields stay as they are.
type Slowdown struct {
	// SpeedupRatio replaces the speedup ratio (> 0, or +Inf for no delay).
	SpeedupRatio *float64
	// ExtraPassDelay is added to every pass that does work (0 to
	// MaxExtraPassDelay).
	ExtraPassDelay *time.Duration
}

// MaxExtraPassDelay is the largest Slowdown.ExtraPassDelay: a pass cannot
// be modeled longer (engine.MaxPassDuration).
const MaxExtraPassDelay = engine.MaxPassDuration

// Slow changes every rank's timing from its next pass on.
func (w *Worker) Slow(ctx context.Context, s Slowdown) error {
	if r := s.SpeedupRatio; r != nil && (math.IsNaN(*r) || *r <= 0) {
		return fmt.Errorf("%w: speedup_ratio must be > 0, got %v", ErrInvalidTiming, *r)
	}
	if d := s.ExtraPassDelay; d != nil && (*d < 0 || *d > MaxExtraPassDelay) {
		return fmt.Errorf("%w: extra_pass_delay_ms must be between 0 and %d, got %v", ErrInvalidTiming,
			MaxExtraPassDelay.Milliseconds(), *d)
	}
	if s.SpeedupRatio == nil && s.ExtraPassDelay == nil {
		return fmt.Errorf("%w: give speedup_ratio and/or extra_pass_delay_ms", ErrInvalidTiming)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.checkRunning(); err != nil {
		return err
	}
	change := engine.TimingChange{SpeedupRatio: s.SpeedupRatio, ExtraPassDelay: s.ExtraPassDelay}
	if err := w.inst.eachEngine(func(e *engine.Engine) error { return e.Retime(ctx, change) }); err != nil {
		return err
	}
	// Nil fields stay as they were, as in the engines.
	if s.SpeedupRatio != nil {
		r := *s.SpeedupRatio
		w.slow.SpeedupRatio = &r
	}
	if s.ExtraPassDelay != nil {
		d := *s.ExtraPassDelay
		w.slow.ExtraPassDelay = &d
	}
	return nil
}

// Condition is what operator actions have done to a worker beyond its
// State, which names only the most significant one: a paused worker may
// also be draining, fail its health check and run slowed.
type Condition struct {
	Draining bool
	Paused   bool
	// HealthFailing: /health answers 503 (paused with health "fail").
	HealthFailing bool
	// Slow holds the slow actions' settings since the (re)start; nil
	// fields were never set.
	Slow Slowdown
}

// Slowed reports whether a slow action changed the worker's timing.
func (c Condition) Slowed() bool {
	return c.Slow.SpeedupRatio != nil || (c.Slow.ExtraPassDelay != nil && *c.Slow.ExtraPassDelay > 0)
}

// Condition returns the worker's current condition (all false when it is
// not running).
func (w *Worker) Condition() Condition {
	w.mu.Lock()
	defer w.mu.Unlock()
	return Condition{Draining: w.draining, Paused: w.paused, HealthFailing: w.healthFail, Slow: w.slow}
}

// ResetPrefixCache resets every rank's prefix cache; false when some rank
// refused because its blocks are in use.
func (w *Worker) ResetPrefixCache(ctx context.Context) (bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.checkRunning(); err != nil {
		return false, err
	}
	all := true
	for _, e := range w.inst.engines {
		ok, err := e.ResetPrefixCache(ctx)
		if err != nil {
			return false, err
		}
		all = all && ok
	}
	return all, nil
}

// State returns the worker's current state.
func (w *Worker) State() State {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stateLocked()
}

func (w *Worker) stateLocked() State {
	switch {
	case w.stopped:
		return StateStopped
	case !w.started:
		return StateStarting
	case w.inst == nil:
		return StateKilled
	case w.paused:
		return StatePaused
	case w.draining:
		return StateDraining
	}
	return StateRunning
}

// URL returns the base URL once the worker has listened ("" before).
func (w *Worker) URL() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.url
}

// Port returns the HTTP port (the bound one once started).
func (w *Worker) Port() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.port
}

func (w *Worker) checkStarted() error {
	switch {
	case w.stopped:
		return ErrStopped
	case !w.started:
		return ErrNotRunning
	}
	return nil
}

func (w *Worker) checkRunning() error {
	if err := w.checkStarted(); err != nil {
		return err
	}
	if w.inst == nil {
		return ErrNotRunning
	}
	return nil
}

// Serve runs one worker until ctx ends, then stops it gracefully: the
// whole life of `serve` without an admin API. A bind failure is returned
// at once; so is an HTTP server failure, after the graceful stop.
func Serve(ctx context.Context, cfg *config.Config, opts Options) error {
	failed := make(chan error, 1)
	onFailure := opts.OnFailure
	opts.OnFailure = func(err error) {
		select {
		case failed <- err:
		default:
		}
		if onFailure != nil {
			onFailure(err)
		}
	}
	w := New(cfg, opts)
	if err := w.Start(); err != nil {
		if opts.Release != nil {
			opts.Release()
		}
		return err
	}
	var result error
	select {
	case <-ctx.Done():
	case result = <-failed:
	}
	w.Stop()
	return result
}

// eachEngine applies f to every rank's engine, stopping at the first error.
func (in *instance) eachEngine(f func(*engine.Engine) error) error {
	for _, e := range in.engines {
		if err := f(e); err != nil {
			return err
		}
	}
	return nil
}
