package hardware

// Engine overheads the kernel tables do not contain.
//
// vLLM: aiconfigurator charges each request's prefill a CPU-side dispatch
// cost of 0.8 ms per layer (aic-core/src/aiconfigurator_core/sdk/backends/
// vllm_backend.py, _prefill_dispatch_overhead_ms: "CPU-side dispatch
// overhead scales with layer count and is not captured in silicon
// benchmarks"). The mock charges it once per pass that computes prompt
// tokens. aiconfigurator has no such constant for SGLang or TensorRT-LLM
// (their backends inherit 0), so neither does the mock; their differences
// come from their own kernel tables.
//
// Every engine also pays the element-wise kernels between the GEMMs
// (model.go: ewBytesPerToken) and three per-step kernels, each at least
// aiconfigurator's 3 µs memory latency floor.
const vllmPrefillDispatchMsPerLayer = 0.8

// overheads sets the engine type's per-pass costs.
func (m *Model) overheads(engineType string) {
	switch engineType {
	case "", "vllm":
		m.prefillPassMs = vllmPrefillDispatchMsPerLayer * float64(m.shape.Layers)
	}
}
