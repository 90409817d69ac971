package config

import "github.com/mocker-server/mocker-server/internal/engine"

// EngineConfig converts the validated configuration into what one rank's
// engine needs. profile is the interpolated timing model's data, loaded once
// by the caller from PlannerProfileData (nil for the other models); every
// rank shares it read-only.
func (c *Config) EngineConfig(profile *engine.Profile) engine.Config {
	return engine.Config{
		Type:                 c.EngineType,
		NumBlocks:            c.NumGPUBlocks,
		BlockSize:            c.EffectiveBlockSize(),
		MaxModelLen:          c.MaxModelLen,
		MaxNumSeqs:           c.MaxNumSeqs,
		MaxNumBatchedTokens:  c.MaxNumBatchedTokens,
		EnablePrefixCaching:  c.EnablePrefixCaching,
		EnableChunkedPrefill: c.EnableChunkedPrefill,
		Preemption:           c.PreemptionMode,
		Scheduling:           c.SchedulingPolicy,
		HashAlgo:             string(c.PrefixCachingHashAlgo),
		HashSeed:             c.HashSeed,
		Timing: engine.TimingConfig{
			Model:          c.TimingModel,
			FixedPrefillMs: c.FixedPrefillMs,
			FixedDecodeMs:  c.FixedDecodeMs,
			Jitter: engine.FixedJitter{
				PrefillPerTokenMs: c.FixedPrefillMsPerToken,
				PrefillStdMs:      c.FixedPrefillStdMs,
				DecodeStdMs:       c.FixedDecodeStdMs,
				LoadFactor:        c.FixedLoadFactor,
				MaxNumSeqs:        c.MaxNumSeqs,
				Seed:              uint64(c.Seed),
			},
			Profile: profile,
		},
		SpeedupRatio:       c.SpeedupRatio,
		DecodeSpeedupRatio: c.DecodeSpeedupRatio,
		LoRA:               c.engineLoRA(),
		SGLang:             c.engineSGLang(),
		Capacity:           c.engineCapacity(),
		Eviction:           c.EvictionBackend,
		Speculative:        c.engineSpeculative(),
		Offload:            c.engineOffload(),
		Transfer:           c.engineTransfer(),
		TimingModel:        c.hardwareTimingModel(),
		Sleep:              c.engineSleep(),
		MM:                 c.engineMM(),
	}
}

// engineSGLang converts the sglang.* keys; the configuration's "fifo" and
// "dfs_weight" are the engine's SGLangFCFS and SGLangDFSWeight.
func (c *Config) engineSGLang() engine.SGLangConfig {
	policy := engine.SGLangPolicy(c.SGLang.SchedulePolicy)
	switch c.SGLang.SchedulePolicy {
	case SGLangFIFO:
		policy = engine.SGLangFCFS
	case SGLangDFSWeight:
		policy = engine.SGLangDFSWeight
	}
	return engine.SGLangConfig{
		Policy:                   policy,
		MaxPrefillTokens:         c.SGLang.MaxPrefillTokens,
		ChunkedPrefillSize:       c.SGLang.ChunkedPrefillSize,
		MaxRunningRequests:       c.SGLang.MaxRunningRequests,
		ClipMaxNewTokens:         c.SGLang.ClipMaxNewTokens,
		ScheduleConservativeness: c.SGLang.ScheduleConservativeness,
		RandomSeed:               uint64(c.Seed),
	}
}

// engineCapacity is trtllm.capacity_scheduler_policy for the trtllm engine;
// the other engine types have no capacity scheduler (a startup warning names
// the key when a source sets it for them).
func (c *Config) engineCapacity() engine.CapacityPolicy {
	if c.EngineType != engine.EngineTRTLLM {
		return ""
	}
	return c.TRTLLM.CapacitySchedulerPolicy
}
