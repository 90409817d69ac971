// Package settings is what the HTTP layer is given: its typed options
// (Options and its groups, typed enums of their closed sets), built once by
// internal/worker from the configuration, never the configuration itself;
// and its collaborators (Deps, the observer and renderer interfaces).
// internal/api names them for its callers.
package settings

import (
	"time"

	"github.com/mocker-server/mocker-server/internal/faults"
	"github.com/mocker-server/mocker-server/internal/plan"
)

// Options are the settings the HTTP layer reads. The server's owner
// (internal/worker) builds them once from the configuration; a zero group
// turns its feature off.
type Options struct {
	Model      ModelOptions
	HTTP       HTTPOptions
	Generation GenerationOptions
	Tools      ToolOptions
	Limits     LimitOptions
	Budgets    BudgetOptions
	LoRA       LoRAOptions
	PD         PDOptions
	Multimodal MultimodalOptions
	// SGLang mounts SGLang's native endpoints (docs/sglang.md) and holds
	// what /get_server_info reports; nil in the other engine modes.
	SGLang *SGLangOptions
	// Faults are the failure settings of the injector NewServer builds
	// when Deps.Faults is nil.
	Faults faults.Settings
	// Seed seeds planning (per-request seeds), injected faults and the
	// embedding basis.
	Seed int64
	// DPRouting chooses the rank of a request that names none.
	DPRouting DPRouting
	// EmbeddingDim is the length of /v1/embeddings vectors.
	EmbeddingDim int
	// Pooling says which kind of model is served, hence which endpoints
	// exist; the zero value serves generation and embeddings.
	Pooling PoolingOptions
}

// Runner is the kind of model served (vLLM's --runner).
type Runner uint8

const (
	// RunnerAuto serves the generation endpoints and /v1/embeddings.
	RunnerAuto Runner = iota
	// RunnerGenerate serves only the generation endpoints.
	RunnerGenerate
	// RunnerPooling serves only the pooling endpoints of Task.
	RunnerPooling
)

// PoolingTask is the task of a pooling model (vLLM's --convert).
type PoolingTask uint8

const (
	// TaskEmbed is a bi-encoder: embeddings, /pooling, /score, /rerank.
	TaskEmbed PoolingTask = iota
	// TaskClassify is a classifier: /classify, /pooling, and with one
	// label (a cross-encoder) /score and /rerank.
	TaskClassify
)

// PoolingOptions choose the served model's runner and pooling task.
type PoolingOptions struct {
	Runner Runner
	Task   PoolingTask // under RunnerPooling
	// NumLabels is a classifier's label count; 0 means 1.
	NumLabels int
}

// NewPoolingOptions maps the configuration's runner ("auto", "generate",
// "pooling"), its pooling task ("classify", else embed) and label count.
func NewPoolingOptions(runner, task string, numLabels int) PoolingOptions {
	p := PoolingOptions{NumLabels: numLabels}
	switch runner {
	case "generate":
		p.Runner = RunnerGenerate
	case "pooling":
		p.Runner = RunnerPooling
	}
	if task == "classify" {
		p.Task = TaskClassify
	}
	return p
}

// Generates reports whether the generation endpoints exist.
func (p PoolingOptions) Generates() bool { return p.Runner != RunnerPooling }

// Embeds reports whether /v1/embeddings exists.
func (p PoolingOptions) Embeds() bool {
	return p.Runner == RunnerAuto || p.Runner == RunnerPooling && p.Task == TaskEmbed
}

// Classifies reports whether /classify exists.
func (p PoolingOptions) Classifies() bool { return p.Runner == RunnerPooling && p.Task == TaskClassify }

// Labels is the classifier's label count (at least 1).
func (p PoolingOptions) Labels() int { return max(p.NumLabels, 1) }

// Scores reports whether /score and /rerank exist: an embedding model, or
// a classifier with one label (vLLM's enable_scoring_api).
func (p PoolingOptions) Scores() bool {
	return p.Runner == RunnerPooling && (p.Task == TaskEmbed || p.Labels() == 1)
}

// CrossEncoder reports whether scores come from a one-label classifier
// reading each query-document pair as one sequence.
func (p PoolingOptions) CrossEncoder() bool { return p.Task == TaskClassify }

