package api

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/kv"
	"github.com/mocker-server/mocker-server/internal/metrics"
	"github.com/openai/openai-go/v3"
)

func cosine(a, b []float64) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += a[i] * b[i]
		na += a[i] * a[i]
		nb += b[i] * b[i]
	}
	return dot / math.Sqrt(na*nb)
}

func norm(v []float64) float64 { return math.Sqrt(cosineDot(v, v)) }

func cosineDot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// embed asks the server for one float vector through the official Go SDK.
func embed(t *testing.T, c openai.Client, text string, opts ...func(*openai.EmbeddingNewParams)) []float64 {
	t.Helper()
	p := openai.EmbeddingNewParams{
		Model:          "mocker-model",
		Input:          openai.EmbeddingNewParamsInputUnion{OfString: openai.String(text)},
		EncodingFormat: openai.EmbeddingNewParamsEncodingFormatFloat,
	}
	for _, o := range opts {
		o(&p)
	}
	resp, err := c.Embeddings.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Data) != 1 {
		t.Fatalf("data = %d items", len(resp.Data))
	}
	return resp.Data[0].Embedding
}

func TestEmbeddings_SDKFloatVectorsAreDeterministicUnitNorm(t *testing.T) {
	env := startServer(t, nil)
	c := env.sdkClient()
	a := embed(t, c, "the quick brown fox")
	b := embed(t, c, "the quick brown fox")
	if len(a) != 1024 {
		t.Fatalf("default dimension = %d, want 1024", len(a))
	}
	if math.Abs(norm(a)-1) > 1e-6 {
		t.Errorf("norm = %v", norm(a))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same input, different vectors at %d: %v %v", i, a[i], b[i])
		}
	}
	short := embed(t, c, "the quick brown fox", func(p *openai.EmbeddingNewParams) { p.Dimensions = openai.Int(64) })
	if len(short) != 64 || math.Abs(norm(short)-1) > 1e-6 {
		t.Errorf("dimensions 64: len %d norm %v", len(short), norm(short))
	}
	// Matryoshka: the shorter vector is the renormalised head of the long one.
	if cos := cosine(short, a[:64]); cos < 0.999999 {
		t.Errorf("dimensions 64 is not the head of the full vector: cosine %v", cos)
	}
}

func TestEmbeddings_SharedPrefixGivesNearbyVectors(t *testing.T) {
	env := startServer(t, nil)
	c := env.sdkClient()
	prefix := strings.Repeat("shared context words ", 30)
	a := embed(t, c, prefix+"alpha ending")
	b := embed(t, c, prefix+"omega finish")
	far := embed(t, c, "completely unrelated input text")
	if cos := cosine(a, b); cos < 0.8 {
		t.Errorf("shared prefix cosine = %v, want > 0.8", cos)
	}
	if cos := cosine(a, far); math.Abs(cos) > 0.3 {
		t.Errorf("unrelated cosine = %v, want near 0", cos)
	}
}

func TestEmbeddings_Base64IsLittleEndianFloat32OfTheFloatVector(t *testing.T) {
	env := startServer(t, nil)
	floats := jsonOf(t, env.post("/v1/embeddings", `{"input":["a b c","d e"],"encoding_format":"float"}`).Body)
	r := env.post("/v1/embeddings", `{"input":["a b c","d e"],"encoding_format":"base64"}`)
	if r.Status != 200 {
		t.Fatalf("status %d %s", r.Status, r.Body)
	}
	b64 := jsonOf(t, r.Body)
	fd := floats["data"].([]any)
	bd := b64["data"].([]any)
	if len(fd) != 2 || len(bd) != 2 {
		t.Fatalf("data lengths %d %d", len(fd), len(bd))
	}
	for i := range fd {
		want := fd[i].(map[string]any)["embedding"].([]any)
		raw, err := base64.StdEncoding.DecodeString(bd[i].(map[string]any)["embedding"].(string))
		if err != nil {
			t.Fatal(err)
		}
		if len(raw) != 4*len(want) {
			t.Fatalf("base64 bytes %d, want %d", len(raw), 4*len(want))
		}
		for k := range want {
			got := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*k:]))
			if float64(got) != want[k].(float64) {
				t.Fatalf("item %d component %d: base64 %v, float %v", i, k, got, want[k])
			}
		}
	}
	u := b64["usage"].(map[string]any)
	if u["prompt_tokens"] != u["total_tokens"] || u["completion_tokens"] != float64(0) {
		t.Errorf("usage = %v", u)
	}
	if !strings.HasPrefix(b64["id"].(string), "embd-") || b64["object"] != "list" {
		t.Errorf("id/object = %v %v", b64["id"], b64["object"])
	}
}

