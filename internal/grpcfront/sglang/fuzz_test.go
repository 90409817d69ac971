package sglang

import (
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/mocker-server/mocker-server/internal/grpcfront/sglang/sglangpb"
)

// FuzzGenInput: any bytes that decode as a GenerateRequest become a typed
// input or a 400, never a panic, and a typed input never carries an id
// outside the vocabulary unreported.
func FuzzGenInput(f *testing.F) {
	m := uint32(8)
	for _, r := range []*pb.GenerateRequest{
		{Tokenized: &pb.TokenizedInput{InputIds: []uint32{1, 2, 3}}, SamplingParams: &pb.SamplingParams{MaxNewTokens: &m, TopP: 1}},
		{Tokenized: &pb.TokenizedInput{}},
		{SamplingParams: &pb.SamplingParams{TopP: 2, MinP: -1, N: 5, StopTokenIds: []uint32{1, 1 << 31}}},
	} {
		b, _ := proto.Marshal(r)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var req pb.GenerateRequest
		if proto.Unmarshal(b, &req) != nil {
			return
		}
		in, e := genInput(&req, 1000, 4096, 4095)
		if e != nil {
			if e.Status != 400 {
				t.Fatalf("status %d: %s", e.Status, e.Message)
			}
			return
		}
		if in.BadTokenID == "" && !in.EmptyPrompt {
			for _, id := range in.Prompts[0].IDs {
				if id >= 1000 {
					t.Fatalf("id %d outside the vocabulary unreported", id)
				}
			}
		}
	})
}

// FuzzDecodeKVBatch: the KV event bridge turns any payload into a batch or
// an error, never a panic.
func FuzzDecodeKVBatch(f *testing.F) {
	f.Add([]byte{0x93, 0xcb, 0, 0, 0, 0, 0, 0, 0, 0, 0x91, 0x98, 0xab, 'B', 'l', 'o', 'c', 'k', 'S', 't', 'o', 'r', 'e', 'd', 0x91, 0x01, 0xc0, 0x92, 0x01, 0x02, 0x02, 0xc0, 0xa3, 'G', 'P', 'U', 0xc0, 0x00})
	f.Add([]byte{0x93, 0x00, 0x91, 0x81, 0xa4, 't', 'y', 'p', 'e', 0xb0, 'A', 'l', 'l', 'B', 'l', 'o', 'c', 'k', 's', 'C', 'l', 'e', 'a', 'r', 'e', 'd', 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		var id uint64
		_, _ = decodeKVBatch(b, &id)
	})
}
