package worker

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/grpcfront"
	sglanggrpc "github.com/mocker-server/mocker-server/internal/grpcfront/sglang"
	vllmgrpc "github.com/mocker-server/mocker-server/internal/grpcfront/vllm"
)

// grpcServices returns the gRPC services a worker of cfg's engine type
// serves on --grpc-port (docs/grpc.md): the engine's own upstream
// protocol, on the same pipeline as its HTTP API.
func (w *Worker) grpcServices(cfg *config.Config, d grpcfront.Deps) []grpcfront.Service {
	switch cfg.EngineType {
	case engine.EngineSGLang:
		o := sglanggrpc.Options{Deps: d, TokenizerDir: w.tokenizerDir()}
		if w.opts.KVEvents != nil {
			if ep, topic, ok := w.opts.KVEvents(0); ok {
				o.KVEndpoint, o.KVTopic = ep, topic
			}
		}
		return []grpcfront.Service{sglanggrpc.New(o)}
	default:
		return []grpcfront.Service{vllmgrpc.New(d)}
	}
}

// startGRPC binds the instance's gRPC port (cfg.GRPCPort; a restart reuses
// the port bound first, as the HTTP port does) and serves the engine
// type's services on it. Without --grpc-port it does nothing.
func (w *Worker) startGRPC(in *instance, port int) error {
	cfg := w.cfg
	if cfg.GRPCPort < 0 {
		return nil
	}
	svcs := w.grpcServices(cfg, grpcfront.Deps{Server: in.srv, Logger: w.log, Model: cfg.Model, Started: w.started0})
	if len(svcs) == 0 {
		return fmt.Errorf("--grpc-port: no gRPC service for --engine-type %s yet", cfg.EngineType)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("listen on %s:%d (gRPC): %w", cfg.Host, port, err)
	}
	in.grpcLn = ln
	in.grpc = grpcfront.New(grpcfront.Options{MaxRecvMsgSize: int(cfg.MaxRequestBodyBytes), Logger: w.log}, svcs...)
	in.grpcNames = strings.Join(in.grpc.Services(), ", ")
	if len(cfg.APIKey) > 0 {
		// vLLM's gRPC server has no authentication; the mock follows it
		// (docs/grpc.md) and says so rather than leaving it implied.
		w.log.Warn("--api-key does not apply to the gRPC port: vLLM's gRPC server has no authentication, and neither has the mock's (docs/grpc.md)", "grpc_port", port)
	}
	go func() {
		if err := in.grpc.Serve(ln); err != nil && !in.closing.Load() && !errors.Is(err, net.ErrClosed) {
			w.log.Error("gRPC server failed", "err", err)
			if w.opts.OnFailure != nil {
				w.opts.OnFailure(err)
			}
		}
	}()
	return nil
}

// shutdownGRPC stops the gRPC server gracefully within grace (calls still
// running then are cancelled).
func (in *instance) shutdownGRPC(grace time.Duration) {
	if in.grpc != nil {
		in.grpc.Shutdown(grace)
	}
}

// killGRPC closes the gRPC listener and connections at once.
func (in *instance) killGRPC() {
	if in.grpc != nil {
		in.grpc.Kill()
	}
}

// GRPCAddr returns the bound gRPC address (host:port), "" without
// --grpc-port or before the start.
func (w *Worker) GRPCAddr() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.grpcAddr
}

// tokenizerDir is the directory of the real tokenizer the worker loaded
// ("" with the built-in one): SGLang's GetTokenizer streams its files.
func (w *Worker) tokenizerDir() string {
	if w.files.model == nil {
		return ""
	}
	if w.cfg.Tokenizer != "" {
		return w.cfg.Tokenizer
	}
	return w.cfg.Model
}
