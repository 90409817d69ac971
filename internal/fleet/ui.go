package fleet

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/mocker-server/mocker-server/internal/ui"
)

// uiHandler is the fleet page and every worker's engine page on the admin
// port (docs/ui.md).
func (f *Fleet) uiHandler(keys []string) http.Handler {
	workers := make([]ui.FleetWorker, len(f.members))
	for i, m := range f.members {
		workers[i] = ui.FleetWorker{ID: m.ID, Hub: f.hubs[i], Status: func() ui.WorkerStatus {
			info := f.Info(i)
			st := ui.WorkerStatus{State: string(info.State), URL: info.URL, Draining: info.Draining,
				HealthFailing: info.Health == "failing"}
			if s := info.Slow; s != nil {
				st.Slow = s.describe()
			}
			if s := info.Sleep; s.Sleeping {
				st.Sleep = fmt.Sprintf("level %d", s.Level)
				if s.Waking {
					st.Sleep += ", waking"
				}
			}
			return st
		}}
	}
	return ui.FleetHandler(ui.NewFleet(workers), keys)
}

// describe says what a slowdown does, as a fleet tile shows it.
func (s *SlowInfo) describe() string {
	var parts []string
	if s.SpeedupRatio != nil {
		parts = append(parts, fmt.Sprintf("speedup ×%v", s.SpeedupRatio))
	}
	if s.ExtraPassDelayMs > 0 {
		parts = append(parts, fmt.Sprintf("+%g ms per pass", s.ExtraPassDelayMs))
	}
	return strings.Join(parts, ", ")
}
