package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// Disaggregated prefill/decode metrics (docs/disaggregation.md): the mock's
// own mocker_kv_* families and the NixlConnector's vllm:nixl_* families with
// vLLM's names, types and buckets. They exist only on a worker that serves
// disaggregated requests.

var (
	// BucketsNIXLXferTime are vllm:nixl_xfer_time_seconds's buckets (also
	// mocker_kv_transfer_seconds's).
	BucketsNIXLXferTime = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 5.0}
	// BucketsNIXLPostTime are vllm:nixl_post_time_seconds's buckets.
	BucketsNIXLPostTime = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 5.0}
	// BucketsNIXLBytes are vllm:nixl_bytes_transferred's: 2 KiB to 8 GiB
	// in powers of four.
	BucketsNIXLBytes = powersOfTwo(11, 33, 2)
	// BucketsNIXLDescriptors are vllm:nixl_num_descriptors's buckets.
	BucketsNIXLDescriptors = []float64{10, 20, 30, 50, 75, 100, 200, 400, 1000, 2000, 4000, 10000, 20000, 50000}
)

func powersOfTwo(from, to, step int) []float64 {
	var out []float64
	for e := from; e <= to; e += step {
		out = append(out, float64(uint64(1)<<e))
	}
	return out
}

// pdRank holds one rank's disaggregation children.
type pdRank struct {
	held                             prometheus.Gauge
	transferSeconds                  prometheus.Observer
	transferBytes                    prometheus.Counter
	nixlXfer, nixlPost, nixlBytes    prometheus.Observer // nil without the vLLM family
	nixlDescriptors                  prometheus.Observer
	nixlFailedXfers, nixlFailedNotif prometheus.Counter
}

// buildDisagg registers the disaggregation families when the worker serves
// disaggregated requests.
func (r *Registry) buildDisagg() {
	if !r.opts.Disaggregated {
		return
	}
	held := r.gaugeVec("mocker_kv_held_blocks",
		"KV blocks finished prefills hold for their decode side (not evictable until pulled or timed out).", labelRank)
	secs := r.histVec("mocker_kv_transfer_seconds",
		"Modeled duration of KV transfers into this worker, link sharing included, in seconds.", BucketsNIXLXferTime, labelRank)
	bytes := r.counterVec("mocker_kv_transfer_bytes_total", "KV bytes transferred into this worker.", labelRank)
	var xfer, post, nbytes, descs *prometheus.HistogramVec
	var failed, notif *prometheus.CounterVec
	if r.vllm {
		l := []string{labelModel, labelEngine}
		xfer = r.histVec("vllm:nixl_xfer_time_seconds", "Histogram of transfer duration for NIXL KV Cache transfers.", BucketsNIXLXferTime, l...)
		post = r.histVec("vllm:nixl_post_time_seconds", "Histogram of transfer post time for NIXL KV Cache transfers.", BucketsNIXLPostTime, l...)
		nbytes = r.histVec("vllm:nixl_bytes_transferred", "Histogram of bytes transferred per NIXL KV Cache transfers.", BucketsNIXLBytes, l...)
		descs = r.histVec("vllm:nixl_num_descriptors", "Histogram of number of descriptors per NIXL  KV Cache transfers.", BucketsNIXLDescriptors, l...)
		failed = r.counterVec("vllm:nixl_num_failed_transfers_total", "Number of failed NIXL KV Cache transfers.", l...)
		notif = r.counterVec("vllm:nixl_num_failed_notifications_total", "Number of failed NIXL KV Cache notifications.", l...)
	}
	model := r.opts.Model
	for _, ro := range r.ranks {
		rk := strconv.Itoa(ro.rank)
		pd := &pdRank{held: held.WithLabelValues(rk), transferSeconds: secs.WithLabelValues(rk),
			transferBytes: bytes.WithLabelValues(rk)}
		if r.vllm {
			pd.nixlXfer = xfer.WithLabelValues(model, rk)
			pd.nixlPost = post.WithLabelValues(model, rk)
			pd.nixlBytes = nbytes.WithLabelValues(model, rk)
			pd.nixlDescriptors = descs.WithLabelValues(model, rk)
			pd.nixlFailedXfers = failed.WithLabelValues(model, rk)
			pd.nixlFailedNotif = notif.WithLabelValues(model, rk)
		}
		ro.pd = pd
	}
}

// observe records a pass's completed transfers. vLLM's NIXL transfers
// have one descriptor per block and layer; the mock counts blocks, and
// posting a transfer takes no modeled time.
func (p *pdRank) observe(r *engine.PassReport) {
	for _, t := range r.Handoffs {
		secs := t.Duration.Seconds()
		p.transferSeconds.Observe(secs)
		p.transferBytes.Add(float64(t.Bytes))
		if p.nixlXfer != nil {
			p.nixlXfer.Observe(secs)
			p.nixlPost.Observe(0)
			p.nixlBytes.Observe(float64(t.Bytes))
			p.nixlDescriptors.Observe(float64(t.Blocks))
		}
	}
}

// ObserveFailedTransfer counts a decode request whose KV could not be
// pulled (vllm:nixl_num_failed_transfers). Safe for concurrent use.
func (r *Registry) ObserveFailedTransfer(rank int) {
	if pd := r.rank(rank).pd; pd != nil && pd.nixlFailedXfers != nil {
		pd.nixlFailedXfers.Inc()
	}
}

// ObserveFailedNotification counts a release notification the prefill
// worker did not accept (vllm:nixl_num_failed_notifications). Safe for
// concurrent use.
func (r *Registry) ObserveFailedNotification(rank int) {
	if pd := r.rank(rank).pd; pd != nil && pd.nixlFailedNotif != nil {
		pd.nixlFailedNotif.Inc()
	}
}
