package metrics

import (
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mocker-server/mocker-server/internal/pyrepr"
)

// vllmRank holds one rank's pre-resolved vllm:* children. The deprecated
// ones are nil when deprecated metrics are disabled.
type vllmRank struct {
	running, waiting, waitCapacity, waitDeferred prometheus.Gauge
	kvUsage, gpuCacheUsage                       prometheus.Gauge

	preemptions, promptTokens, promptCached, genTokens prometheus.Counter
	pcQueries, pcHits, gpuPCQueries, gpuPCHits         prometheus.Counter
	success                                            [len(finishReasons)]prometheus.Counter

	ttft, tpotReq, e2e, queue, prefill, decode, inference prometheus.Observer
	iter, reqPrompt, reqGen, reqKVComputed, reqPreempt    prometheus.Observer
	paramsN, paramsMaxTokens, maxGen                      prometheus.Observer

	// itl backs vllm:inter_token_latency_seconds and, when enabled, the
	// deprecated vllm:time_per_output_token_seconds (same observations).
	itl *batchHist
}

// sglangRank holds one rank's sglang:* scheduler children and the shared
// (model_name only) request children.
type sglangRank struct {
	running, queue, usedTokens, tokenUsage, maxTotal prometheus.Gauge
	hitRate, genThroughput, retracted                prometheus.Gauge
	queueTime                                        prometheus.Observer

	*sglangRequests
}

// sglangRequests are the request metrics summed over ranks: SGLang counts
// them in its tokenizer manager, which sees every rank.
type sglangRequests struct {
	prompt, gen, cached, requests, aborted prometheus.Counter
	ttft, e2e                              prometheus.Observer
	itl                                    *batchHist
}

// FPM gauge fields in ForwardPassSnapshot order.
const (
	fpmNumPrefillRequests = iota
	fpmSumPrefillTokens
	fpmVarPrefillLength
	fpmSumPrefillKVTokens
	fpmNumDecodeRequests
	fpmSumDecodeKVTokens
	fpmVarDecodeKVTokens
	fpmNumQueuedPrefill
	fpmSumQueuedPrefillTokens
	fpmVarQueuedPrefillLength
	fpmNumQueuedDecode
	fpmSumQueuedDecodeKVTokens
	fpmVarQueuedDecodeKVTokens
	fpmWallTimeSecs
	fpmCounterID
	numFPMFields
)

// fpmGauges names and describes the mocker_fpm_* gauges, by field index.
var fpmGauges = [numFPMFields]struct{ name, help string }{
	{"mocker_fpm_num_prefill_requests", "Requests in the latest pass's prefill batch (forward-pass metrics)."},
	{"mocker_fpm_sum_prefill_tokens", "Prompt tokens computed by the latest pass's prefill batch, cached tokens excluded."},
	{"mocker_fpm_var_prefill_length", "Population variance of the prompt lengths of the latest pass's prefill batch (tokens^2)."},
	{"mocker_fpm_sum_prefill_kv_tokens", "KV tokens read but not computed by the latest pass's prefill batch (prefix hits and earlier chunks)."},
	{"mocker_fpm_num_decode_requests", "Requests scheduled in the latest pass with no prompt work."},
	{"mocker_fpm_sum_decode_kv_tokens", "Sum of the context lengths of the latest pass's decode requests."},
	{"mocker_fpm_var_decode_kv_tokens", "Population variance of the context lengths of the latest pass's decode requests (tokens^2)."},
	{"mocker_fpm_num_queued_prefill", "Never-scheduled waiting requests after the latest pass's scheduling."},
	{"mocker_fpm_sum_queued_prefill_tokens", "Sum of the prompt lengths of the never-scheduled waiting requests."},
	{"mocker_fpm_var_queued_prefill_length", "Population variance of the prompt lengths of the never-scheduled waiting requests (tokens^2)."},
	{"mocker_fpm_num_queued_decode", "Waiting requests that were preempted or retracted, or wait for remote KV."},
	{"mocker_fpm_sum_queued_decode_kv_tokens", "Sum of the context lengths of the preempted, retracted or remote-KV waiting requests."},
	{"mocker_fpm_var_queued_decode_kv_tokens", "Population variance of the context lengths of the preempted, retracted or remote-KV waiting requests (tokens^2)."},
	{"mocker_fpm_wall_time_secs", "Modeled duration of the latest pass after speedup, in seconds (0 for a heartbeat)."},
	{"mocker_fpm_counter_id", "Per-rank forward-pass-metrics message counter of the latest snapshot."},
}

func (r *Registry) gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	r.MustRegister(v)
	return v
}

func (r *Registry) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	r.MustRegister(v)
	return v
}

func (r *Registry) histVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	r.MustRegister(v)
	return v
}

