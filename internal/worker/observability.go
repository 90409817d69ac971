package worker

import (
	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/events"
	"github.com/mocker-server/mocker-server/internal/metrics"
)

// MetricsOptions is the part of a validated configuration the metrics
// registry reads, resolved once here (metrics never sees a config.Config).
func MetricsOptions(cfg *config.Config) metrics.Options {
	ec := cfg.EngineConfig(nil)
	o := metrics.Options{
		Model:                  cfg.ServedName(),
		Family:                 metrics.Family(cfg.ResolvedMetricsFamily()),
		HideDeprecated:         !cfg.DeprecatedMetrics,
		DPSize:                 cfg.DPSize,
		EngineType:             cfg.EngineType,
		WorkerType:             string(cfg.WorkerType),
		TimingModel:            cfg.TimingModel,
		BlockSize:              cfg.EffectiveBlockSize(),
		NumGPUBlocks:           cfg.NumGPUBlocks,
		NumGPUBlocksOverridden: cfg.NumGPUBlocksOverridden,
		MaxModelLen:            cfg.MaxModelLen,
		EnablePrefixCaching:    cfg.EnablePrefixCaching,
		HashAlgo:               string(cfg.PrefixCachingHashAlgo),
		KVCacheDtype:           cfg.KVCacheDtype,
		GPUMemoryUtilization:   cfg.GPUMemoryUtilization,
		Hardware:               cfg.Hardware,
		Disaggregated:          cfg.Disaggregated(),
		SpeculativeTokens:      ec.Speculative.NumSpeculativeTokens,
		SleepMode:              cfg.EnableSleepMode,
	}
	if cfg.EnableLoRA {
		o.MaxLoRAs = cfg.MaxLoRAs
	}
	for _, t := range ec.Offload.Tiers {
		o.OffloadTiers = append(o.OffloadTiers, t.Medium)
	}
	return o
}

// EventsOptions is the part of a validated configuration the ZMQ
// publishers read, resolved once here (events never sees a config.Config).
// It fails only on a kv_events_encoding validation would have refused.
func EventsOptions(cfg *config.Config) (events.Options, error) {
	enc, err := events.ParseEncoding(string(cfg.KVEventsEncoding))
	if err != nil {
		return events.Options{}, err // names kv_events_encoding
	}
	o := events.Options{
		DPSize:             cfg.DPSize,
		KVPort:             cfg.ZMQKVEventsPort,
		ReplayPort:         cfg.ZMQReplayPort,
		Host:               cfg.Host,
		Encoding:           enc,
		NoReplayTopicFrame: !cfg.KVEventsReplayTopicFrame,
		// No event can happen without prefix caching, nor on a decode
		// worker (its blocks arrive by transfer); the sockets still open.
		Silent:      !cfg.EnablePrefixCaching || cfg.WorkerType == config.WorkerDecode,
		FPMEndpoint: cfg.FPMEndpoint,
		WorkerID:    cfg.WorkerID,
	}
	if k := cfg.KVEventsConfig; k != nil && cfg.ZMQKVEventsPort > 0 {
		o.PortTuning = &events.VLLMKVEvents{BufferSteps: k.BufferSteps, HWM: k.HWM, MaxQueueSize: k.MaxQueueSize}
	}
	if k := cfg.KVEventsConfig; k != nil && k.EnableKVCacheEvents && k.Publisher != config.PublisherNull {
		o.VLLM = &events.VLLMKVEvents{Endpoint: k.Endpoint, Topic: k.Topic,
			BufferSteps: k.BufferSteps, HWM: k.HWM, MaxQueueSize: k.MaxQueueSize}
		if k.ReplayEndpoint != nil {
			o.VLLM.ReplayEndpoint = *k.ReplayEndpoint
		}
	}
	return o, nil
}
