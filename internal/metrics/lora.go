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

	// Adapter residency, per rank: one vllm:lora_adapter_loaded series per
	// loaded adapter (level gpu or cpu), removed when it is evicted, and
	// the number of adapters in GPU slots and in the CPU cache.
	loaded   *prometheus.GaugeVec
	numGPU   prometheus.Gauge
	numCPU   prometheus.Gauge
	engine   string
	resident map[string]string // adapter name -> level of its series
}

// buildLoRA registers the LoRA families when LoRA is enabled.
// vllm:lora_requests_info has vLLM's labels max_lora, waiting_lora_adapters
// and running_lora_adapters only: no model_name or engine (vLLM refuses LoRA
// with data parallelism). The residency families follow the names vLLM's
// maintainers proposed for loaded adapters (docs/lora.md).
func (r *Registry) buildLoRA() {
	if r.opts.MaxLoRAs <= 0 {
		return
	}
	vec := r.gaugeVec("vllm:lora_requests_info", "Running stats on lora requests.",
		"max_lora", "waiting_lora_adapters", "running_lora_adapters")
	loaded := r.gaugeVec("vllm:lora_adapter_loaded",
		"LoRA adapters loaded on the engine: 1 per adapter, level gpu (in a GPU slot) or cpu (CPU cache only).",
		labelEngine, "adapter_name", "level", "pinned")
	numGPU := r.gaugeVec("vllm:num_gpu_loaded_lora_adapters", "Number of LoRA adapters loaded in GPU slots.", labelEngine)
	numCPU := r.gaugeVec("vllm:num_cpu_loaded_lora_adapters", "Number of LoRA adapters loaded in the CPU cache.", labelEngine)
	for _, ro := range r.ranks {
		e := strconv.Itoa(ro.rank)
		ro.lora = &loraInfo{vec: vec, maxLoRA: strconv.Itoa(r.opts.MaxLoRAs), now: time.Now,
			loaded: loaded, numGPU: numGPU.WithLabelValues(e), numCPU: numCPU.WithLabelValues(e),
			engine: e, resident: map[string]string{}}
	}
}

// observe sets the series of the current adapter lists to now and updates
// the residency series.
func (l *loraInfo) observe(g engine.Gauges) {
	waiting := strings.Join(g.WaitingAdapters, ",")
	running := strings.Join(g.RunningAdapters, ",")
	now := l.now()
	l.vec.WithLabelValues(l.maxLoRA, waiting, running).Set(float64(now.UnixNano()) / 1e9)

	l.numGPU.Set(float64(len(g.GPUAdapters)))
	l.numCPU.Set(float64(len(g.CPUAdapters)))
	level := make(map[string]string, len(g.CPUAdapters))
	for _, a := range g.CPUAdapters {
		level[a.Name] = "cpu"
	}
	for _, a := range g.GPUAdapters {
		level[a.Name] = "gpu"
	}
	for name, old := range l.resident {
		if level[name] != old {
			l.loaded.DeleteLabelValues(l.engine, name, old, "false")
			delete(l.resident, name)
		}
	}
	for name, lv := range level {
		if _, ok := l.resident[name]; !ok {
			l.loaded.WithLabelValues(l.engine, name, lv, "false").Set(1)
			l.resident[name] = lv
		}
	}
}
