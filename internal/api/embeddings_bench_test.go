package api

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/api/embeddings"
	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/engine"
)

// BenchmarkEmbedTokens measures the vector computation alone: one
// 128-token input at the default 1024 dimensions.
func BenchmarkEmbedTokens(b *testing.B) {
	ids := make([]uint32, 128)
	for i := range ids {
		ids[i] = uint32(1000 + 37*i)
	}
	dst := make([]float32, 1024)
	eb := embeddings.NewEmbedBasis(0, 1024)
	eb.Table()
	b.ReportAllocs()
	for b.Loop() {
		eb.Embed(dst, ids, 1024)
	}
	b.ReportMetric(float64(b.N*len(ids))/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkEmbeddingsServer measures /v1/embeddings end to end over HTTP
// on a real server with no simulated delay (speedup inf): requests of 8
// inputs of about 128 tokens, in both encodings, one client.
func BenchmarkEmbeddingsServer(b *testing.B) {
	for _, format := range []string{"float", "base64"} {
		b.Run(format, func(b *testing.B) {
			env := startServerWith(b, testConfig(b, nil), func(r int) engine.Options { return engine.Options{Rank: r} }, settings.Deps{Now: fixedNow})
			inputs := make([]string, 8)
			for i := range inputs {
				inputs[i] = `"` + strings.Repeat("word"+strconv.Itoa(i)+" ", 64) + `"`
			}
			body := `{"input":[` + strings.Join(inputs, ",") + `],"encoding_format":"` + format + `"}`
			var tokens int
			b.ResetTimer()
			for b.Loop() {
				resp, err := env.client.Post(env.URL+"/v1/embeddings", "application/json", strings.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				out, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("%d %s", resp.StatusCode, out)
				}
				if tokens == 0 {
					i := strings.Index(string(out), `"prompt_tokens":`)
					tokens, _ = strconv.Atoi(strings.SplitN(string(out[i+16:]), ",", 2)[0])
				}
			}
			b.ReportMetric(float64(b.N*len(inputs))/b.Elapsed().Seconds(), "inputs/s")
			b.ReportMetric(float64(b.N*tokens)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}
