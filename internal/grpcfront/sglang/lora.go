package sglang

import (
	"context"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/mocker-server/mocker-server/internal/grpcfront/sglang/sglangpb"
)

// LoRA adapters over gRPC. SGLang's proto names an adapter by a
// caller-minted lora_id (GenerateRequest.lora_id) besides its name; the
// pipeline's registry (the HTTP API's /load_lora_adapter) knows names, so
// the service keeps the id → name table. SGLang's servicer declares these
// RPCs without implementing them yet; the mock follows the proto's
// comments: success and message in the response, the loaded ids after
// every change.

// loraEntry is one adapter loaded over gRPC.
type loraEntry struct {
	name   string
	path   string
	pinned bool
}

// errNoLoRA answers the LoRA RPCs of a server started without
// --enable-lora (the HTTP API has no adapter routes then either).
var errNoLoRA = status.Error(codes.FailedPrecondition, "LoRA is not enabled on this server (start it with --enable-lora)")

// LoadLoRAAdapter registers an adapter under lora_name, as the HTTP
// API's load does (same checks), and maps lora_id to it.
func (sv *Service) LoadLoRAAdapter(_ context.Context, req *pb.LoadLoRAAdapterRequest) (*pb.LoadLoRAAdapterResponse, error) {
	if sv.s.Adapters() == nil {
		return nil, errNoLoRA
	}
	id := req.GetLoraId()
	if id == "" {
		return &pb.LoadLoRAAdapterResponse{Success: false, Message: "lora_id is required", LoadedLoraIds: sv.loadedIDs()}, nil
	}
	sv.mu.Lock()
	_, taken := sv.loraIDs[id]
	sv.mu.Unlock()
	if taken {
		return &pb.LoadLoRAAdapterResponse{Success: false, Message: "The lora_id '" + id + "' is already loaded.",
			LoadedLoraIds: sv.loadedIDs()}, nil
	}
	if e := sv.s.LoadAdapter(req.GetLoraName(), req.GetLoraPath(), ""); e != nil {
		return &pb.LoadLoRAAdapterResponse{Success: false, Message: e.Message, LoadedLoraIds: sv.loadedIDs()}, nil
	}
	sv.mu.Lock()
	sv.loraIDs[id] = loraEntry{name: req.GetLoraName(), path: req.GetLoraPath(), pinned: req.GetPinned()}
	sv.mu.Unlock()
	return &pb.LoadLoRAAdapterResponse{Success: true, LoadedLoraIds: sv.loadedIDs()}, nil
}

// UnloadLoRAAdapter removes the adapter named lora_name (and its lora_id).
func (sv *Service) UnloadLoRAAdapter(_ context.Context, req *pb.UnloadLoRAAdapterRequest) (*pb.UnloadLoRAAdapterResponse, error) {
	if sv.s.Adapters() == nil {
		return nil, errNoLoRA
	}
	name := req.GetLoraName()
	if e := sv.s.UnloadAdapter(name); e != nil {
		return &pb.UnloadLoRAAdapterResponse{Success: false, Message: e.Message, LoadedLoraIds: sv.loadedIDs()}, nil
	}
	sv.mu.Lock()
	for id, ent := range sv.loraIDs {
		if ent.name == name {
			delete(sv.loraIDs, id)
		}
	}
	sv.mu.Unlock()
	return &pb.UnloadLoRAAdapterResponse{Success: true, LoadedLoraIds: sv.loadedIDs()}, nil
}

// ListLoadedLoRAAdapters lists every served adapter: those loaded over
// gRPC with their ids, the others (--lora-modules, the HTTP API) with
// their name as id.
func (sv *Service) ListLoadedLoRAAdapters(context.Context, *pb.ListLoadedLoRAAdaptersRequest) (*pb.ListLoadedLoRAAdaptersResponse, error) {
	if sv.s.Adapters() == nil {
		return nil, errNoLoRA
	}
	byName := map[string]string{}
	sv.mu.Lock()
	pinned := map[string]bool{}
	for id, ent := range sv.loraIDs {
		byName[ent.name] = id
		pinned[ent.name] = ent.pinned
	}
	sv.mu.Unlock()
	resp := &pb.ListLoadedLoRAAdaptersResponse{}
	for _, a := range sv.s.Adapters().List() {
		id, ok := byName[a.Name]
		if !ok {
			id = a.Name
		}
		resp.LoadedAdapters = append(resp.LoadedAdapters, &pb.LoadedLoRAAdapter{
			LoraId: id, LoraName: a.Name, LoraPath: a.Path, Pinned: pinned[a.Name]})
	}
	return resp, nil
}

// loadedIDs are the ids of every served adapter (sorted).
func (sv *Service) loadedIDs() []string {
	list, _ := sv.ListLoadedLoRAAdapters(context.Background(), nil)
	ids := make([]string, 0, len(list.GetLoadedAdapters()))
	for _, a := range list.GetLoadedAdapters() {
		ids = append(ids, a.GetLoraId())
	}
	slices.Sort(ids)
	return ids
}

// adapterName resolves GenerateRequest.lora_id: an id loaded over gRPC
// names its adapter; anything else is taken as the adapter's name.
func (sv *Service) adapterName(id string) string {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if ent, ok := sv.loraIDs[id]; ok {
		return ent.name
	}
	return id
}
