// Package api is mocker-server's OpenAI-compatible HTTP layer
// (docs/http-api.md): the route table that composes the shared generation
// pipeline (internal/api/pipeline) with the surfaces in their own packages
// (openai, responses, anthropic, embeddings, sglang) and the auxiliary
// endpoints. The settings, collaborators and server types live in the
// subpackages and are named here so that callers need only this package.
package api

import (
	"context"
	"net"

	"github.com/mocker-server/mocker-server/internal/api/conn"
	"github.com/mocker-server/mocker-server/internal/api/disagg"
	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/engine"
)

// NewServer builds the HTTP layer over one engine per DP rank (engines[r] is
// rank r): the shared pipeline's state with this package's route table. The
// engines' Run loops are the caller's business. The server starts ready
// unless opts.HTTP.StartClosed; then the caller opens the gate with
// SetReady(true) when the startup time has elapsed.
func NewServer(opts Options, engines []*engine.Engine, deps Deps) *Server {
	return pipeline.NewServer(opts, engines, deps, routes)
}

// The server (internal/api/pipeline), its collaborators and settings
// (internal/api/settings) and the side channel's interfaces
// (internal/api/disagg).
type (
	Server                  = pipeline.Server
	Deps                    = settings.Deps
	Options                 = settings.Options
	ModelOptions            = settings.ModelOptions
	HTTPOptions             = settings.HTTPOptions
	GenerationOptions       = settings.GenerationOptions
	ToolOptions             = settings.ToolOptions
	LimitOptions            = settings.LimitOptions
	BudgetOptions           = settings.BudgetOptions
	LoRAOptions             = settings.LoRAOptions
	LoRAModule              = settings.LoRAModule
	MultimodalOptions       = settings.MultimodalOptions
	MMObserver              = settings.MMObserver
	PDOptions               = settings.PDOptions
	SGLangOptions           = settings.SGLangOptions
	ReasoningField          = settings.ReasoningField
	LoRAPathCheck           = settings.LoRAPathCheck
	PDRole                  = settings.PDRole
	DPRouting               = settings.DPRouting
	PoolingOptions          = settings.PoolingOptions
	Runner                  = settings.Runner
	PoolingTask             = settings.PoolingTask
	ChatRenderer            = settings.ChatRenderer
	KVTransfer              = disagg.KVTransfer
	RequestObserver         = settings.RequestObserver
	HTTPInstrumenter        = settings.HTTPInstrumenter
	DeliveryLagObserver     = settings.DeliveryLagObserver
	FaultObserver           = settings.FaultObserver
	TransferFailureObserver = disagg.TransferFailureObserver
)

// The settings' values (internal/api/settings).
const (
	ReasoningFieldReasoning        = settings.ReasoningFieldReasoning
	ReasoningFieldReasoningContent = settings.ReasoningFieldReasoningContent
	LoRAPathNone                   = settings.LoRAPathNone
	LoRAPathExists                 = settings.LoRAPathExists
	PDRoleNone                     = settings.PDRoleNone
	PDRolePrefill                  = settings.PDRolePrefill
	PDRoleDecode                   = settings.PDRoleDecode
	RouteRoundRobin                = settings.RouteRoundRobin
	RouteLeastLoaded               = settings.RouteLeastLoaded
	RunnerAuto                     = settings.RunnerAuto
	RunnerGenerate                 = settings.RunnerGenerate
	RunnerPooling                  = settings.RunnerPooling
	TaskEmbed                      = settings.TaskEmbed
	TaskClassify                   = settings.TaskClassify
)

// ErrShuttingDown is what a generation request waiting for its engine gets
// when the server stops (internal/api/pipeline).
var ErrShuttingDown = pipeline.ErrShuttingDown

// ConnContext is the http.Server's ConnContext hook that lets a stream
// write its chunks straight to the socket (internal/api/conn).
func ConnContext(ctx context.Context, c net.Conn) context.Context { return conn.ConnContext(ctx, c) }

// JSONErrorListener wraps ln so that net/http's answers to malformed
// requests are JSON bodies (internal/api/conn).
func JSONErrorListener(ln net.Listener) net.Listener { return conn.JSONErrorListener(ln) }
