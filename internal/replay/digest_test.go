package replay

import (
	"bytes"
	"encoding/json"
	"flag"
	"path/filepath"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

// updateGolden rewrites the golden files in testdata instead of comparing.
var updateGolden = flag.Bool("update", false, "rewrite the golden reports in testdata")

// reportText runs src on opts and returns every request row (one JSON
// line each, in the order the run emits them) followed by the JSON report,
// so any change to what a run produces changes the text.
func reportText(t *testing.T, src Source, opts Options) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	opts.Rows = func(r *RequestRow) error { return enc.Encode(r) }
	rep, err := Run(src, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&buf, []*Report{rep}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestRunReportsUnchangedByOptimisation pins the reports of two fixed runs
// to the text recorded before the replay's hot path was optimised
// (testdata/reports; pinned first as SHA-256 digests of the same bytes,
// noted beside each case): speedups must not change a single byte of what a
// run reports. (Re-recorded when the summary gained gpus and
// output_token_throughput_per_gpu — with those two fields left out the old
// text still held — and when the hit-rate timeline began writing null for
// an interval where no request got its first token: nine 0 → null lines.)
func TestRunReportsUnchangedByOptimisation(t *testing.T) {
	tests := []struct {
		name string
		src  func() Source
		opts Options
		file string
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
			file: "three-requests.txt", // sha256 e928b3ca2242a559bbf9d7808cc934afb4e6a62e4938502e1b7a6ca1dfda1bf8
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
			file: "synthetic-2000-kv-aware.txt", // sha256 ba39efd17ba4b9c3d3e9e077691c6327ff3488032b41233565a029a0a01addca
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			testutil.Golden(t, filepath.Join("testdata", "reports", tc.file), reportText(t, tc.src(), tc.opts), *updateGolden)
		})
	}
}