func TestEmbeddings_InputForms(t *testing.T) {
	env := startServer(t, nil)
	tok := env.post("/tokenize", `{"prompt":"hello there world"}`)
	ids := jsonOf(t, tok.Body)["tokens"].([]any)
	idText := make([]string, len(ids))
	for i, v := range ids {
		idText[i] = strconv.FormatInt(int64(v.(float64)), 10)
	}
	idsJSON := "[" + strings.Join(idText, ",") + "]"
	text := jsonOf(t, env.post("/v1/embeddings", `{"input":"hello there world"}`).Body)
	byIDs := jsonOf(t, env.post("/v1/embeddings", `{"input":`+idsJSON+`}`).Body)
	nested := jsonOf(t, env.post("/v1/embeddings", `{"input":[`+idsJSON+`,`+idsJSON+`]}`).Body)
	first := func(m map[string]any, i int) []any {
		return m["data"].([]any)[i].(map[string]any)["embedding"].([]any)
	}
	for i, v := range first(text, 0) {
		if first(byIDs, 0)[i] != v || first(nested, 1)[i] != v {
			t.Fatalf("component %d differs between string, ids and nested ids", i)
		}
	}
	if text["usage"].(map[string]any)["prompt_tokens"] != float64(len(ids)) {
		t.Errorf("usage = %v, want %d prompt tokens", text["usage"], len(ids))
	}
}

func TestEmbeddings_BadInputIsA400AndTheServerKeepsServing(t *testing.T) {
	env := startServer(t, map[string]any{"max_model_len": 64})
	for _, tc := range []struct{ name, body, param string }{
		{"missing input", `{"model":"mocker-model"}`, "input"},
		{"empty list", `{"input":[]}`, "input"},
		{"empty string", `{"input":""}`, "input"},
		{"wrong type", `{"input":5}`, "input"},
		{"bad format", `{"input":"x","encoding_format":"bytes"}`, "encoding_format"},
		{"zero dimensions", `{"input":"x","dimensions":0}`, "dimensions"},
		{"too many dimensions", `{"input":"x","dimensions":2048}`, "dimensions"},
		{"out of vocabulary", `{"input":[1,2,999999999]}`, "input"},
		{"too long", `{"input":"` + strings.Repeat("word ", 200) + `"}`, "input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := env.post("/v1/embeddings", tc.body)
			if r.Status != 400 {
				t.Fatalf("status %d, want 400: %s", r.Status, r.Body)
			}
			e := jsonOf(t, r.Body)["error"].(map[string]any)
			if e["param"] != tc.param || e["code"] != float64(400) {
				t.Errorf("error = %v, want param %q", e, tc.param)
			}
		})
	}
	if r := env.post("/v1/embeddings", `{"input":"still serving"}`); r.Status != 200 {
		t.Errorf("after bad input: %d %s", r.Status, r.Body)
	}
	if r := env.post("/v1/embeddings", `{"input":"x","model":"nope"}`); r.Status != 404 {
		t.Errorf("unknown model: %d", r.Status)
	}
}

// kvRecorder keeps every KV event the engines publish.
type kvRecorder struct {
	mu     sync.Mutex
	stored int // blocks stored
}

func (k *kvRecorder) PublishKVEvents(b engine.KVEventBatch) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, e := range b.Events {
		if e.Kind == kv.Stored {
			k.stored += len(e.BlockHashes)
		}
	}
}

func TestEmbeddings_ArePrefillOnlyEngineWorkInMetricsAndKVEvents(t *testing.T) {
	cfg := testConfig(t, map[string]any{"block_size": 16})
	reg := metrics.New(metrics.Options{Model: cfg.ServedName(), BlockSize: cfg.EffectiveBlockSize(), NumGPUBlocks: cfg.NumGPUBlocks, MaxModelLen: cfg.MaxModelLen, EnablePrefixCaching: true}, "test")
	rec := &kvRecorder{}
	env := startServerWith(t, cfg, func(r int) engine.Options {
		return engine.Options{Rank: r, Observer: reg.Observer(r), KVSink: rec}
	}, settings.Deps{Metrics: reg.Handler()})
	text := strings.Repeat("tokens for the prefill ", 20)
	r := env.post("/v1/embeddings", `{"input":"`+text+`"}`)
	if r.Status != 200 {
		t.Fatal(r.Body)
	}
	p := int(jsonOf(t, r.Body)["usage"].(map[string]any)["prompt_tokens"].(float64))
	// The same input again: its full blocks come from the prefix cache.
	env.post("/v1/embeddings", `{"input":"`+text+`"}`)
	m := env.Get("/metrics").Body
	for _, want := range []string{
		`vllm:prompt_tokens_total{engine="0",model_name="mocker-model"} ` + wire.Itoa(2*p),
		`vllm:generation_tokens_total{engine="0",model_name="mocker-model"} 0`,
		`vllm:request_success_total{engine="0",finished_reason="length",model_name="mocker-model"} 2`,
		`vllm:prefix_cache_hits_total{engine="0",model_name="mocker-model"} ` + wire.Itoa(p/16*16),
	} {
		if !strings.Contains(m, want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.stored != p/16 {
		t.Errorf("KV blocks stored = %d, want %d (full blocks of a %d-token prompt)", rec.stored, p/16, p)
	}
}
