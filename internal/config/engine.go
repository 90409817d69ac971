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
		HashAlgo:             c.PrefixCachingHashAlgo,
		HashSeed:             c.HashSeed,
		Timing: engine.TimingConfig{
			Model:          c.TimingModel,
			FixedPrefillMs: c.FixedPrefillMs,
			FixedDecodeMs:  c.FixedDecodeMs,
			Profile:        profile,
		},
		SpeedupRatio:       c.SpeedupRatio,
		DecodeSpeedupRatio: c.DecodeSpeedupRatio,
		LoRA:               c.engineLoRA(),
		Transfer:           c.engineTransfer(),
	}
}
