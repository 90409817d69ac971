package metrics

import "github.com/prometheus/client_golang/prometheus"

// multimodal holds the multimodal families: vLLM's processor-cache
// counters (vllm:mm_cache_queries and vllm:mm_cache_hits, in items, as
// vllm/v1/metrics/loggers.py names them; prometheus_client appends _total)
// and the mock's count of http(s) items it sized without fetching.
type multimodal struct {
	queries, hits prometheus.Counter // nil without the vLLM family
	unfetched     *prometheus.CounterVec
}

// buildMultimodal registers the multimodal families. The processor cache
// is the API server's, shared by the ranks: its counters carry engine="0",
// where vLLM's front end reports them.
func (r *Registry) buildMultimodal() {
	if r.vllm {
		l := []string{labelModel, labelEngine}
		r.mm.queries = r.counterVec("vllm:mm_cache_queries_total",
			"Multi-modal cache queries, in terms of number of queried items.", l...).WithLabelValues(r.opts.Model, "0")
		r.mm.hits = r.counterVec("vllm:mm_cache_hits_total",
			"Multi-modal cache hits, in terms of number of cached items.", l...).WithLabelValues(r.opts.Model, "0")
	}
	r.mm.unfetched = r.counterVec("mocker_mm_unfetched_items_total",
		"Multimodal http(s) items sized from --mm-unfetched-media because the mock fetches nothing, by modality.", "modality")
	for _, m := range []string{"image", "audio", "video"} {
		r.mm.unfetched.WithLabelValues(m)
	}
}

// ObserveMMCache counts processor-cache queries and hits (api.MMObserver).
func (r *Registry) ObserveMMCache(queries, hits int) {
	if r.mm.queries == nil {
		return
	}
	r.mm.queries.Add(float64(queries))
	r.mm.hits.Add(float64(hits))
}

// ObserveUnfetchedMedia counts an http(s) item the mock did not fetch
// (api.MMObserver).
func (r *Registry) ObserveUnfetchedMedia(modality string) {
	r.mm.unfetched.WithLabelValues(modality).Inc()
}
