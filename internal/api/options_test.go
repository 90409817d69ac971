package api

import (
	"time"

	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/plan"
)

// testOptions builds the server's options from a test configuration as
// internal/worker's apiOptions does in production (the worker imports
// api, so api's tests cannot call it).
func testOptions(cfg *config.Config) Options {
	o := Options{
		Model: ModelOptions{ServedNames: cfg.ServedModelName, Path: cfg.Model,
			Tokenizer: cfg.Tokenizer, MaxModelLen: cfg.MaxModelLen},
		HTTP: HTTPOptions{
			APIKeys:             cfg.APIKey,
			AdminKey:            cfg.AdminKey,
			MaxRequestBodyBytes: cfg.MaxRequestBodyBytes,
			RequestBodyTimeout:  time.Duration(cfg.RequestBodyTimeout * float64(time.Second)),
			StartClosed:         cfg.StartupTime > 0,
			RequestIDHeaders:    cfg.EnableRequestIDHeaders,
			PromptTokensDetails: cfg.EnablePromptTokensDetails,
			ForceIncludeUsage:   cfg.EnableForceIncludeUsage,
			DevMode:             cfg.DevMode,
			MaxUnflushedTokens:  cfg.MaxUnflushedTokens,
		},
		Generation: GenerationOptions{
			OutputLenMode:      cfg.OutputLenMode,
			NaturalOutputLen:   cfg.NaturalOutputLen,
			ReasoningField:     ReasoningField(cfg.ReasoningField),
			PerPassChunks:      cfg.SpeculativeConfig != nil,
			PriorityScheduling: cfg.SchedulingPolicy == engine.SchedulePriority,
		},
		Tools: ToolOptions{AutoToolChoice: cfg.EnableAutoToolChoice, Parser: cfg.ToolCallParser,
			CallProbability: cfg.ToolCallProbability, ExcludeWhenChoiceNone: cfg.ExcludeToolsWhenToolChoiceNone},
		Limits: LimitOptions{MaxConcurrentRequests: cfg.MaxConcurrentRequests, RPM: cfg.RPM, TPM: cfg.TPM},
		LoRA: LoRAOptions{Enabled: cfg.EnableLoRA, RuntimeUpdating: cfg.AllowRuntimeLoRAUpdating,
			PathCheck: LoRAPathCheck(cfg.LoRAPathCheck), MaxRank: cfg.MaxLoRARank},
		PD:           testPDOptions(cfg),
		Faults:       cfg.FaultSettings(),
		Seed:         cfg.Seed,
		DPRouting:    DPRouting(cfg.DPRouting),
		EmbeddingDim: cfg.EmbeddingDim,
	}
	if rc := cfg.Reasoning; rc != nil {
		o.Generation.Reasoning = &plan.Reasoning{StartID: rc.StartThinkingTokenID,
			EndID: rc.EndThinkingTokenID, Ratio: rc.ThinkingRatio}
	}
	for _, m := range cfg.LoRAModuleList() {
		o.LoRA.Modules = append(o.LoRA.Modules, LoRAModule{Name: m.Name, Path: m.Path, BaseModelName: m.BaseModelName})
	}
	if cfg.EngineType == engine.EngineSGLang {
		o.SGLang = testSGLangOptions(cfg)
	}
	return o
}

// testPDOptions are the disaggregation settings of the HTTP layer.
func testPDOptions(cfg *config.Config) PDOptions {
	p := PDOptions{
		Disaggregated:          cfg.Disaggregated(),
		ServesPrefill:          cfg.ServesPrefill(),
		ServesDecode:           cfg.ServesDecode(),
		RoleName:               "--disaggregation-mode " + string(cfg.WorkerType),
		BootstrapPort:          cfg.BootstrapPort,
		HandoffTimeout:         cfg.HandoffTimeout(),
		TransferDelay:          cfg.TransferDelay,
		RecomputeOnLoadFailure: cfg.RecomputeOnKVLoadFailure(),
	}
	switch cfg.WorkerType {
	case config.WorkerPrefill:
		p.Role = PDRolePrefill
	case config.WorkerDecode:
		p.Role = PDRoleDecode
	}
	if t := cfg.PDConnector(); t != nil {
		p.Connector = true
		p.RoleName = "kv_role " + t.KVRole
	}
	return p
}

// testSGLangOptions are SGLang's server arguments as /get_server_info reports
// them.
func testSGLangOptions(cfg *config.Config) *SGLangOptions {
	page := cfg.EffectiveBlockSize()
	maxRunning := cfg.SGLang.MaxRunningRequests
	if maxRunning == 0 {
		maxRunning = cfg.MaxNumSeqs
	}
	return &SGLangOptions{
		PageSize:                 page,
		MaxRunningRequests:       maxRunning,
		MaxTotalTokens:           cfg.NumGPUBlocks * page,
		MaxPrefillTokens:         cfg.SGLang.MaxPrefillTokens,
		ChunkedPrefillSize:       cfg.SGLang.ChunkedPrefillSize,
		SchedulePolicy:           string(cfg.SGLang.SchedulePolicy),
		ScheduleConservativeness: cfg.SGLang.ScheduleConservativeness,
		DisableRadixCache:        !cfg.EnablePrefixCaching,
		DPSize:                   cfg.DPSize,
	}
}
