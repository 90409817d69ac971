// Package apiopts builds the HTTP layer's settings (api/settings.Options)
// from the server's configuration, once at startup. It is its own package
// so that the worker, which composes the server, and the api packages'
// tests build the options with the same code; the api packages themselves
// never see the configuration.
package apiopts

import (
	"fmt"
	"time"

	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/media"
	"github.com/mocker-server/mocker-server/internal/mmproc"
	"github.com/mocker-server/mocker-server/internal/plan"
)

// FromConfig returns the settings of the HTTP layer, taken once from the
// configuration: the api packages read nothing else of it. mm is the served
// model's multimodal processor (nil: a text-only model); reading it from
// the model's files is the caller's I/O (internal/worker).
func FromConfig(cfg *config.Config, mm *mmproc.Processor) settings.Options {
	o := settings.Options{
		Model: settings.ModelOptions{ServedNames: cfg.ServedModelName, Path: cfg.Model,
			Tokenizer: cfg.Tokenizer, MaxModelLen: cfg.MaxModelLen},
		HTTP: settings.HTTPOptions{
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
		Generation: settings.GenerationOptions{
			OutputLenMode:      plan.LenMode(cfg.OutputLenMode),
			NaturalOutputLen:   cfg.NaturalOutputLen,
			NaturalSigma:       cfg.NaturalOutputLenSigma,
			ReasoningField:     settings.ReasoningField(cfg.ReasoningField),
			PerPassChunks:      cfg.SpeculativeConfig != nil,
			PriorityScheduling: cfg.SchedulingPolicy == engine.SchedulePriority,
			Echo:               cfg.ResponseMode == config.ResponseEcho,
		},
		Tools: settings.ToolOptions{AutoToolChoice: cfg.EnableAutoToolChoice, Parser: cfg.ToolCallParser,
			CallProbability: cfg.ToolCallProbability, AfterResultProbability: cfg.ToolCallAfterResultProbability,
			ExcludeWhenChoiceNone: cfg.ExcludeToolsWhenToolChoiceNone},
		Limits: settings.LimitOptions{MaxConcurrentRequests: cfg.MaxConcurrentRequests, RPM: cfg.RPM, TPM: cfg.TPM},
		Budgets: settings.BudgetOptions{
			MaxPromptsPerRequest: cfg.MaxPromptsPerRequest, MaxSequencesPerRequest: cfg.MaxSequencesPerRequest,
			MaxEmbeddingInputs: cfg.MaxEmbeddingInputs, MaxSchemaBytes: cfg.MaxSchemaBytes,
			MaxSchemaEnum: cfg.MaxSchemaEnum, MaxSchemaSteps: cfg.MaxSchemaSteps,
			MaxLoRAAdapters: cfg.MaxLoRAAdapters, MaxResponsesStoreBytes: int64(cfg.MaxResponsesStoreBytes),
		},
		LoRA: settings.LoRAOptions{Enabled: cfg.EnableLoRA, RuntimeUpdating: cfg.AllowRuntimeLoRAUpdating,
			PathCheck: settings.LoRAPathCheck(cfg.LoRAPathCheck), MaxRank: cfg.MaxLoRARank},
		PD:           pdOptions(cfg),
		Faults:       cfg.FaultSettings(),
		Seed:         cfg.Seed,
		DPRouting:    settings.DPRouting(cfg.DPRouting),
		EmbeddingDim: cfg.EmbeddingDim,
		Pooling:      settings.NewPoolingOptions(string(cfg.Runner), cfg.PoolingTask(), cfg.NumLabels),
	}
	if rc := cfg.Reasoning; rc != nil {
		o.Generation.Reasoning = &plan.Reasoning{StartID: rc.StartThinkingTokenID,
			EndID: rc.EndThinkingTokenID, Ratio: rc.ThinkingRatio}
	}
	for _, m := range cfg.LoRAModuleList() {
		o.LoRA.Modules = append(o.LoRA.Modules, settings.LoRAModule{Name: m.Name, Path: m.Path, BaseModelName: m.BaseModelName})
	}
	if cfg.EngineType == engine.EngineSGLang {
		o.SGLang = sglangOptions(cfg)
	}
	o.Multimodal = multimodalOptions(cfg, mm)
	return o
}

// pdOptions are the disaggregation settings of the HTTP layer.
func pdOptions(cfg *config.Config) settings.PDOptions {
	p := settings.PDOptions{
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
		p.Role = settings.PDRolePrefill
	case config.WorkerDecode:
		p.Role = settings.PDRoleDecode
	}
	if t := cfg.PDConnector(); t != nil {
		p.Connector = true
		p.RoleName = "kv_role " + t.KVRole
	}
	return p
}

// sglangOptions are SGLang's server arguments as /get_server_info reports
// them.
func sglangOptions(cfg *config.Config) *settings.SGLangOptions {
	page := cfg.EffectiveBlockSize()
	maxRunning := cfg.SGLang.MaxRunningRequests
	if maxRunning == 0 {
		maxRunning = cfg.MaxNumSeqs
	}
	return &settings.SGLangOptions{
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

// embedsHiddenSize is the served model's text hidden size when its
// processor is --model's own (a model directory's config.json or the
// catalogue's entry for the id). A stand-in --mm-processor-model says
// nothing about the served model's width, so nothing is checked then.
func embedsHiddenSize(cfg *config.Config, p *mmproc.Processor) int {
	if p == nil || p.Model() != cfg.Model {
		return 0
	}
	n, _ := p.TextHiddenSize()
	return n
}

// ConfigureProcessor applies --mm-processor-kwargs to the model's
// processor p (nil: a text-only model, which has none to configure; vLLM
// takes the flag there too). Kwargs the processor refuses are an error
// naming the flag: the server does not start.
func ConfigureProcessor(cfg *config.Config, p *mmproc.Processor) (*mmproc.Processor, error) {
	kw := cfg.MMProcessorKwargsJSON()
	if p == nil || kw == nil {
		return p, nil
	}
	q, err := p.WithKwargsJSON(kw)
	if err != nil {
		return nil, fmt.Errorf("--mm-processor-kwargs: %w", err)
	}
	return q, nil
}

// multimodalOptions are the HTTP layer's multimodal settings.
func multimodalOptions(cfg *config.Config, p *mmproc.Processor) settings.MultimodalOptions {
	limits, _ := cfg.MMLimits() // validated by config.Load
	u := cfg.Unfetched()
	return settings.MultimodalOptions{
		Processor:             p,
		LimitPerPrompt:        limits,
		MaxItemBytes:          cfg.MaxMediaItemBytes,
		AllowedLocalMediaPath: cfg.AllowedLocalMediaPath,
		AllowedMediaDomains:   cfg.AllowedMediaDomains,
		EnableEmbeds:          cfg.EnableMMEmbeds,
		EmbedsHiddenSize:      embedsHiddenSize(cfg, p),
		InterleaveStrings:     cfg.InterleaveMMStrings,
		RemoteImageWidth:      u.ImageWidth,
		RemoteImageHeight:     u.ImageHeight,
		RemoteDuration:        u.AudioDuration(),
		RemoteVideoFrames:     u.VideoFrames,
		Hash:                  media.HashOptions{ModelID: cfg.Model},
		ProcessorCacheBytes:   cfg.MMProcessorCacheBytes(),
	}
}
