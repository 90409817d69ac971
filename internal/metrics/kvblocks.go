package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// kvBlockGauges are one rank's mocker_kv_cache_blocks children: the pool's
// blocks split into in use, cached (free but still hitting) and free. The
// live UI's KV grid shows the same three counts (docs/ui.md).
type kvBlockGauges struct {
	inUse, cached, free prometheus.Gauge
	numBlocks           int
}

func (r *Registry) kvBlocksVec() *prometheus.GaugeVec {
	return r.gaugeVec("mocker_kv_cache_blocks",
		"KV blocks of the rank's pool by state: in_use (referenced), cached (unreferenced but holding a prefix-cache hash, evicted when reused), free (neither).",
		labelRank, "state")
}

func newKVBlockGauges(vec *prometheus.GaugeVec, rank string, numBlocks int) kvBlockGauges {
	g := kvBlockGauges{inUse: vec.WithLabelValues(rank, "in_use"), cached: vec.WithLabelValues(rank, "cached"),
		free: vec.WithLabelValues(rank, "free"), numBlocks: numBlocks}
	g.free.Set(float64(numBlocks)) // a fresh pool
	return g
}

func (k kvBlockGauges) observe(g engine.Gauges) {
	if k.inUse == nil {
		return
	}
	k.inUse.Set(float64(g.ActiveBlocks))
	k.cached.Set(float64(g.CachedBlocks))
	k.free.Set(float64(k.numBlocks - g.ActiveBlocks - g.CachedBlocks))
}