// ModelOptions name the served model.
type ModelOptions struct {
	// ServedNames are the names requests may use; responses report the
	// first. Empty: Path is the one name.
	ServedNames []string
	Path        string // the model path (--model)
	Tokenizer   string // the tokenizer path; "" = Path
	MaxModelLen int    // context length (prompt + output tokens)
}

// ServedName is the model name responses report.
func (m *ModelOptions) ServedName() string {
	if len(m.ServedNames) > 0 {
		return m.ServedNames[0]
	}
	return m.Path
}

// HTTPOptions are the request handling and protocol settings.
type HTTPOptions struct {
	APIKeys  []string // accepted bearer tokens; none = no authentication
	AdminKey string   // guards /admin/faults; "" = no such route
	// MaxRequestBodyBytes bounds a request body (413 beyond).
	MaxRequestBodyBytes int64
	// RequestBodyTimeout bounds reading a body (408 after); 0 = 10 s.
	RequestBodyTimeout time.Duration
	// StartClosed keeps the startup gate closed until SetReady(true).
	StartClosed bool
	// RequestIDHeaders echoes the request id in X-Request-Id.
	RequestIDHeaders bool
	// PromptTokensDetails reports usage.prompt_tokens_details.
	PromptTokensDetails bool
	// ForceIncludeUsage sends the usage chunk on every stream.
	ForceIncludeUsage bool
	// TrustRequestChatTemplate renders a request's own chat_template
	// (--trust-request-chat-template); without it such a request is
	// refused, as vLLM does.
	TrustRequestChatTemplate bool
	// DevMode serves POST /reset_prefix_cache.
	DevMode bool
	// MaxUnflushedTokens aborts a stream whose client leaves this many
	// tokens unread (0 = never).
	MaxUnflushedTokens int
	// WorkerID is the serving worker's identity (a fleet's worker id; ""
	// outside a fleet). Chat and completions answers carry it as a
	// top-level mocker_worker field beside their usage, so that a router
	// lab can attribute answers behind a proxy that strips the
	// x-mocker-worker header.
	WorkerID string
}

// GenerationOptions shape every generated output.
type GenerationOptions struct {
	// OutputLenMode is plan's length mode ("" = plan.ModeNatural).
	OutputLenMode plan.LenMode
	// NaturalOutputLen is the median natural answer length (0 = plan's
	// default).
	NaturalOutputLen int
	// NaturalSigma is the log-normal σ of natural lengths (0 = plan's
	// default).
	NaturalSigma float64
	// Reasoning makes outputs open with thinking tokens; nil = none.
	Reasoning *plan.Reasoning
	// ReasoningField names the reasoning text of chat messages and deltas.
	ReasoningField ReasoningField
	// PerPassChunks streams the tokens one engine pass delivers to a
	// choice as one chunk (speculative decoding).
	PerPassChunks bool
	// PriorityScheduling accepts a non-zero priority field.
	PriorityScheduling bool
	// Echo answers with the prompt instead of planned tokens
	// (--response-mode echo; plan.Echo).
	Echo bool
}

// ReasoningField is the JSON name of reasoning text.
type ReasoningField string

// Reasoning fields.
const (
	ReasoningFieldReasoning        ReasoningField = "reasoning"
	ReasoningFieldReasoningContent ReasoningField = "reasoning_content"
)

// ToolOptions are the tool-calling settings.
type ToolOptions struct {
	// AutoToolChoice allows tool_choice "auto" (with a Parser).
	AutoToolChoice bool
	// Parser is vLLM's tool call parser name: the text format of the
	// generated calls.
	Parser string
	// CallProbability is the chance that an "auto" answer calls a tool
	// when it does not follow a tool result.
	CallProbability float64
	// AfterResultProbability is the chance that an "auto" answer right
	// after a tool result calls a tool again; after k consecutive tool
	// rounds, its k-th power.
	AfterResultProbability float64
	// ExcludeWhenChoiceNone renders no tools when tool_choice is "none".
	ExcludeWhenChoiceNone bool
}

