package vllm_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/mocker-server/mocker-server/internal/grpcfront/vllm/vllmpb"
)

// rawCodec sends bytes as they are: what a client with another idea of the
// message, or a broken one, puts on the wire.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *v.(*[]byte), nil }
func (rawCodec) Unmarshal(b []byte, v any) error {
	*v.(*[]byte) = append([]byte(nil), b...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// rawGenerate sends body as a GenerateRequest and returns the responses'
// bytes and the call's status.
func (e *env) rawGenerate(ctx context.Context, body []byte) (int, error) {
	st, err := e.conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true},
		"/vllm.grpc.engine.VllmEngine/Generate", grpc.ForceCodec(rawCodec{}))
	if err != nil {
		return 0, err
	}
	if err := st.SendMsg(&body); err != nil {
		return 0, err
	}
	if err := st.CloseSend(); err != nil {
		return 0, err
	}
	n := 0
	for {
		var out []byte
		if err := st.RecvMsg(&out); err != nil {
			if err == io.EOF {
				return n, nil
			}
			return n, err
		}
		n++
	}
}

// Bad input gets the status vLLM's server gives it (a request error is
// INVALID_ARGUMENT, its ValueError; undecodable bytes are INTERNAL, grpcio's
// "Exception deserializing request"), except the message bound, which
// vLLM's server does not have (it sets no limit): a message above
// --max-request-body-bytes is RESOURCE_EXHAUSTED before it is decoded, so
// memory stays bounded. The server keeps serving after each.
func TestBadInput(t *testing.T) {
	e := start(t, map[string]any{"max_model_len": 2048})
	ctx := ctxTimeout(t, 60*time.Second)
	valid, _ := proto.Marshal(tokenized("u", seq(1, 8), &vllmpb.SamplingParams{MaxTokens: u32(3)}, true))
	unknown := protowire.AppendTag(append([]byte(nil), valid...), 999, protowire.BytesType)
	unknown = protowire.AppendBytes(unknown, []byte("from a newer proto"))
	huge := make([]byte, 0, 100<<20+16)
	huge = protowire.AppendTag(huge, 3, protowire.BytesType) // text, 100 MB
	huge = protowire.AppendBytes(huge, []byte(strings.Repeat("a", 100<<20)))
	tooLong, _ := proto.Marshal(tokenized("l", seq(1, 2049), nil, true))

	for _, tc := range []struct {
		name string
		body []byte
		code codes.Code
		msg  string
	}{
		{"malformed protobuf", []byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f}, codes.Internal, "unmarshal"},
		{"wrong wire type", []byte{0x12, 0x03, 0x10, 0x80}, codes.Internal, "unmarshal"},
		{"unknown fields", unknown, codes.OK, ""},
		{"empty token list", mustMarshal(tokenized("e", nil, nil, true)), codes.InvalidArgument, "empty"},
		{"no input", mustMarshal(&vllmpb.GenerateRequest{RequestId: "n"}), codes.InvalidArgument, "empty"},
		{"id outside the vocabulary", mustMarshal(tokenized("v", []uint32{1, 2, 4_000_000_000}, nil, true)), codes.InvalidArgument, "Token id 4000000000 is out of vocabulary"},
		{"prompt longer than the context", tooLong, codes.InvalidArgument, "maximum context length is 2048"},
		{"max_tokens 0", mustMarshal(tokenized("m", seq(1, 4), &vllmpb.SamplingParams{MaxTokens: u32(0)}, true)), codes.InvalidArgument, "max_tokens must be at least 1"},
		{"negative temperature", mustMarshal(tokenized("t", seq(1, 4), &vllmpb.SamplingParams{Temperature: proto.Float32(-1)}, true)), codes.InvalidArgument, "temperature"},
		{"bad regex constraint", mustMarshal(tokenized("r", seq(1, 4), &vllmpb.SamplingParams{Constraint: &vllmpb.SamplingParams_Regex{Regex: "("}}, true)), codes.InvalidArgument, ""},
		{"100 MB message", huge, codes.ResourceExhausted, "larger than max"},
	} {
		n, err := e.rawGenerate(ctx, tc.body)
		st := status.Convert(err)
		if st.Code() != tc.code || !strings.Contains(st.Message(), tc.msg) {
			t.Errorf("%s: %v, want %v containing %q", tc.name, err, tc.code, tc.msg)
		}
		if tc.code == codes.OK && n < 2 {
			t.Errorf("%s: %d responses", tc.name, n)
		}
		// Still serving.
		if _, err := e.generate(t, ctx, tokenized("ok", seq(1, 4), &vllmpb.SamplingParams{MaxTokens: u32(2)}, false)); err != nil {
			t.Fatalf("after %s: %v", tc.name, err)
		}
	}
}

func mustMarshal(m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}
