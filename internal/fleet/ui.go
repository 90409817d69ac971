package fleet

import (
	"net/http"

	"github.com/mocker-server/mocker-server/internal/ui"
	"github.com/mocker-server/mocker-server/internal/worker"
)

// uiHandler is the fleet page and every worker's engine page on the admin
// port (docs/ui.md).
func (f *Fleet) uiHandler(keys []string) http.Handler {
	workers := make([]ui.FleetWorker, len(f.members))
	for i, m := range f.members {
		workers[i] = ui.FleetWorker{ID: m.ID, Hub: f.hubs[i], State: func() string {
			if w := f.Worker(i); w != nil {
				st := w.State()
				if st == worker.StateRunning && w.SleepStatus().Sleeping {
					// Sleep mode: a running worker that serves nothing
					// until woken (docs/sleep-mode.md).
					return "sleeping"
				}
				return string(st)
			}
			return "starting"
		}}
	}
	return ui.FleetHandler(ui.NewFleet(workers), keys)
}
