package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// specOffloadRank holds one rank's speculative decoding and offload-tier
// children (docs/speculative-and-offload.md). Each half is nil when its
// feature is off, so a configuration without them exports nothing new.
type specOffloadRank struct {
	// vLLM's SpecDecodingProm counters.
	drafts, draftTokens, accepted prometheus.Counter
	acceptedPerPos                []prometheus.Counter

	// vLLM's connector prefix-cache counters and the mock's per-medium
	// tier gauges and hit counters ("GPU", then each offload tier).
	extQueries, extHits prometheus.Counter
	tierBlocks          *prometheus.GaugeVec
	tierHits            []prometheus.Counter // GPU first, then the offload tiers
	engineLabel         string

	// The latest FPM snapshot's speculative figures (mocker_fpm_spec_*).
	fpmDrafts, fpmDraftTokens, fpmAccepted prometheus.Gauge

	// vLLM's OffloadPromMetrics, by transfer type ("GPU_to_CPU", …).
	model               string
	xferBytes, xferTime *prometheus.CounterVec
	xferSize            *prometheus.HistogramVec
	xfer                map[string]transferChildren
}

type transferChildren struct {
	bytes, time prometheus.Counter
	size        prometheus.Observer
}

// BucketsOffloadSize are vLLM's vllm:kv_offload_size buckets, in bytes.
var BucketsOffloadSize = []float64{1e6, 5e6, 10e6, 20e6, 40e6, 60e6, 80e6, 100e6, 150e6, 200e6}

// buildSpecOffload registers the speculative decoding families when
// speculative_config is set, and the offload families when a CPU tier is
// configured, under the vLLM family's labels.
func (r *Registry) buildSpecOffload() {
	spec := r.opts.SpeculativeTokens > 0
	offload := len(r.opts.OffloadTiers) > 0
	if !spec && !offload {
		return
	}
	model := r.opts.Model
	l := []string{labelModel, labelEngine}
	var drafts, draftTokens, accepted, perPos *prometheus.CounterVec
	var fpmSpec [3]*prometheus.GaugeVec
	if spec {
		fpmSpec[0] = r.gaugeVec("mocker_fpm_spec_num_drafts", "Latest FPM snapshot: sequences that verified drafts.", labelRank)
		fpmSpec[1] = r.gaugeVec("mocker_fpm_spec_num_draft_tokens", "Latest FPM snapshot: draft tokens proposed.", labelRank)
		fpmSpec[2] = r.gaugeVec("mocker_fpm_spec_num_accepted_tokens", "Latest FPM snapshot: draft tokens accepted.", labelRank)
		// Names, help texts and labels as vLLM's SpecDecodingProm
		// (vllm/v1/spec_decode/metrics.py); prometheus_client appends
		// _total to each counter's exposed name.
		drafts = r.counterVec("vllm:spec_decode_num_drafts_total", "Number of spec decoding drafts.", l...)
		draftTokens = r.counterVec("vllm:spec_decode_num_draft_tokens_total", "Number of draft tokens.", l...)
		accepted = r.counterVec("vllm:spec_decode_num_accepted_tokens_total", "Number of accepted tokens.", l...)
		perPos = r.counterVec("vllm:spec_decode_num_accepted_tokens_per_pos_total", "Accepted tokens per draft position.",
			labelModel, labelEngine, "position")
	}
	var extQ, extH, tierHits, xferBytes, xferTime *prometheus.CounterVec
	var tierBlocks *prometheus.GaugeVec
	var xferSize *prometheus.HistogramVec
	if offload {
		// vLLM's OffloadPromMetrics (offloading connector), with its
		// transfer_type label: source and destination medium.
		lt := []string{labelModel, labelEngine, "transfer_type"}
		xferBytes = r.counterVec("vllm:kv_offload_total_bytes_total", "Number of bytes offloaded by KV connector", lt...)
		xferTime = r.counterVec("vllm:kv_offload_total_time_total", "Total time measured by all KV offloading operations", lt...)
		xferSize = r.histVec("vllm:kv_offload_size", "Histogram of KV offload transfer size, in bytes.", BucketsOffloadSize, lt...)
		extQ = r.counterVec("vllm:external_prefix_cache_queries_total",
			"External prefix cache queries from KV connector cross-instance cache sharing, in terms of number of queried tokens.", l...)
		extH = r.counterVec("vllm:external_prefix_cache_hits_total",
			"External prefix cache hits from KV connector cross-instance cache sharing, in terms of number of cached tokens.", l...)
		tierBlocks = r.gaugeVec("mocker_kv_tier_blocks", "Cached KV blocks held per medium (GPU pool and offload tiers).",
			labelEngine, "medium")
		tierHits = r.counterVec("mocker_kv_tier_hits_total", "Prefix-cache hits in blocks per medium (GPU pool and offload tiers).",
			labelEngine, "medium")
	}
	for _, ro := range r.ranks {
		e := strconv.Itoa(ro.rank)
		so := &specOffloadRank{engineLabel: e}
		if spec {
			so.drafts = drafts.WithLabelValues(model, e)
			so.draftTokens = draftTokens.WithLabelValues(model, e)
			so.accepted = accepted.WithLabelValues(model, e)
			so.fpmDrafts = fpmSpec[0].WithLabelValues(e)
			so.fpmDraftTokens = fpmSpec[1].WithLabelValues(e)
			so.fpmAccepted = fpmSpec[2].WithLabelValues(e)
			for pos := range r.opts.SpeculativeTokens {
				so.acceptedPerPos = append(so.acceptedPerPos, perPos.WithLabelValues(model, e, strconv.Itoa(pos)))
			}
		}
		if offload {
			so.model, so.xferBytes, so.xferTime, so.xferSize = model, xferBytes, xferTime, xferSize
			so.xfer = map[string]transferChildren{}
			so.extQueries = extQ.WithLabelValues(model, e)
			so.extHits = extH.WithLabelValues(model, e)
			so.tierBlocks = tierBlocks
			so.tierHits = append(so.tierHits, tierHits.WithLabelValues(e, "GPU"))
			for _, medium := range r.opts.OffloadTiers {
				tierBlocks.WithLabelValues(e, string(medium)).Set(0)
				so.tierHits = append(so.tierHits, tierHits.WithLabelValues(e, string(medium)))
			}
			tierBlocks.WithLabelValues(e, "GPU").Set(0)
		}
		ro.so = so
	}
}

