package metrics

import (
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// loraInfo backs vllm:lora_requests_info, vLLM's adapter gauge: one series
// per combination of running and waiting adapters, each set to the Unix
// time it was last reported. Series of earlier combinations stay with their
// older timestamps, as with vLLM's prometheus_client gauge, so readers (the
// Gateway API Inference Extension's endpoint picker) take the series with
// the largest value as the current state.
type loraInfo struct {
	vec     *prometheus.GaugeVec
	maxLoRA string
	now     func() time.Time
}

// buildLoRA registers vllm:lora_requests_info when LoRA is enabled. vLLM
// labels it with max_lora, waiting_lora_adapters and running_lora_adapters
// only: no model_name or engine (it refuses LoRA with data parallelism).
func (r *Registry) buildLoRA() {
	if !r.cfg.EnableLoRA {
		return
	}
	info := &loraInfo{
		vec: r.gaugeVec("vllm:lora_requests_info", "Running stats on lora requests.",
			"max_lora", "waiting_lora_adapters", "running_lora_adapters"),
		maxLoRA: strconv.Itoa(r.cfg.MaxLoRAs),
		now:     time.Now,
	}
	for _, ro := range r.ranks {
		ro.lora = info
	}
}

// observe sets the series of the current adapter lists to now.
func (l *loraInfo) observe(g engine.Gauges) {
	waiting := strings.Join(g.WaitingAdapters, ",")
	running := strings.Join(g.RunningAdapters, ",")
	now := l.now()
	l.vec.WithLabelValues(l.maxLoRA, waiting, running).Set(float64(now.UnixNano()) / 1e9)
}
