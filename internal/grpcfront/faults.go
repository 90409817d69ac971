package grpcfront

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mocker-server/mocker-server/internal/faults"
)

// MidStream carries out a mid-stream fault (pipeline.Call.MidStream) on a
// gRPC stream once its f.After tokens have been sent. over reports that
// the call ends here with err; otherwise (a stall that ran its course) the
// stream goes on.
//
// gRPC has no SSE error event and a handler cannot reset its HTTP/2
// connection, so the faults end the call with the status a client would
// see for the same failure: stream_error as INTERNAL (what vLLM's servicer
// answers to an exception mid-generation), truncate as INTERNAL (a stream
// cut without its trailers) and reset as UNAVAILABLE (a lost connection).
func MidStream(ctx context.Context, f faults.Fault) (over bool, err error) {
	switch f.Kind {
	case faults.Stall:
		if f.Duration > 0 {
			t := time.NewTimer(f.Duration)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
				return true, ContextStatus(ctx)
			}
		}
		return false, nil
	case faults.StreamError:
		return true, status.Error(codes.Internal, "Internal Server Error (injected stream_error fault)")
	case faults.Truncate:
		return true, status.Error(codes.Internal, "stream truncated (injected truncate fault)")
	case faults.Reset:
		return true, status.Error(codes.Unavailable, "connection reset (injected reset fault)")
	}
	return false, nil
}
