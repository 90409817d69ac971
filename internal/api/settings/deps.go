package settings

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/mocker-server/mocker-server/internal/api/disagg"
	"github.com/mocker-server/mocker-server/internal/faults"
	"github.com/mocker-server/mocker-server/internal/tokenizer"
)

// RequestObserver receives the per-HTTP-request size observations
// (vllm:request_params_n, vllm:request_params_max_tokens,
// vllm:request_max_num_generation_tokens). It is called once per generation
// request that reached the engine, when the request ends, with the DP rank
// that served it (the histograms carry the engine label), n, the effective
// max tokens M (the largest over the prompts of a multi-prompt completions
// request) and the largest number of tokens any choice generated. It must be
// safe for concurrent use and must not block.
type RequestObserver interface {
	ObserveRequest(rank, n, maxTokens, maxGenerated int)
}

// HTTPInstrumenter wraps the router to count each request it serves:
// vLLM's FastAPI HTTP metrics (http_requests_total, …). route reports,
// after the handler ran, the route template the request matched ("" for
// none). metrics.Registry implements it.
type HTTPInstrumenter interface {
	InstrumentHTTP(next http.Handler, route func(*http.Request) string) http.Handler
}

// DeliveryLagObserver receives, per streamed token, how late (seconds) its
// bytes were flushed to the client after the token's modeled delivery time
// (engine.OutputItem.Time, the deadline of the pass that produced it):
// mocker_token_delivery_lag_seconds{dp_rank}. It is called from handler
// goroutines once per token right after each flush; it must be safe for
// concurrent use, cheap and non-blocking. metrics.Registry implements it.
type DeliveryLagObserver interface {
	ObserveDeliveryLag(rank int, seconds float64)
}

// Deps are the Server's collaborators. Every field is optional.
type Deps struct {
	// Logger receives request logs (unknown fields at debug, recovered
	// panics at error). Default: discard.
	Logger *slog.Logger
	// Metrics serves GET /metrics. Default: an empty 200 text/plain body.
	Metrics http.Handler
	// Requests observes per-HTTP-request histograms (may be nil).
	Requests RequestObserver
	// HTTP counts every request the router serves in vLLM's HTTP metrics
	// (may be nil).
	HTTP HTTPInstrumenter
	// DeliveryLag observes the per-token SSE delivery lag (may be nil).
	DeliveryLag DeliveryLagObserver
	// Faults decides injected faults; nil builds one from the
	// options' failure settings (seeded by Options.Seed).
	Faults *faults.Injector
	// FaultObserver counts injected faults (may be nil).
	FaultObserver FaultObserver
	// Version is reported by GET /version.
	Version string
	// Now is the wall clock for "created" timestamps. Default time.Now.
	Now func() time.Time
	// Tokenizer tokenizes prompts and renders generated tokens. Default:
	// the built-in pseudo-word tokenizer.
	Tokenizer tokenizer.Model
	// ChatTemplate renders chat requests. Default: the built-in ChatML
	// template.
	ChatTemplate ChatRenderer
	// RequestChatTemplate compiles a request's own chat_template into a
	// renderer (with the served tokenizer's special tokens); nil refuses
	// such requests even with HTTPOptions.TrustRequestChatTemplate.
	RequestChatTemplate func(source string) (ChatRenderer, error)
	// KVTransfer is the side channel of disaggregated prefill/decode;
	// required when the configuration serves disaggregated requests.
	KVTransfer disagg.KVTransfer
	// SideChannel serves the prefill side of KV pulls under /kv_transfer/
	// (may be nil).
	SideChannel http.Handler
	// TransferFailures counts failed KV pulls (may be nil).
	TransferFailures disagg.TransferFailureObserver
	// MM counts multimodal cache lookups and unfetched items (may be nil).
	MM MMObserver
}

// ChatRenderer turns a chat request into prompt text with a model's chat
// template. messages and tools are the request's JSON as sent (key order
// matters to templates that iterate over objects); kwargs are the
// request's chat_template_kwargs. An error is the template's own complaint
// (its raise_exception message) and becomes a 400.
type ChatRenderer interface {
	RenderChat(messages, tools json.RawMessage, addGenerationPrompt, continueFinalMessage bool,
		kwargs map[string]json.RawMessage) (string, error)
}

// FaultObserver counts injected faults and rate-limit rejections by type
// (mocker_injected_faults_total{type}). It must be safe for concurrent use.
type FaultObserver interface {
	ObserveInjectedFault(kind string)
}
