package fleet

import (
	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/events"
	"github.com/mocker-server/mocker-server/internal/worker"
)

// eventEndpoints lists a worker's KV-event, replay and FPM endpoints per
// DP rank, as its publishers resolve them.
func eventEndpoints(cfg *config.Config) (kv, replay, fpm []string) {
	kv, replay, fpm = []string{}, []string{}, []string{}
	o, err := worker.EventsOptions(cfg)
	if err != nil {
		return kv, replay, fpm
	}
	for r := range max(o.DPSize, 1) {
		if s, ok, err := events.KVSettingsFor(o, r, nil); err == nil && ok {
			kv = append(kv, s.Endpoint)
			if s.ReplayEndpoint != "" {
				replay = append(replay, s.ReplayEndpoint)
			}
		}
		if s, ok, err := events.FPMSettingsFor(o, r); err == nil && ok {
			fpm = append(fpm, s.Endpoint)
		}
	}
	return kv, replay, fpm
}