// LimitOptions are the provider-style limits (0 = none).
type LimitOptions struct {
	MaxConcurrentRequests int
	RPM                   int // requests per minute
	TPM                   int // tokens per minute
}

// BudgetOptions bound what one request (or the server's stores) may cost,
// so that a small hostile body cannot stall or bloat a worker. Each field
// is a configuration flag's value; a zero field means no bound, except the
// schema ones, which then take schemagen's defaults. A refusal is a 400
// naming the limit and its flag.
type BudgetOptions struct {
	MaxPromptsPerRequest   int   // --max-prompts-per-request
	MaxSequencesPerRequest int   // --max-sequences-per-request: prompts × n
	MaxEmbeddingInputs     int   // --max-embedding-inputs
	MaxSchemaBytes         int   // --max-schema-bytes
	MaxSchemaEnum          int   // --max-schema-enum
	MaxSchemaSteps         int   // --max-schema-steps
	MaxLoRAAdapters        int   // --max-lora-adapters
	MaxResponsesStoreBytes int64 // --max-responses-store-bytes
}

// LoRAOptions are the LoRA adapter settings; Enabled false serves none.
type LoRAOptions struct {
	Enabled         bool
	RuntimeUpdating bool // serves /v1/load_lora_adapter and unload
	PathCheck       LoRAPathCheck
	MaxRank         int
	// Modules are the adapters loaded at startup (LoadStaticAdapters).
	Modules []LoRAModule
}

// LoRAPathCheck says what a load checks of an adapter's path.
type LoRAPathCheck string

// LoRA path checks.
const (
	// LoRAPathNone records any path.
	LoRAPathNone LoRAPathCheck = "none"
	// LoRAPathExists needs a directory whose adapter_config.json rank is
	// within MaxRank.
	LoRAPathExists LoRAPathCheck = "exists"
)

// LoRAModule is one adapter of --lora-modules.
type LoRAModule struct {
	Name, Path, BaseModelName string
}

// PDRole is a worker's fixed role in disaggregated prefill/decode
// (Dynamo's --disaggregation-mode); PDRoleNone for a KV connector's
// workers, whose requests say their side.
type PDRole uint8

// Worker roles.
const (
	PDRoleNone PDRole = iota
	PDRolePrefill
	PDRoleDecode
)

// PDOptions are the disaggregated prefill/decode settings.
type PDOptions struct {
	// Disaggregated serves kv_transfer_params and bootstrap_* requests.
	Disaggregated bool
	// ServesPrefill and ServesDecode are the halves of a handoff the
	// worker accepts.
	ServesPrefill, ServesDecode bool
	// Role is what a request with only bootstrap_* fields is.
	Role PDRole
	// RoleName describes the worker's role in error messages.
	RoleName string
	// Connector: a KV connector's side channel serves prefills' blocks.
	Connector bool
	// BootstrapPort is the Dynamo bootstrap port (0 = none).
	BootstrapPort int
	// HandoffTimeout is the longest a prefill holds its blocks.
	HandoffTimeout time.Duration
	// TransferDelay is the modeled time to move a prompt's KV (nil = 0).
	TransferDelay func(tokens int) time.Duration
	// RecomputeOnLoadFailure computes a failed pull's prompt locally.
	RecomputeOnLoadFailure bool
}

// DelayFor is the TransferDelay of a prompt of tokens, 0 without one.
func (p *PDOptions) DelayFor(tokens int) time.Duration {
	if p.TransferDelay == nil {
		return 0
	}
	return p.TransferDelay(tokens)
}

// SGLangOptions are SGLang's server arguments as /get_server_info reports
// them.
type SGLangOptions struct {
	PageSize                 int
	MaxRunningRequests       int
	MaxTotalTokens           int
	MaxPrefillTokens         int
	ChunkedPrefillSize       int
	SchedulePolicy           string
	ScheduleConservativeness float64
	DisableRadixCache        bool
	DPSize                   int
}

// DPRouting chooses the data-parallel rank of a request that names none.
type DPRouting string

// DP routing policies.
const (
	RouteRoundRobin  DPRouting = "round_robin"
	RouteLeastLoaded DPRouting = "least_loaded"
)
