package sglang

import (
	"context"
	"math"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/mocker-server/mocker-server/internal/grpcfront/sglang/sglangpb"
)

// GetModelInfo describes the served model as SGLang's servicer does, from
// what the mock knows of it: its path and names, the context length, the
// tokenizer's vocabulary and end-of-sequence id.
func (sv *Service) GetModelInfo(context.Context, *pb.GetModelInfoRequest) (*pb.GetModelInfoResponse, error) {
	o := sv.s.Opts()
	tok := sv.s.Tokenizer()
	tokPath := o.Model.Tokenizer
	if tokPath == "" {
		tokPath = o.Model.Path
	}
	n := o.Model.MaxModelLen
	maxInput := sv.maxReqInputLen()
	return &pb.GetModelInfoResponse{
		ModelPath:        o.Model.Path,
		TokenizerPath:    tokPath,
		IsGeneration:     o.Pooling.Generates(),
		WeightVersion:    "default",
		ServedModelName:  o.Model.ServedName(),
		MaxContextLength: int32(n),
		VocabSize:        int32(tok.VocabSize()),
		EosTokenIds:      []int32{int32(tok.EOS())},
		MaxReqInputLen:   int32(maxInput),
	}, nil
}

// maxReqInputLen is SGLang's max_req_input_len: the longest prompt the
// scheduler takes, one token short of the context and of the pool.
func (sv *Service) maxReqInputLen() int {
	o := sv.s.Opts()
	n := o.Model.MaxModelLen - 1
	if c := o.SGLang; c != nil && c.MaxTotalTokens > 0 {
		n = min(n, c.MaxTotalTokens-1)
	}
	return n
}

// serverArgs are SGLang's server arguments the mock has, under SGLang's
// names (the HTTP API's /get_server_info reports the same).
func (sv *Service) serverArgs() map[string]any {
	o := sv.s.Opts()
	args := map[string]any{
		"model_path":        o.Model.Path,
		"served_model_name": o.Model.ServedName(),
		"context_length":    o.Model.MaxModelLen,
		"random_seed":       o.Seed,
		"dp_size":           len(sv.s.Engines()),
	}
	if c := o.SGLang; c != nil {
		policy := c.SchedulePolicy
		if policy == "dfs_weight" {
			policy = "dfs-weight"
		}
		args["page_size"] = c.PageSize
		args["max_running_requests"] = c.MaxRunningRequests
		args["max_total_num_tokens"] = c.MaxTotalTokens
		args["max_prefill_tokens"] = c.MaxPrefillTokens
		args["chunked_prefill_size"] = c.ChunkedPrefillSize
		args["schedule_policy"] = policy
		args["schedule_conservativeness"] = c.ScheduleConservativeness
		args["disable_radix_cache"] = c.DisableRadixCache
	}
	return args
}

// GetServerInfo reports the server arguments, the scheduler's limits and
// the runtime state: requests in flight (HTTP and gRPC share the
// pipeline), whether an engine is paused (fleet pause), when this service
// last received output from an engine (SGLang's last_receive_tstamp; 0
// before the first) and the uptime.
func (sv *Service) GetServerInfo(context.Context, *pb.GetServerInfoRequest) (*pb.GetServerInfoResponse, error) {
	args, err := structpb.NewStruct(sv.serverArgs())
	if err != nil {
		return nil, status.Errorf(codes.Internal, "server arguments: %v", err)
	}
	maxTotal := 0
	if c := sv.s.Opts().SGLang; c != nil {
		maxTotal = c.MaxTotalTokens
	}
	info, err := structpb.NewStruct(map[string]any{
		"max_total_num_tokens": maxTotal,
		"max_req_input_len":    sv.maxReqInputLen(),
	})
	if err != nil {
		return nil, status.Errorf(codes.Internal, "scheduler info: %v", err)
	}
	now := time.Now()
	paused := false
	for _, e := range sv.s.Engines() {
		paused = paused || e.Paused()
	}
	var last float64
	if ns := sv.lastReceive.Load(); ns != 0 {
		last = float64(ns) / 1e9
	}
	return &pb.GetServerInfoResponse{
		IsPaused:             paused,
		LastReceiveTimestamp: last,
		ServerArgs:           args,
		SchedulerInfo:        info,
		ActiveRequests:       int32(sv.s.InFlight()),
		UptimeSeconds:        now.Sub(sv.opts.Started).Seconds(),
		SglangVersion:        sv.s.Version(),
		ServerType:           "grpc",
		StartTime:            timestamppb.New(sv.opts.Started),
		MaxTotalNumTokens:    int32(maxTotal),
	}, nil
}

// loadSections are GetLoadsRequest.include's valid values (SGLang's
// LoadSnapshot.VALID_SECTIONS).
var loadSections = []string{"all", "core", "disagg", "lora", "memory", "queues", "spec"}

