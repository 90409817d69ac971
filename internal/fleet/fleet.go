// Package fleet runs many simulated workers (internal/worker) in one
// process: it plans their configurations and ports from the command line
// and a fleet file (plan.go), starts them (optionally staggered), and
// serves the admin API that lists them and breaks them on purpose
// (admin.go).
package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/ui"
	"github.com/mocker-server/mocker-server/internal/worker"
)

// Options configure a running fleet. The zero value runs production
// workers without an admin API, all started at once.
type Options struct {
	// Stderr receives the workers' logs and "listening on" lines.
	Stderr io.Writer
	// Version is reported by every worker's GET /version.
	Version string
	// AdminAddr is the admin API's host:port; "" runs no admin API.
	AdminAddr string
	// AdminKey, when set, is the bearer token every admin call needs.
	// Without it an AdminAddr that is not loopback is refused at Start.
	AdminKey string
	// AdminAllowInsecure allows a keyless admin API on a non-loopback
	// address (--admin-allow-insecure: a network the operator trusts).
	AdminAllowInsecure bool
	// StaggerDelay starts worker i after i·StaggerDelay.
	StaggerDelay time.Duration
	// ShutdownGrace is each worker's graceful-stop grace (default 10 s).
	ShutdownGrace time.Duration
	// WorkerOptions completes a member's worker options; nil means
	// worker.Production (metrics registry and ZMQ publishers).
	WorkerOptions func(m Member, base worker.Options) (worker.Options, error)
	// AdminReady is called with the admin API's base URL once it listens.
	AdminReady func(url string)
	// WorkerReady is called with a worker's index and base URL each time
	// it binds its port (start and restarts).
	WorkerReady func(i int, url string)
	// StartupGate schedules every worker's startup gate (nil: wall clock).
	StartupGate worker.GateScheduler
	// Loaders read timing profiles, tokenizers and chat templates; the
	// workers share what they read (each distinct file is read once).
	Loaders worker.Loaders
}

// Fleet is a running set of workers and its admin API.
type Fleet struct {
	members []Member
	opts    Options
	log     *slog.Logger
	failed  chan error
	metrics *adminMetrics

	mu      sync.Mutex
	workers []*worker.Worker // nil until the worker has been started

	// hubs are the workers' live views (nil for a member with ui off),
	// made before the workers so the admin port's /ui can list them all.
	hubs []*ui.Hub

	adminSrv *http.Server
	adminURL string
}

