#!/usr/bin/env python3
"""A Python gRPC client of the mock's gRPC front ends, written against the
upstream protos only (stubs generated at test time into STUBS): it streams a
generation and aborts another, and prints what it saw as one JSON line.

usage: pyclient.py STUBS ADDR {sglang|vllm} {stream|abort|cancel} [IDS...]

stream: Generate(stream=True) of the ids with 16 new tokens; prints the
        streamed token ids and the final finish_reason.
abort:  starts a long stream, waits for its first chunk, calls Abort with
        its request id and reads the stream to its end; prints how it ended.
cancel: starts a long stream, waits for its first chunk and cancels the call
        on the client side; prints how it ended.
"""

import json
import sys

import grpc

stubs, addr, service, mode = sys.argv[1:5]
prompt = [int(x) for x in sys.argv[5:]]
sys.path.insert(0, stubs)

if service == "sglang":
    import sglang_scheduler_pb2 as pb
    import sglang_scheduler_pb2_grpc as pb_grpc

    def request(rid, max_new):
        return pb.GenerateRequest(
            request_id=rid,
            stream=True,
            tokenized=pb.TokenizedInput(input_ids=prompt),
            sampling_params=pb.SamplingParams(
                temperature=1.0, top_p=1.0, top_k=-1, repetition_penalty=1.0,
                max_new_tokens=max_new),
        )

    def abort(stub, rid):
        return stub.Abort(pb.AbortRequest(request_id=rid, reason="client abort"))

    stub = pb_grpc.SglangSchedulerStub(grpc.insecure_channel(addr))
else:
    import vllm_engine_pb2 as pb
    import vllm_engine_pb2_grpc as pb_grpc

    def request(rid, max_new):
        return pb.GenerateRequest(
            request_id=rid,
            stream=True,
            tokenized=pb.TokenizedInput(input_ids=prompt),
            sampling_params=pb.SamplingParams(max_tokens=max_new),
        )

    def abort(stub, rid):
        return stub.Abort(pb.AbortRequest(request_ids=[rid]))

    stub = pb_grpc.VllmEngineStub(grpc.insecure_channel(addr))


def ending(call):
    """Reads the rest of a stream; returns (finish_reason, status code name)."""
    reason = None
    try:
        for resp in call:
            if resp.HasField("complete"):
                reason = resp.complete.finish_reason
        return reason, "OK"
    except grpc.RpcError as err:
        return reason, err.code().name


out = {"mode": mode}
if mode == "stream":
    tokens, reason = [], None
    for resp in stub.Generate(request("py-stream", 16), timeout=30):
        if resp.HasField("chunk"):
            tokens.extend(resp.chunk.token_ids)
        elif resp.HasField("complete"):
            reason = resp.complete.finish_reason
    out.update(tokens=tokens, finish_reason=reason)
else:
    call = stub.Generate(request("py-" + mode, 4000), timeout=60)
    first = next(call)
    out["first_chunk_tokens"] = len(first.chunk.token_ids)
    if mode == "abort":
        abort(stub, "py-abort")
    else:
        call.cancel()
    out["finish_reason"], out["code"] = ending(call)
print(json.dumps(out))
