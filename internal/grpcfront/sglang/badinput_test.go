package sglang_test

import (
	"io"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	pb "github.com/mocker-server/mocker-server/internal/grpcfront/sglang/sglangpb"
)

// rawCodec sends and receives messages as the bytes given, so a test can
// put anything on the wire.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return v.([]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" } // the content subtype the server expects

var _ encoding.Codec = rawCodec{}

const generateMethod = "/sglang.grpc.scheduler.SglangScheduler/Generate"

// rawGenerate sends body as a GenerateRequest and reads the stream to its
// end: the responses (decoded) and the final status.
func rawGenerate(t *testing.T, e *env, body []byte) ([]*pb.GenerateResponse, error) {
	t.Helper()
	s, err := e.conn.NewStream(ctx(t), &grpc.StreamDesc{ServerStreams: true}, generateMethod, grpc.ForceCodec(rawCodec{}))
	if err != nil {
		return nil, err
	}
	if err := s.SendMsg(body); err != nil && err != io.EOF {
		return nil, err
	}
	if err := s.CloseSend(); err != nil {
		return nil, err
	}
	var out []*pb.GenerateResponse
	for {
		var raw []byte
		if err := s.RecvMsg(&raw); err != nil {
			if err == io.EOF {
				return out, nil
			}
			return out, err
		}
		r := &pb.GenerateResponse{}
		if err := proto.Unmarshal(raw, r); err != nil {
			t.Fatalf("the server sent an undecodable response: %v", err)
		}
		out = append(out, r)
	}
}

func marshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBadInputGetsSGLangsStatusCodes: what SGLang's servicer answers to
// each kind of bad input, and never a panic (the worker keeps serving).
// Undecodable protobuf is INTERNAL (gRPC's answer to a request it cannot
// deserialize, in Python as in Go); unknown fields are ignored, as every
// protobuf parser does; request errors (no tokenized input, no ids, ids
// outside the vocabulary, a prompt longer than the context) are
// INVALID_ARGUMENT (SGLang's ValueError, and its scheduler's 400 aborts
// through abort_code_from_output); a message above the bound is
// RESOURCE_EXHAUSTED before any service code runs.
func TestBadInputGetsSGLangsStatusCodes(t *testing.T) {
	e := start(t, nil, workerOpts())
	valid := &pb.GenerateRequest{RequestId: "ok", Tokenized: &pb.TokenizedInput{InputIds: ids(100, 8)},
		SamplingParams: sampling(4)}

	cases := []struct {
		name string
		body []byte
		code codes.Code
		msg  string // part of the status message
	}{
		{"malformed protobuf", []byte{0x12, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01}, codes.Internal, "unmarshal"},
		{"truncated message", marshal(t, valid)[:9], codes.Internal, "unmarshal"},
		{"length beyond the message", protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte("id"))[:3], codes.Internal, "unmarshal"},
		{"no tokenized input", marshal(t, &pb.GenerateRequest{RequestId: "x", SamplingParams: sampling(4)}), codes.InvalidArgument, "Tokenized input must be provided"},
		{"empty token list", marshal(t, &pb.GenerateRequest{Tokenized: &pb.TokenizedInput{}, SamplingParams: sampling(4)}), codes.InvalidArgument, "empty"},
		{"token id outside the vocabulary", marshal(t, &pb.GenerateRequest{Tokenized: &pb.TokenizedInput{InputIds: []uint32{5, 1 << 30}}, SamplingParams: sampling(4)}), codes.InvalidArgument, "out of vocabulary"},
		{"prompt longer than the context", marshal(t, &pb.GenerateRequest{Tokenized: &pb.TokenizedInput{InputIds: ids(1, 9000)}, SamplingParams: sampling(4)}), codes.InvalidArgument, "exceeds the maximum allowed length"},
		{"top_p above 1", marshal(t, &pb.GenerateRequest{Tokenized: &pb.TokenizedInput{InputIds: ids(100, 8)}, SamplingParams: &pb.SamplingParams{TopP: 1.5}}), codes.InvalidArgument, "top_p"},
		{"data_parallel_rank out of range", marshal(t, &pb.GenerateRequest{Tokenized: &pb.TokenizedInput{InputIds: ids(100, 8)}, SamplingParams: sampling(4), DataParallelRank: 3}), codes.InvalidArgument, "data_parallel_rank"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := rawGenerate(t, e, c.body)
			if status.Code(err) != c.code || !strings.Contains(status.Convert(err).Message(), c.msg) {
				t.Fatalf("got %v, want %s containing %q", err, c.code, c.msg)
			}
		})
	}

	t.Run("unknown fields are ignored", func(t *testing.T) {
		body := marshal(t, valid)
		body = protowire.AppendTag(body, 999, protowire.VarintType)
		body = protowire.AppendVarint(body, 42)
		body = protowire.AppendTag(body, 1000, protowire.BytesType)
		body = protowire.AppendBytes(body, []byte("from a newer gateway"))
		resps, err := rawGenerate(t, e, body)
		if err != nil || len(resps) != 1 || len(resps[0].GetComplete().GetOutputIds()) != 4 {
			t.Fatalf("got %v, %v: want one GenerateComplete with 4 tokens", resps, err)
		}
	})

	t.Run("100 MB message", func(t *testing.T) {
		big := &pb.GenerateRequest{Tokenized: &pb.TokenizedInput{InputIds: ids(100, 8),
			OriginalText: strings.Repeat("x", 100<<20)}, SamplingParams: sampling(4)}
		_, err := rawGenerate(t, e, marshal(t, big))
		if status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("got %v, want RESOURCE_EXHAUSTED (the worker's message bound)", err)
		}
	})

	// The worker still serves after all of it.
	resps, err := rawGenerate(t, e, marshal(t, valid))
	if err != nil || len(resps) != 1 {
		t.Fatalf("after the bad input: %v, %v", resps, err)
	}
}

// TestSGLangsMessageBoundReadsA100MBMessage: with the message bound raised
// to SGLang's own (grpc.max_receive_message_length = 256 MiB, through
// --max-request-body-bytes), a 100 MB request is read and answered like
// any other: SGLang's server takes such a message, and the mock does too.
func TestSGLangsMessageBoundReadsA100MBMessage(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 100 MB")
	}
	e := start(t, map[string]any{"max_request_body_bytes": 256 << 20}, workerOpts())
	big := &pb.GenerateRequest{RequestId: "big", Tokenized: &pb.TokenizedInput{InputIds: ids(100, 8),
		OriginalText: strings.Repeat("y", 100<<20)}, SamplingParams: sampling(4)}
	resps, err := rawGenerate(t, e, marshal(t, big))
	if err != nil || len(resps) != 1 || len(resps[0].GetComplete().GetOutputIds()) != 4 {
		t.Fatalf("got %v, %v: want one GenerateComplete with 4 tokens", len(resps), err)
	}
}