// Start starts the admin API (if configured), then every member in order,
// worker i after i·StaggerDelay. It returns once all are serving; on a
// failure, or when ctx ends during the stagger, it stops what it started
// and returns the error.
func Start(ctx context.Context, members []Member, opts Options) (*Fleet, error) {
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	if err := checkAdminExposure(opts.AdminAddr, opts.AdminKey, opts.AdminAllowInsecure); err != nil {
		return nil, err
	}
	if opts.WorkerOptions == nil {
		opts.WorkerOptions = func(m Member, base worker.Options) (worker.Options, error) {
			return worker.Production(m.Config, base)
		}
	}
	f := &Fleet{
		members: members,
		opts:    opts,
		log:     worker.NewLogger(opts.Stderr, fleetLogLevel(members)).With("component", "fleet"),
		failed:  make(chan error, 1),
		workers: make([]*worker.Worker, len(members)),
	}
	f.metrics = newAdminMetrics(f)
	f.hubs = make([]*ui.Hub, len(members))
	for i, m := range members {
		if m.Config.UI {
			name := m.ID
			if len(members) == 1 {
				name = m.Config.Model // serve: a fleet of one
			}
			f.hubs[i] = ui.NewHub(ui.Options{Name: name})
		}
	}
	f.opts.Loaders = opts.Loaders.Shared()
	if opts.AdminAddr != "" {
		if err := f.startAdmin(); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	for i := range members {
		if d := time.Duration(i) * opts.StaggerDelay; d > 0 {
			t := time.NewTimer(time.Until(start.Add(d)))
			select {
			case <-ctx.Done():
				t.Stop()
				f.Stop()
				return nil, ctx.Err()
			case <-t.C:
			}
		}
		if err := f.startWorker(i); err != nil {
			f.Stop()
			return nil, fmt.Errorf("worker %s: %w", members[i].ID, err)
		}
	}
	if len(members) > 1 {
		f.log.Info("fleet started", "workers", len(members), "took", time.Since(start).Round(time.Millisecond))
		f.printSummary()
	}
	return f, nil
}

func (f *Fleet) startWorker(i int) error {
	m := f.members[i]
	base := worker.Options{
		Stderr:        f.opts.Stderr,
		Logger:        worker.NewLogger(f.opts.Stderr, m.Config.LogLevel).With("worker", m.ID),
		Version:       f.opts.Version,
		ShutdownGrace: f.opts.ShutdownGrace,
		StartupGate:   f.opts.StartupGate,
		Loaders:       f.opts.Loaders,
		UI:            f.hubs[i],
		AdminURL:      f.adminURL,
		ID:            m.ID,
		OnFailure: func(err error) {
			select {
			case f.failed <- fmt.Errorf("worker %s: %w", m.ID, err):
			default:
			}
		},
	}
	if len(f.members) > 1 {
		// The fleet's summary names the shared parts; each worker adds
		// its own endpoints.
		base.Banner, base.AdminURL = worker.BannerCompact, ""
	}
	if ready := f.opts.WorkerReady; ready != nil {
		base.Ready = func(url string) { ready(i, url) }
	}
	wopts, err := f.opts.WorkerOptions(m, base)
	if err != nil {
		return err
	}
	w := worker.New(m.Config, wopts)
	if err := w.Start(); err != nil {
		if wopts.Release != nil {
			wopts.Release()
		}
		return err
	}
	f.mu.Lock()
	f.workers[i] = w
	f.mu.Unlock()
	return nil
}

// Members returns the planned members.
func (f *Fleet) Members() []Member { return f.members }

// Worker returns worker i, nil when it has not started yet.
func (f *Fleet) Worker(i int) *worker.Worker {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.workers[i]
}

// AdminURL returns the admin API's base URL ("" without one).
func (f *Fleet) AdminURL() string { return f.adminURL }

// Failed delivers the first worker whose HTTP server failed by itself.
func (f *Fleet) Failed() <-chan error { return f.failed }

// Stop stops the admin API, then every worker gracefully, in parallel.
func (f *Fleet) Stop() {
	if f.adminSrv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = f.adminSrv.Shutdown(ctx)
		cancel()
		_ = f.adminSrv.Close()
	}
	f.mu.Lock()
	workers := append([]*worker.Worker(nil), f.workers...)
	f.mu.Unlock()
	var wg sync.WaitGroup
	for _, w := range workers {
		if w != nil {
			wg.Go(w.Stop)
		}
	}
	wg.Wait()
}

// Run starts the fleet and runs it until ctx ends, then stops it
// gracefully. A worker's HTTP server failing by itself stops the fleet
// and is returned.
func Run(ctx context.Context, members []Member, opts Options) error {
	f, err := Start(ctx, members, opts)
	if err != nil {
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			return nil
		}
		return err
	}
	var result error
	select {
	case <-ctx.Done():
	case result = <-f.failed:
	}
	f.Stop()
	return result
}

// startAdmin binds the admin port and serves the admin API.
func (f *Fleet) startAdmin() error {
	ln, err := net.Listen("tcp", f.opts.AdminAddr)
	if err != nil {
		return fmt.Errorf("admin API: listen on %s: %w", f.opts.AdminAddr, err)
	}
	f.adminURL = "http://" + ln.Addr().String()
	f.adminSrv = &http.Server{
		Handler:           f.adminHandler(),
		ReadHeaderTimeout: adminHeaderTimeout,
		IdleTimeout:       adminIdleTimeout,
		ErrorLog:          slog.NewLogLogger(f.log.Handler(), slog.LevelWarn),
	}
	go func() { _ = f.adminSrv.Serve(ln) }()
	fmt.Fprintf(f.opts.Stderr, "admin API on %s\n", f.adminURL)
	if f.opts.AdminReady != nil {
		f.opts.AdminReady(f.adminURL)
	}
	return nil
}

// fleetLogLevel is the log level of the fleet's own lines (admin actions,
// start): the first worker's --log-level, info for an empty fleet.
func fleetLogLevel(members []Member) config.LogLevel {
	if len(members) == 0 {
		return config.LogInfo
	}
	return members[0].Config.LogLevel
}
