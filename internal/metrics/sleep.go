package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// vllm:engine_sleep_state is vLLM's sleep-mode gauge (PrometheusStatLogger
// in vllm/v1/metrics/loggers.py): per engine, one series per sleep_state,
// awake = 1 while awake, weights_offloaded = 1 after a level-1 sleep,
// discard_all = 1 after a level-2 sleep. The mock exports it only with
// --enable-sleep-mode, so the exposition of a worker without sleep mode is
// unchanged.

// sleepStates are the sleep_state label values in vLLM's order.
var sleepStates = [...]string{"awake", "weights_offloaded", "discard_all"}

// sleepRank holds one rank's engine_sleep_state children.
type sleepRank struct {
	state [len(sleepStates)]prometheus.Gauge
}

// buildSleep registers vllm:engine_sleep_state when sleep mode is on.
func (r *Registry) buildSleep() {
	if !r.opts.SleepMode {
		return
	}
	vec := r.gaugeVec("vllm:engine_sleep_state",
		"Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake; "+
			"weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2.",
		labelModel, labelEngine, "sleep_state")
	for _, ro := range r.ranks {
		sr := &sleepRank{}
		for i, s := range sleepStates {
			sr.state[i] = vec.WithLabelValues(r.opts.Model, strconv.Itoa(ro.rank), s)
		}
		sr.observe(engine.SleepStatus{})
		ro.sleep = sr
	}
}

// observe sets the rank's series from its sleep state. A level-0 sleep
// (scheduling paused, memory kept) shows awake = 0 and neither level, as
// vLLM's record_sleep_state does.
func (s *sleepRank) observe(st engine.SleepStatus) {
	awake, l1, l2 := 1.0, 0.0, 0.0
	if st.Sleeping {
		awake = 0
		switch {
		case st.Level == 1 && st.Weights:
			l1 = 1
		case st.Level >= 2 && st.Weights:
			l2 = 1
		}
	}
	s.state[0].Set(awake)
	s.state[1].Set(l1)
	s.state[2].Set(l2)
}
