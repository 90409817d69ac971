package sglang

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/mocker-server/mocker-server/internal/grpcfront/sglang/sglangpb"
)

// errNoLoRA answers the LoRA adapter RPCs and a Generate naming a
// lora_id: mocker-server serves LoRA adapters in vllm mode only
// (--enable-lora is refused with --engine-type sglang), so there is no
// adapter to load, list or generate under. (SGLang's servicer declares
// these RPCs in the proto without implementing them yet.)
var errNoLoRA = status.Error(codes.FailedPrecondition,
	"LoRA adapters are not served with --engine-type sglang (mocker-server serves them in vllm mode only)")

// LoadLoRAAdapter is refused: see errNoLoRA.
func (sv *Service) LoadLoRAAdapter(context.Context, *pb.LoadLoRAAdapterRequest) (*pb.LoadLoRAAdapterResponse, error) {
	return nil, errNoLoRA
}

// UnloadLoRAAdapter is refused: see errNoLoRA.
func (sv *Service) UnloadLoRAAdapter(context.Context, *pb.UnloadLoRAAdapterRequest) (*pb.UnloadLoRAAdapterResponse, error) {
	return nil, errNoLoRA
}

// ListLoadedLoRAAdapters is refused: see errNoLoRA.
func (sv *Service) ListLoadedLoRAAdapters(context.Context, *pb.ListLoadedLoRAAdaptersRequest) (*pb.ListLoadedLoRAAdaptersResponse, error) {
	return nil, errNoLoRA
}