// observePass adds a pass's speculative decoding and tier figures.
func (so *specOffloadRank) observePass(r *engine.PassReport, blockSize int) {
	if so.drafts != nil && r.Spec.Drafts > 0 {
		so.drafts.Add(float64(r.Spec.Drafts))
		so.draftTokens.Add(float64(r.Spec.DraftTokens))
		so.accepted.Add(float64(r.Spec.AcceptedTokens))
		for pos, n := range r.Spec.AcceptedPerPos {
			if n > 0 && pos < len(so.acceptedPerPos) {
				so.acceptedPerPos[pos].Add(float64(n))
			}
		}
	}
	if so.extQueries == nil {
		return
	}
	if r.ExternalPrefixQueries > 0 {
		so.extQueries.Add(float64(r.ExternalPrefixQueries))
	}
	if r.ExternalPrefixHits > 0 {
		so.extHits.Add(float64(r.ExternalPrefixHits))
	}
	if r.PrefixHits > 0 && blockSize > 0 {
		so.tierHits[0].Add(float64(r.PrefixHits / blockSize))
	}
	for i, n := range r.TierHits {
		if n > 0 && i+1 < len(so.tierHits) {
			so.tierHits[i+1].Add(float64(n))
		}
	}
	for _, x := range r.Transfers {
		c, ok := so.xfer[x.Type]
		if !ok {
			lv := []string{so.model, so.engineLabel, x.Type}
			c = transferChildren{bytes: so.xferBytes.WithLabelValues(lv...), time: so.xferTime.WithLabelValues(lv...),
				size: so.xferSize.WithLabelValues(lv...)}
			so.xfer[x.Type] = c
		}
		c.bytes.Add(float64(x.Bytes))
		c.time.Add(x.Seconds)
		c.size.Observe(float64(x.Bytes))
	}
}

// observeGauges sets the per-medium block gauges.
func (so *specOffloadRank) observeGauges(g engine.Gauges) {
	if so.tierBlocks == nil {
		return
	}
	for _, t := range g.Tiers {
		so.tierBlocks.WithLabelValues(so.engineLabel, t.Medium).Set(float64(t.Blocks))
	}
}

// PublishFPMSpec implements engine.FPMSpecSink: the snapshot's gauges,
// then its speculative figures (mocker_fpm_spec_*).
func (o *rankObserver) PublishFPMSpec(s engine.ForwardPassSnapshot, spec engine.FPMSpecDecode) {
	o.PublishFPM(s)
	if so := o.so; so != nil && so.fpmDrafts != nil {
		so.fpmDrafts.Set(float64(spec.NumDrafts))
		so.fpmDraftTokens.Set(float64(spec.NumDraftTokens))
		so.fpmAccepted.Set(float64(spec.NumAccepted))
	}
}
