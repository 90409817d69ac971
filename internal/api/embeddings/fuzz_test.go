package embeddings

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/testutil/testcfg"
)

// FuzzEmbeddingsBody parses arbitrary /v1/embeddings bodies with the
// surface's own parser on a server with small budgets: every body is
// refused with a 4xx naming its problem, or becomes at most
// --max-embedding-inputs prompts, each non-empty and within the context
// length. Never a panic.
func FuzzEmbeddingsBody(f *testing.F) {
	for _, seed := range []string{
		`{"input":"hello"}`,
		`{"input":["a","b"],"encoding_format":"base64","dimensions":7}`,
		`{"input":[[1,2],[3]]}`,
		`{"input":[]}`,
		`{"input":[[1],[2],[3],[4],[5],[6],[7],[8],[9]]}`,
		`{"input":"x","dimensions":0}`,
		`{"input":[[-1]]}`,
		`{"model":"nope","input":"x"}`,
	} {
		f.Add([]byte(seed))
	}
	const maxInputs, maxLen = 8, 64
	opts := settings.Options{Model: settings.ModelOptions{ServedNames: []string{"m"}, MaxModelLen: maxLen},
		EmbeddingDim: 16, Budgets: settings.BudgetOptions{MaxEmbeddingInputs: maxInputs}}
	// A real engine (not run: the parser only asks it whether a prompt
	// could ever be admitted).
	e, err := engine.New(testcfg.Load(f, nil).EngineConfig(nil), engine.Options{})
	if err != nil {
		f.Fatal(err)
	}
	s := pipeline.NewServer(opts, []*engine.Engine{e}, settings.Deps{},
		func(*pipeline.Server) http.Handler { return http.NotFoundHandler() })
	es := EmbeddingsSurface{Basis: NewEmbedBasis(1, 16)}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest("POST", "/v1/embeddings", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		o, e := wire.DecodeBody(httptest.NewRecorder(), r, 1<<20)
		var g *pipeline.GenRequest
		if e == nil {
			g, e = es.Parse(s, o, r)
		}
		if e != nil {
			if e.Status < 400 || e.Status > 499 || e.Message == "" {
				t.Fatalf("refusal %d %q", e.Status, e.Message)
			}
			return
		}
		if n := len(g.Prompts); n == 0 || n > maxInputs {
			t.Fatalf("%d prompts accepted (budget %d)", n, maxInputs)
		}
		for i, p := range g.Prompts {
			if len(p.IDs) == 0 || len(p.IDs) > maxLen {
				t.Fatalf("prompt %d has %d tokens", i, len(p.IDs))
			}
		}
	})
}