// GetLoads reports each DP rank's load from its engine: running and
// waiting requests and the KV pages in use. The mock keeps no
// speculative, LoRA-slot or disaggregation gauges per rank, so those
// sections are left out even when asked for; memory (the token capacity)
// and queues (the waiting queue) are filled.
func (sv *Service) GetLoads(_ context.Context, req *pb.GetLoadsRequest) (*pb.GetLoadsResponse, error) {
	include := req.GetInclude()
	if len(include) == 0 {
		include = []string{"all"}
	}
	var bad []string
	for _, sec := range include {
		if !slices.Contains(loadSections, sec) {
			bad = append(bad, "'"+sec+"'")
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return nil, status.Errorf(codes.InvalidArgument, "Invalid include sections: [%s]. Valid options: ['%s']",
			strings.Join(bad, ", "), strings.Join(loadSections, "', '"))
	}
	want := func(sec string) bool { return slices.Contains(include, "all") || slices.Contains(include, sec) }
	page, maxTotal, maxRunning := 1, 0, 0
	if c := sv.s.Opts().SGLang; c != nil {
		page, maxTotal, maxRunning = max(c.PageSize, 1), c.MaxTotalTokens, c.MaxRunningRequests
	}
	resp := &pb.GetLoadsResponse{Timestamp: time.Now().UTC().Format(time.RFC3339Nano), Version: sv.s.Version()}
	for rank, eng := range sv.s.Engines() {
		if req.DpRank != nil && int(req.GetDpRank()) != rank {
			continue
		}
		l := eng.Load()
		used := l.ActiveBlocks * page
		usage := 0.0
		if maxTotal > 0 {
			usage = math.Round(float64(used)/float64(maxTotal)*1e4) / 1e4
		}
		sl := &pb.SchedulerLoad{
			DpRank: int32(rank), NumRunningReqs: int32(l.Running), NumWaitingReqs: int32(l.Waiting),
			NumTotalReqs: int32(l.Running + l.Waiting), NumUsedTokens: int32(used),
			MaxTotalNumTokens: int32(maxTotal), TokenUsage: usage, Utilization: usage,
			MaxRunningRequests: int32(maxRunning),
		}
		if want("memory") {
			sl.Memory = &pb.MemoryMetrics{TokenCapacity: int32(maxTotal)}
		}
		if want("queues") {
			sl.Queues = &pb.QueueMetrics{Waiting: int32(l.Waiting)}
		}
		resp.Loads = append(resp.Loads, sl)
	}
	resp.DpRankCount = int32(len(resp.Loads))
	resp.Aggregate = aggregate(resp.Loads)
	return resp, nil
}

// aggregate sums the ranks' loads as SGLang's _compute_aggregate_protobuf.
func aggregate(loads []*pb.SchedulerLoad) *pb.AggregateMetrics {
	a := &pb.AggregateMetrics{}
	if len(loads) == 0 {
		return a
	}
	var usage, util float64
	for _, l := range loads {
		a.TotalRunningReqs += l.NumRunningReqs
		a.TotalWaitingReqs += l.NumWaitingReqs
		usage += l.TokenUsage
		util += l.Utilization
	}
	a.TotalReqs = a.TotalRunningReqs + a.TotalWaitingReqs
	n := float64(len(loads))
	a.AvgTokenUsage = math.Round(usage/n*1e4) / 1e4
	a.AvgUtilization = math.Round(util/n*1e4) / 1e4
	return a
}

// flushPoll is how often FlushCache retries while requests still hold the
// cache.
const flushPoll = 10 * time.Millisecond

// FlushCache empties every rank's radix cache when no request holds any of
// it. With timeout_s > 0 it waits up to that long for the ranks to go
// idle, as SGLang's scheduler does; otherwise, or when they stay busy, it
// answers success = false with SGLang's message (status OK).
func (sv *Service) FlushCache(ctx context.Context, req *pb.FlushCacheRequest) (*pb.FlushCacheResponse, error) {
	deadline := time.Now().Add(time.Duration(float64(req.GetTimeoutS()) * float64(time.Second)))
	pending := slices.Clone(sv.s.Engines())
	for {
		var busy = pending[:0]
		for _, eng := range pending {
			done, err := eng.ResetPrefixCache(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return nil, status.FromContextError(ctx.Err()).Err()
				}
				return nil, status.Error(codes.Internal, "Flush cache failed: the engine is not running")
			}
			if !done {
				busy = append(busy, eng)
			}
		}
		pending = busy
		if len(pending) == 0 {
			return &pb.FlushCacheResponse{Success: true, Message: "Cache flushed successfully"}, nil
		}
		if !time.Now().Before(deadline) {
			return &pb.FlushCacheResponse{Success: false,
				Message: "Cache not flushed: there are running or waiting requests."}, nil
		}
		select {
		case <-time.After(flushPoll):
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
}
