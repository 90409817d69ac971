// Package grpcfront is the gRPC side of a worker (docs/grpc.md): one
// grpc.Server on its own port with server reflection, panic recovery and a
// bounded message size, serving the services of the upstream protocols
// (internal/grpcfront/vllm, internal/grpcfront/sglang). A service is a thin
// translation between an upstream protobuf protocol and the shared
// generation pipeline (internal/api/pipeline); this package knows neither
// protocol.
package grpcfront

import (
	"context"
	"log/slog"
	"net"
	"runtime/debug"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/mocker-server/mocker-server/internal/api/pipeline"
)

// Service is one gRPC service of the front end: Register adds its
// handlers to the server (the generated Register<Name>Server call).
type Service interface {
	Register(s grpc.ServiceRegistrar)
}

// Deps are what a service is built from: the worker instance's generation
// pipeline (engines, tokenizer, options, faults, limits) and the facts of
// the process that no pipeline holds.
type Deps struct {
	// Server is the instance's shared pipeline, the one its HTTP API uses.
	Server *pipeline.Server
	// Logger logs the service's own events.
	Logger *slog.Logger
	// Model is the model path or id the server was started with (vLLM's
	// model_config.model; the served name is Server.Opts().Model).
	Model string
	// Started is when the worker started (GetServerInfo's uptime).
	Started time.Time
}

// Options configure the gRPC server. The zero value serves with the
// defaults below.
type Options struct {
	// MaxRecvMsgSize bounds one received message in bytes (0:
	// DefaultMaxRecvMsgSize). A larger message is refused with
	// RESOURCE_EXHAUSTED before it reaches a service.
	MaxRecvMsgSize int
	// Logger logs panics and failures (nil: discarded).
	Logger *slog.Logger
}

// DefaultMaxRecvMsgSize is the message bound without a configured one:
// the HTTP layer's default body limit.
const DefaultMaxRecvMsgSize = 32 << 20

// Server is a worker's gRPC server.
type Server struct {
	gs  *grpc.Server
	log *slog.Logger
}

// New returns a server of the given services with server reflection on
// (grpcurl lists and calls them without the .proto files).
func New(opts Options, services ...Service) *Server {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	size := opts.MaxRecvMsgSize
	if size <= 0 {
		size = DefaultMaxRecvMsgSize
	}
	s := &Server{log: log}
	s.gs = grpc.NewServer(
		grpc.MaxRecvMsgSize(size),
		grpc.UnaryInterceptor(s.recoverUnary),
		grpc.StreamInterceptor(s.recoverStream),
	)
	for _, svc := range services {
		svc.Register(s.gs)
	}
	reflection.Register(s.gs)
	return s
}

// Services returns the names of the services served (reflection's
// included), sorted.
func (s *Server) Services() []string {
	names := make([]string, 0, 4)
	for name := range s.gs.GetServiceInfo() {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Serve accepts connections on ln until Shutdown or Kill; it returns nil
// after either.
func (s *Server) Serve(ln net.Listener) error {
	err := s.gs.Serve(ln)
	if err == grpc.ErrServerStopped {
		return nil
	}
	return err
}

// Shutdown stops accepting, lets the running calls finish for up to grace
// and then cancels the rest (their contexts end, so their engine work is
// cancelled and its KV freed).
func (s *Server) Shutdown(grace time.Duration) {
	done := make(chan struct{})
	go func() {
		s.gs.GracefulStop()
		close(done)
	}()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.gs.Stop()
		<-done
	}
}

// Kill closes the listener and every connection at once and cancels every
// call, as a crashed process would.
func (s *Server) Kill() { s.gs.Stop() }

// recoverUnary and recoverStream turn a panicking handler into INTERNAL
// instead of a crashed process.
func (s *Server) recoverUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
	defer s.recover(info.FullMethod, &err)
	return h(ctx, req)
}

func (s *Server) recoverStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
	defer s.recover(info.FullMethod, &err)
	return h(srv, ss)
}

func (s *Server) recover(method string, err *error) {
	if v := recover(); v != nil {
		s.log.Error("panic serving gRPC call", "method", method, "panic", v, "stack", string(debug.Stack()))
		*err = status.Error(codes.Internal, "internal error")
	}
}