func (r *Registry) batchHistVec(name, help string, labels ...string) *batchHistVec {
	v := &batchHistVec{desc: prometheus.NewDesc(name, help, labels, nil)}
	r.MustRegister(v)
	return v
}

// buildVLLM registers the vllm:* family (docs/metrics.md) with one set of
// children per rank.
func (r *Registry) buildVLLM() {
	cfg := &r.opts
	model := cfg.Model
	l := []string{labelModel, labelEngine}
	b125 := Buckets125(cfg.MaxModelLen)

	running := r.gaugeVec("vllm:num_requests_running", "Number of requests in model execution batches.", l...)
	waiting := r.gaugeVec("vllm:num_requests_waiting", "Number of requests waiting to be processed.", l...)
	byReason := r.gaugeVec("vllm:num_requests_waiting_by_reason",
		"Number of waiting requests by reason. Reason labels: 'capacity' = waiting for scheduling capacity; "+
			"'deferred' = deferred by transient constraints (LoRA budget, KV transfer, blocked status). "+
			"Sum of all reasons equals vllm:num_requests_waiting.",
		labelModel, labelEngine, "reason")
	kvUsage := r.gaugeVec("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", l...)

	bs := cfg.BlockSize
	override := "None"
	if cfg.NumGPUBlocksOverridden {
		override = strconv.Itoa(cfg.NumGPUBlocks)
	}
	kvTokens := cfg.NumGPUBlocks * bs
	concurrency := 0.0
	if cfg.MaxModelLen > 0 {
		concurrency = float64(kvTokens) / float64(cfg.MaxModelLen)
	}
	cacheInfo := r.gaugeVec("vllm:cache_config_info", "Information of the LLMEngine CacheConfig",
		labelEngine, "block_size", "cache_dtype", "enable_prefix_caching", "gpu_memory_utilization",
		"num_gpu_blocks", "num_gpu_blocks_override", "prefix_caching_hash_algo",
		"kv_cache_size_tokens", "kv_cache_max_concurrency")

	preemptions := r.counterVec("vllm:num_preemptions_total", "Cumulative number of preemption from the engine.", l...)
	promptTokens := r.counterVec("vllm:prompt_tokens_total", "Number of prefill tokens processed.", l...)
	promptCached := r.counterVec("vllm:prompt_tokens_cached_total", "Number of cached prompt tokens (local + external).", l...)
	genTokens := r.counterVec("vllm:generation_tokens_total", "Number of generation tokens processed.", l...)
	pcQueries := r.counterVec("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.", l...)
	pcHits := r.counterVec("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.", l...)
	success := r.counterVec("vllm:request_success_total", "Count of successfully processed requests.",
		labelModel, labelEngine, "finished_reason")

	ttft := r.histVec("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", BucketsTTFT, l...)
	itl := r.batchHistVec("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", l...)
	tpotReq := r.histVec("vllm:request_time_per_output_token_seconds",
		"Histogram of time_per_output_token_seconds per request.", BucketsITL, l...)
	e2e := r.histVec("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", BucketsLatency, l...)
	queue := r.histVec("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", BucketsLatency, l...)
	prefill := r.histVec("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", BucketsLatency, l...)
	decode := r.histVec("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", BucketsLatency, l...)
	inference := r.histVec("vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.", BucketsLatency, l...)

	iter := r.histVec("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.", BucketsIter, l...)
	reqPrompt := r.histVec("vllm:request_prompt_tokens", "Number of prefill tokens processed.", b125, l...)
	reqGen := r.histVec("vllm:request_generation_tokens", "Number of generation tokens processed.", b125, l...)
	reqKV := r.histVec("vllm:request_prefill_kv_computed_tokens",
		"Histogram of new KV tokens computed during prefill (excluding cached tokens).", b125, l...)
	reqPreempt := r.histVec("vllm:request_num_preemptions",
		"Histogram of the number of preemptions per finished request.", BucketsPreemptions, l...)
	paramsN := r.histVec("vllm:request_params_n", "Histogram of the n request parameter.", BucketsParamsN, l...)
	paramsMax := r.histVec("vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter.", b125, l...)
	maxGen := r.histVec("vllm:request_max_num_generation_tokens",
		"Histogram of maximum number of requested generation tokens.", b125, l...)

	var gpuKV *prometheus.GaugeVec
	var gpuQ, gpuH *prometheus.CounterVec
	var tpot *batchHistVec
	if r.deprecated {
		gpuKV = r.gaugeVec("vllm:gpu_cache_usage_perc",
			"GPU KV-cache usage. 1 means 100 percent usage. DEPRECATED: Use vllm:kv_cache_usage_perc instead.", l...)
		gpuQ = r.counterVec("vllm:gpu_prefix_cache_queries_total",
			"GPU prefix cache queries, in terms of number of queried tokens. DEPRECATED: Use vllm:prefix_cache_queries instead.", l...)
		gpuH = r.counterVec("vllm:gpu_prefix_cache_hits_total",
			"GPU prefix cache hits, in terms of number of cached tokens. DEPRECATED: Use vllm:prefix_cache_hits instead.", l...)
		tpot = r.batchHistVec("vllm:time_per_output_token_seconds",
			"Histogram of time per output token in seconds. DEPRECATED: Use vllm:inter_token_latency_seconds instead.", l...)
	}

	for _, ro := range r.ranks {
		e := strconv.Itoa(ro.rank)
		lv := []string{model, e}
		v := &vllmRank{
			running:      running.WithLabelValues(lv...),
			waiting:      waiting.WithLabelValues(lv...),
			waitCapacity: byReason.WithLabelValues(model, e, "capacity"),
			waitDeferred: byReason.WithLabelValues(model, e, "deferred"),
			kvUsage:      kvUsage.WithLabelValues(lv...),

			preemptions:  preemptions.WithLabelValues(lv...),
			promptTokens: promptTokens.WithLabelValues(lv...),
			promptCached: promptCached.WithLabelValues(lv...),
			genTokens:    genTokens.WithLabelValues(lv...),
			pcQueries:    pcQueries.WithLabelValues(lv...),
			pcHits:       pcHits.WithLabelValues(lv...),

			ttft:      ttft.WithLabelValues(lv...),
			tpotReq:   tpotReq.WithLabelValues(lv...),
			e2e:       e2e.WithLabelValues(lv...),
			queue:     queue.WithLabelValues(lv...),
			prefill:   prefill.WithLabelValues(lv...),
			decode:    decode.WithLabelValues(lv...),
			inference: inference.WithLabelValues(lv...),

			iter:            iter.WithLabelValues(lv...),
			reqPrompt:       reqPrompt.WithLabelValues(lv...),
			reqGen:          reqGen.WithLabelValues(lv...),
			reqKVComputed:   reqKV.WithLabelValues(lv...),
			reqPreempt:      reqPreempt.WithLabelValues(lv...),
			paramsN:         paramsN.WithLabelValues(lv...),
			paramsMaxTokens: paramsMax.WithLabelValues(lv...),
			maxGen:          maxGen.WithLabelValues(lv...),

			itl: newBatchHist(BucketsITL),
		}
		for i, reason := range finishReasons {
			v.success[i] = success.WithLabelValues(model, e, reason)
		}
		itl.add(v.itl, lv...)
		if r.deprecated {
			v.gpuCacheUsage = gpuKV.WithLabelValues(lv...)
			v.gpuPCQueries = gpuQ.WithLabelValues(lv...)
			v.gpuPCHits = gpuH.WithLabelValues(lv...)
			tpot.add(v.itl, lv...)
		}
		cacheInfo.WithLabelValues(e, strconv.Itoa(bs), cfg.kvCacheDtypeLabel(), pyBool(cfg.EnablePrefixCaching), pyrepr.Float(cfg.gpuMemoryUtilization()),
			strconv.Itoa(cfg.NumGPUBlocks), override, cfg.HashAlgo,
			strconv.Itoa(kvTokens), pyrepr.Float(concurrency)).Set(1)
		ro.v = v
	}
}

