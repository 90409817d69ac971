package main

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/mocker-server/mocker-server/internal/api"
	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/fleet"
	"github.com/mocker-server/mocker-server/internal/profile"
	"github.com/mocker-server/mocker-server/internal/tokenizer"
	"github.com/mocker-server/mocker-server/internal/worker"
)

// serverOptions and engineHooks are the seams of one worker's lifecycle
// (internal/worker); the command-line tests build servers with them.
type (
	serverOptions = worker.Options
	engineHooks   = worker.EngineHooks
	gateScheduler = worker.GateScheduler
)

// loadProfile reads a timing profile file; tests wrap it to count loads.
var loadProfile = profile.Load

// loaders are the production file loaders: the timing profile and the
// model's tokenizer and chat template (textmodel.go).
// stderr gets the progress line of a large tokenizer's load.
func loaders(stderr io.Writer) worker.Loaders {
	return worker.Loaders{Profile: func(path string) (*engine.Profile, error) { return loadProfile(path) },
		TextModel: func(cfg *config.Config) (tokenizer.Model, api.ChatRenderer, error) {
			return loadTextModel(cfg, stderr)
		}}
}

// runServer is serve's production entry point: a fleet of one worker
// ("0"), with the admin API when --admin-port is given.
func runServer(ctx context.Context, cfg *config.Config, admin adminFlags, _, stderr io.Writer) error {
	return runServerGated(ctx, cfg, admin, stderr, nil)
}

// runServerGated is runServer with the startup gate scheduled by gate (nil:
// the wall clock).
func runServerGated(ctx context.Context, cfg *config.Config, admin adminFlags, stderr io.Writer, gate gateScheduler) error {
	if err := startPprof(stderr); err != nil {
		return err
	}
	opts := admin.fleetOptions(stderr)
	opts.StartupGate = gate
	err := fleet.Run(ctx, []fleet.Member{{ID: "0", Config: cfg}}, opts)
	// serve runs one server: "worker 0: listen on ..." would name a fleet
	// the user never asked for.
	if inner := errors.Unwrap(err); inner != nil && strings.HasPrefix(err.Error(), "worker 0: ") {
		return inner
	}
	return err
}

// productionOptions builds the metrics registry and the ZMQ KV-event and
// FPM publishers for cfg. The returned close function must run after the
// worker has stopped.
func productionOptions(cfg *config.Config, stderr io.Writer) (serverOptions, func(), error) {
	opts, err := worker.Production(cfg, worker.Options{Stderr: stderr, Version: version})
	if err != nil {
		return opts, nil, err
	}
	release := opts.Release
	opts.Release = nil
	return opts, release, nil
}

// serve runs one worker until ctx ends, then stops it gracefully.
func serve(ctx context.Context, cfg *config.Config, opts serverOptions) error {
	if opts.Version == "" {
		opts.Version = version
	}
	if opts.Profile == nil && opts.TextModel == nil {
		opts.Loaders = loaders(opts.Stderr)
	}
	return worker.Serve(ctx, cfg, opts)
}

// adminFlags are the admin API settings of serve and fleet.
type adminFlags struct {
	host string
	port int // -1 = no admin API; 0 = a port the OS picks
	key  string
	// allowInsecure: --admin-allow-insecure (fleet.Options.AdminAllowInsecure).
	allowInsecure bool
	staggerDelay  time.Duration
}

func (a adminFlags) addr() string {
	if a.port < 0 {
		return ""
	}
	return net.JoinHostPort(a.host, strconv.Itoa(a.port))
}

func (a adminFlags) fleetOptions(stderr io.Writer) fleet.Options {
	return fleet.Options{Stderr: stderr, Version: version, AdminAddr: a.addr(), AdminKey: a.key, AdminAllowInsecure: a.allowInsecure,
		StaggerDelay: a.staggerDelay, Loaders: loaders(stderr)}
}
