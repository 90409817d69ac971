package worker

import (
	"log/slog"

	"github.com/mocker-server/mocker-server/internal/api"
	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/kvtransfer"
)

// startKVTransfer starts the instance's side channel of disaggregated
// serving (internal/kvtransfer) when the configuration serves disaggregated
// requests, and returns the HTTP layer's handles on it. The bootstrap
// listener binds here, so a taken --bootstrap-port fails the start.
func (in *instance) startKVTransfer(cfg *config.Config, log *slog.Logger, obs TransferObserver) (api.Deps, error) {
	if !cfg.Disaggregated() {
		return api.Deps{}, nil
	}
	opts := kvtransfer.Options{EngineID: cfg.KVEngineID(), AdvertiseHost: cfg.AdvertiseHost,
		BootstrapHost: cfg.Host, BootstrapPort: cfg.BootstrapPort, Logger: log.With("component", "kv_transfer"),
		AllowedHosts: cfg.KVTransferAllowedHosts}
	if len(cfg.APIKey) > 0 {
		// The fleet's workers share their keys: a decode worker calls a
		// prefill worker's guarded side channel with its own first key.
		opts.ClientAPIKey = cfg.APIKey[0]
	}
	var failures api.TransferFailureObserver
	if obs != nil {
		opts.Notifications, failures = obs, obs
	}
	svc, err := kvtransfer.New(in.engines, opts)
	if err != nil {
		return api.Deps{}, err
	}
	in.kvt = svc
	// The side channel's routes (/kv_transfer/pull, /kv_transfer/release)
	// are behind --api-key like the rest of the API port: without it
	// anyone could release a real handoff.
	side := svc.GuardedHandler(kvtransfer.BearerAuth(cfg.APIKey))
	return api.Deps{KVTransfer: svc, SideChannel: side, TransferFailures: failures}, nil
}

// closeKVTransfer stops the side channel, if any.
func (in *instance) closeKVTransfer() {
	if in.kvt != nil {
		in.kvt.Close()
		in.kvt = nil
	}
}
