package metrics

import "github.com/mocker-server/mocker-server/internal/faults"

// buildFaults registers mocker_injected_faults_total{type} with a child
// (at 0) for every fault kind and provider-style limit.
func (r *Registry) buildFaults() {
	r.faults = r.counterVec("mocker_injected_faults_total",
		"Faults injected (fault kinds) and requests refused by the provider-style limits (limit_*), by type.", "type")
	for _, t := range faults.CounterTypes() {
		r.faults.WithLabelValues(t)
	}
}

// ObserveInjectedFault counts one injected fault or limit rejection
// (api.FaultObserver).
func (r *Registry) ObserveInjectedFault(kind string) {
	r.faults.WithLabelValues(kind).Inc()
}
