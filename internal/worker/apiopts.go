package worker

import (
	"time"

	"github.com/mocker-server/mocker-server/internal/api"
	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/plan"
)

// apiOptions are the settings of the HTTP layer, taken once from the
// configuration: api reads nothing else of it.
func apiOptions(cfg *config.Config) api.Options {
	o := api.Options{
		Model: api.ModelOptions{ServedNames: cfg.ServedModelName, Path: cfg.Model,
			Tokenizer: cfg.Tokenizer, MaxModelLen: cfg.MaxModelLen},
		HTTP: api.HTTPOptions{
			APIKeys:                  cfg.APIKey,
			AdminKey:                 cfg.AdminKey,
			MaxRequestBodyBytes:      cfg.MaxRequestBodyBytes,
			RequestBodyTimeout:       time.Duration(cfg.RequestBodyTimeout * float64(time.Second)),
			StartClosed:              cfg.StartupTime > 0,
			RequestIDHeaders:         cfg.EnableRequestIDHeaders,
			PromptTokensDetails:      cfg.EnablePromptTokensDetails,
			ForceIncludeUsage:        cfg.EnableForceIncludeUsage,
			TrustRequestChatTemplate: cfg.TrustRequestChatTemplate,
			DevMode:                  cfg.DevMode,
			MaxUnflushedTokens:       cfg.MaxUnflushedTokens,
		},
		Generation: api.GenerationOptions{
			OutputLenMode:      plan.LenMode(cfg.OutputLenMode),
			NaturalOutputLen:   cfg.NaturalOutputLen,
			NaturalSigma:       cfg.NaturalOutputLenSigma,
			ReasoningField:     api.ReasoningField(cfg.ReasoningField),
			PerPassChunks:      cfg.SpeculativeConfig != nil,
			PriorityScheduling: cfg.SchedulingPolicy == engine.SchedulePriority,
			Echo:               cfg.ResponseMode == config.ResponseEcho,
		},
		Tools: api.ToolOptions{AutoToolChoice: cfg.EnableAutoToolChoice, Parser: cfg.ToolCallParser,
			CallProbability: cfg.ToolCallProbability, AfterResultProbability: cfg.ToolCallAfterResultProbability,
			ExcludeWhenChoiceNone: cfg.ExcludeToolsWhenToolChoiceNone},
		Limits: api.LimitOptions{MaxConcurrentRequests: cfg.MaxConcurrentRequests, RPM: cfg.RPM, TPM: cfg.TPM},
		Budgets: api.BudgetOptions{
			MaxPromptsPerRequest: cfg.MaxPromptsPerRequest, MaxSequencesPerRequest: cfg.MaxSequencesPerRequest,
			MaxEmbeddingInputs: cfg.MaxEmbeddingInputs, MaxSchemaBytes: cfg.MaxSchemaBytes,
			MaxSchemaEnum: cfg.MaxSchemaEnum, MaxSchemaSteps: cfg.MaxSchemaSteps,
			MaxLoRAAdapters: cfg.MaxLoRAAdapters, MaxResponsesStoreBytes: int64(cfg.MaxResponsesStoreBytes),
		},
		LoRA: api.LoRAOptions{Enabled: cfg.EnableLoRA, RuntimeUpdating: cfg.AllowRuntimeLoRAUpdating,
			PathCheck: api.LoRAPathCheck(cfg.LoRAPathCheck), MaxRank: cfg.MaxLoRARank},
		PD:           pdOptions(cfg),
		Faults:       cfg.FaultSettings(),
		Seed:         cfg.Seed,
		DPRouting:    api.DPRouting(cfg.DPRouting),
		EmbeddingDim: cfg.EmbeddingDim,
		Pooling:      api.NewPoolingOptions(string(cfg.Runner), cfg.PoolingTask(), cfg.NumLabels),
	}
	if rc := cfg.Reasoning; rc != nil {
		o.Generation.Reasoning = &plan.Reasoning{StartID: rc.StartThinkingTokenID,
			EndID: rc.EndThinkingTokenID, Ratio: rc.ThinkingRatio}
	}
	for _, m := range cfg.LoRAModuleList() {
		o.LoRA.Modules = append(o.LoRA.Modules, api.LoRAModule{Name: m.Name, Path: m.Path, BaseModelName: m.BaseModelName})
	}
	if cfg.EngineType == engine.EngineSGLang {
		o.SGLang = sglangOptions(cfg)
	}
	return o
}

// pdOptions are the disaggregation settings of the HTTP layer.
func pdOptions(cfg *config.Config) api.PDOptions {
	p := api.PDOptions{
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
		p.Role = api.PDRolePrefill
	case config.WorkerDecode:
		p.Role = api.PDRoleDecode
	}
	if t := cfg.PDConnector(); t != nil {
		p.Connector = true
		p.RoleName = "kv_role " + t.KVRole
	}
	return p
}

// sglangOptions are SGLang's server arguments as /get_server_info reports
// them.
func sglangOptions(cfg *config.Config) *api.SGLangOptions {
	page := cfg.EffectiveBlockSize()
	maxRunning := cfg.SGLang.MaxRunningRequests
	if maxRunning == 0 {
		maxRunning = cfg.MaxNumSeqs
	}
	return &api.SGLangOptions{
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
