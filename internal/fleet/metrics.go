package fleet

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mocker-server/mocker-server/internal/worker"
)

// adminMetrics is the admin port's /metrics: the actions applied and each
// worker's state.
type adminMetrics struct {
	reg     *prometheus.Registry
	actions *prometheus.CounterVec
}

func newAdminMetrics(f *Fleet) *adminMetrics {
	m := &adminMetrics{
		reg: prometheus.NewRegistry(),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mocker_admin_actions_total",
			Help: "Admin actions applied, by worker and action.",
		}, []string{"worker", "action"}),
	}
	m.reg.MustRegister(m.actions, &stateCollector{fleet: f})
	return m
}

func (m *adminMetrics) count(workerID string, a Action) {
	m.actions.WithLabelValues(workerID, string(a)).Inc()
}

func (m *adminMetrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// stateCollector exports mocker_worker_state{worker,state}: 1 for the
// worker's current state, 0 for the others, read at scrape time.
type stateCollector struct{ fleet *Fleet }

var stateDesc = prometheus.NewDesc("mocker_worker_state",
	"Worker state: 1 for the current state, 0 otherwise.", []string{"worker", "state"}, nil)

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) { ch <- stateDesc }

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	for i, m := range c.fleet.members {
		cur := worker.StateStarting
		if w := c.fleet.Worker(i); w != nil {
			cur = w.State()
		}
		for _, s := range worker.States {
			v := 0.0
			if s == cur {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(stateDesc, prometheus.GaugeValue, v, m.ID, string(s))
		}
	}
}