// buildSGLang registers the sglang:* family (docs/metrics.md).
func (r *Registry) buildSGLang() {
	cfg := &r.opts
	model := cfg.Model
	l := []string{labelModel, labelRank}

	running := r.gaugeVec("sglang:num_running_reqs", "The number of running requests.", l...)
	queue := r.gaugeVec("sglang:num_queue_reqs", "The number of requests in the waiting queue.", l...)
	used := r.gaugeVec("sglang:num_used_tokens", "The number of used tokens.", l...)
	usage := r.gaugeVec("sglang:token_usage", "The token usage.", l...)
	maxTotal := r.gaugeVec("sglang:max_total_num_tokens", "The maximum total number of tokens in the KV cache pool.", l...)
	hitRate := r.gaugeVec("sglang:cache_hit_rate", "The prefix cache hit rate.", l...)
	gen := r.gaugeVec("sglang:gen_throughput", "The generation throughput (token/s).", l...)
	retracted := r.gaugeVec("sglang:num_retracted_reqs", "The number of retracted requests.", l...)
	queueTime := r.histVec("sglang:queue_time_seconds", "Histogram of queueing time in seconds.", BucketsSGLangQueue, l...)

	req := &sglangRequests{
		prompt:   r.counterVec("sglang:prompt_tokens_total", "Number of prefill tokens processed.", labelModel).WithLabelValues(model),
		gen:      r.counterVec("sglang:generation_tokens_total", "Number of generation tokens processed.", labelModel).WithLabelValues(model),
		cached:   r.counterVec("sglang:cached_tokens_total", "Number of cached prompt tokens.", labelModel).WithLabelValues(model),
		requests: r.counterVec("sglang:num_requests_total", "Number of requests processed.", labelModel).WithLabelValues(model),
		aborted:  r.counterVec("sglang:num_aborted_requests_total", "Number of requests aborted.", labelModel).WithLabelValues(model),
		ttft: r.histVec("sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
			BucketsSGLangTTFT, labelModel).WithLabelValues(model),
		e2e: r.histVec("sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds",
			BucketsSGLangE2E, labelModel).WithLabelValues(model),
		itl: newBatchHist(BucketsSGLangITL),
	}
	r.batchHistVec("sglang:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", labelModel).
		add(req.itl, model)

	total := float64(cfg.NumGPUBlocks * cfg.BlockSize)
	for _, ro := range r.ranks {
		lv := []string{model, strconv.Itoa(ro.rank)}
		s := &sglangRank{
			running:        running.WithLabelValues(lv...),
			queue:          queue.WithLabelValues(lv...),
			usedTokens:     used.WithLabelValues(lv...),
			tokenUsage:     usage.WithLabelValues(lv...),
			maxTotal:       maxTotal.WithLabelValues(lv...),
			hitRate:        hitRate.WithLabelValues(lv...),
			genThroughput:  gen.WithLabelValues(lv...),
			retracted:      retracted.WithLabelValues(lv...),
			queueTime:      queueTime.WithLabelValues(lv...),
			sglangRequests: req,
		}
		s.maxTotal.Set(total)
		ro.s = s
		ro.totalKVTokens = total
	}
}

