package replay

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// reportDigest runs src on opts and hashes the JSON report followed by every
// request row, so any change to what a run produces changes the digest.
func reportDigest(t *testing.T, src Source, opts Options) string {
	t.Helper()
	h := sha256.New()
	enc := json.NewEncoder(h)
	opts.Rows = func(r *RequestRow) error { return enc.Encode(r) }
	rep, err := Run(src, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(h, []*Report{rep}); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestRunReportsUnchangedByOptimisation pins the reports of two fixed runs
// to digests recorded before the replay's hot path was optimised: speedups
// must not change a single byte of what a run reports. (Re-recorded once
// when the summary gained gpus and output_token_throughput_per_gpu; with
// those two fields left out the old digests still held.)
func TestRunReportsUnchangedByOptimisation(t *testing.T) {
	tests := []struct {
		name string
		src  func() Source
		opts Options
		want string
	}{
		{
			name: "three requests on one worker",
			src: func() Source {
				return &sliceSource{reqs: []Request{
					{Index: 0, Arrival: 0, Prompt: append(seqPrompt(1, 16), seqPrompt(2, 16)...), OutputTokens: 3},
					{Index: 1, Arrival: 5 * time.Millisecond, Prompt: append(seqPrompt(1, 16), seqPrompt(3, 16)...), OutputTokens: 2},
					{Index: 2, Arrival: 100 * time.Millisecond, Prompt: seqPrompt(4, 16), OutputTokens: 1},
				}}
			},
			opts: Options{Workers: []WorkerSpec{{Name: "w0", Engine: fixedTimingConfig()}}},
			want: "e928b3ca2242a559bbf9d7808cc934afb4e6a62e4938502e1b7a6ca1dfda1bf8",
		},
		{
			name: "2000 synthetic requests on 4 workers kv_aware",
			src: func() Source {
				src, err := NewSynthetic(SyntheticOptions{Requests: 2000, Rate: 400,
					Input: Dist{Kind: DistFixed, A: 128}, Output: Dist{Kind: DistFixed, A: 64},
					PrefixGroups: 32, PrefixTokens: 128, Seed: 7})
				if err != nil {
					t.Fatal(err)
				}
				return src
			},
			opts: Options{Workers: fleet(4, engine.DefaultConfig()), Router: KVAware, Seed: 7},
			want: "a9125c65ceb00f97a5fd796fee411d1f4bf7240ddd81b7102f30315e1b712a91",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := reportDigest(t, tc.src(), tc.opts); got != tc.want {
				t.Errorf("report digest = %s, want %s", got, tc.want)
			}
		})
	}
}