// buildMocker registers the mocker_* product metrics and FPM gauges.
func (r *Registry) buildMocker(version string) {
	cfg := &r.opts
	timing := string(cfg.TimingModel)
	if cfg.Hardware != "" {
		timing = "hardware" // docs/hardware.md
	}
	r.gaugeVec("mocker_info", "mocker-server build and mode; constant 1.",
		"version", "engine_type", "worker_type", "timing_model").
		WithLabelValues(version, string(cfg.EngineType), cfg.WorkerType, timing).Set(1)

	passes := r.counterVec("mocker_passes_total", "Engine passes executed.", labelRank)
	passSeconds := r.counterVec("mocker_pass_seconds_total", "Sum of modeled pass durations (busy time), in seconds.", labelRank)
	rejected := r.counterVec("mocker_requests_rejected_total", "Requests rejected by the engine because they can never run.", labelRank)
	kvEvents := r.counterVec("mocker_kv_events_total", "KV cache events produced, by type.", labelRank, "type")
	fpmMsgs := r.counterVec("mocker_fpm_messages_total", "Forward-pass-metrics snapshots produced, by kind.", labelRank, "kind")
	lag := r.histVec("mocker_token_delivery_lag_seconds",
		"Time between a token's modeled delivery deadline and when the HTTP layer flushed it, in seconds.",
		BucketsDeliveryLag, labelRank)
	var fpm [numFPMFields]*prometheus.GaugeVec
	for i, g := range fpmGauges {
		fpm[i] = r.gaugeVec(g.name, g.help, labelRank)
	}

	r.kvPub = &kvPublisherCollector{
		sentDesc: prometheus.NewDesc("mocker_kv_event_batches_total",
			"KV event batches handed to the ZMQ PUB socket.", []string{labelRank}, nil),
		droppedDesc: prometheus.NewDesc("mocker_kv_event_batches_dropped_total",
			"KV event batches dropped at the PUB socket's high-water mark.", []string{labelRank}, nil),
		sent:    make([]atomic.Pointer[func() uint64], len(r.ranks)),
		dropped: make([]atomic.Pointer[func() uint64], len(r.ranks)),
	}
	r.MustRegister(r.kvPub)

	kvBlocks := r.kvBlocksVec()
	for _, ro := range r.ranks {
		rk := strconv.Itoa(ro.rank)
		ro.kvBlocks = newKVBlockGauges(kvBlocks, rk, cfg.NumGPUBlocks)
		ro.passes = passes.WithLabelValues(rk)
		ro.passSeconds = passSeconds.WithLabelValues(rk)
		ro.rejected = rejected.WithLabelValues(rk)
		ro.kvEvents[kvStored] = kvEvents.WithLabelValues(rk, "BlockStored")
		ro.kvEvents[kvRemoved] = kvEvents.WithLabelValues(rk, "BlockRemoved")
		ro.kvEvents[kvAllCleared] = kvEvents.WithLabelValues(rk, "AllBlocksCleared")
		ro.fpmPass = fpmMsgs.WithLabelValues(rk, "pass")
		ro.fpmHeartbeat = fpmMsgs.WithLabelValues(rk, "heartbeat")
		ro.lag = lag.WithLabelValues(rk)
		for i := range fpm {
			ro.fpm[i] = fpm[i].WithLabelValues(rk)
		}
	}
}
