package api

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/metrics"
)

// poolingServer starts a --runner pooling server of the given task
// ("embed" or "classify") with extra configuration keys.
func poolingServer(t *testing.T, task string, overlay map[string]any) *testEnv {
	t.Helper()
	o := map[string]any{"runner": "pooling", "convert": task}
	for k, v := range overlay {
		o[k] = v
	}
	return startServer(t, o)
}

// rerankAnswer is vLLM's RerankResponse.
type rerankAnswer struct {
	ID    string `json:"id"`
	Model string `json:"model"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
	Results []struct {
		Index          int              `json:"index"`
		Document       *json.RawMessage `json:"document"`
		RelevanceScore float64          `json:"relevance_score"`
	} `json:"results"`
}

// scoreAnswer is vLLM's ScoreResponse.
type scoreAnswer struct {
	ID     string `json:"id"`
	Object string `json:"object"`
	Model  string `json:"model"`
	Data   []struct {
		Index  int     `json:"index"`
		Object string  `json:"object"`
		Score  float64 `json:"score"`
	} `json:"data"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

func decodeAs[T any](t *testing.T, r response) T {
	t.Helper()
	var v T
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	if err := json.Unmarshal([]byte(r.Body), &v); err != nil {
		t.Fatalf("%v: %s", err, r.Body)
	}
	return v
}

// tokens is the server's token count of a text (special tokens added).
func (e *testEnv) tokens(text string, special bool) int {
	return len(e.srv.Tokenizer().Encode(text, special))
}

func TestPooling_RoutesFollowTheRunnerAndTask(t *testing.T) {
	chat := `{"messages":[{"role":"user","content":"hi"}],"max_tokens":2}`
	cases := []struct {
		name    string
		overlay map[string]any
		ok      []string // paths that answer 200
		absent  []string // paths that answer 404 {"detail":"Not Found"}
	}{
		{"auto", nil,
			[]string{"/v1/chat/completions", "/v1/embeddings"},
			[]string{"/score", "/rerank", "/classify", "/pooling"}},
		{"generate", map[string]any{"runner": "generate"},
			[]string{"/v1/chat/completions"},
			[]string{"/v1/embeddings", "/score", "/rerank", "/classify", "/pooling"}},
		{"pooling embed", map[string]any{"runner": "pooling"},
			[]string{"/v1/embeddings", "/score", "/v1/score", "/rerank", "/v1/rerank", "/v2/rerank", "/pooling"},
			[]string{"/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/messages", "/v1/messages/count_tokens", "/classify"}},
		{"pooling classify (cross-encoder)", map[string]any{"runner": "pooling", "convert": "classify"},
			[]string{"/classify", "/score", "/rerank", "/pooling"},
			[]string{"/v1/chat/completions", "/v1/embeddings"}},
		{"pooling classify, 3 labels", map[string]any{"runner": "pooling", "convert": "classify", "num_labels": 3},
			[]string{"/classify", "/pooling"},
			[]string{"/v1/chat/completions", "/v1/embeddings", "/score", "/v1/score", "/rerank", "/v2/rerank"}},
	}
	bodies := map[string]string{
		"/v1/chat/completions": chat, "/v1/embeddings": `{"input":"hi"}`, "/classify": `{"input":"hi"}`,
		"/pooling": `{"input":"hi"}`,
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := startServer(t, c.overlay)
			for _, p := range c.ok {
				body, ok := bodies[p]
				if !ok {
					body = `{"query":"q","documents":["d"],"text_1":"q","text_2":["d"]}`
				}
				if r := env.post(p, body); r.Status != 200 {
					t.Errorf("POST %s: %d %s", p, r.Status, r.Body)
				}
			}
			for _, p := range c.absent {
				if r := env.post(p, chat); r.Status != 404 || r.Body != `{"detail":"Not Found"}` {
					t.Errorf("POST %s: %d %s, want 404 Not Found", p, r.Status, r.Body)
				}
			}
		})
	}
}

// The documented request examples of Cohere's and Jina's rerank APIs (and
// vLLM's own) run unchanged against each rerank path.
func TestRerank_DocumentedExamplesGetRankedResults(t *testing.T) {
	for _, task := range []string{"embed", "classify"} {
		env := poolingServer(t, task, map[string]any{"served_model_name": []any{"mocker-model",
			"rerank-v3.5", "jina-reranker-v2-base-multilingual", "BAAI/bge-reranker-base"}})
		files, _ := filepath.Glob("testdata/rerank/*.json")
		if len(files) != 3 {
			t.Fatalf("fixtures: %v", files)
		}
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var req struct {
				Query           string
				Documents       []string
				TopN            int   `json:"top_n"`
				ReturnDocuments *bool `json:"return_documents"`
			}
			if err := json.Unmarshal(raw, &req); err != nil {
				t.Fatal(err)
			}
			for _, path := range []string{"/rerank", "/v1/rerank", "/v2/rerank"} {
				name := task + " " + filepath.Base(f) + " " + path
				got := decodeAs[rerankAnswer](t, env.post(path, string(raw)))
				want := len(req.Documents)
				if req.TopN > 0 {
					want = req.TopN
				}
				if len(got.Results) != want || got.Model != "mocker-model" || !strings.HasPrefix(got.ID, "rerank-") {
					t.Fatalf("%s: %d results (want %d), model %q, id %q", name, len(got.Results), want, got.Model, got.ID)
				}
				usage := 0
				for _, d := range req.Documents {
					if task == "embed" {
						usage += env.tokens(req.Query, true) + env.tokens(d, true)
					} else {
						usage += env.tokens(req.Query, true) + env.tokens(d, false)
					}
				}
				if got.Usage.PromptTokens != usage || got.Usage.TotalTokens != usage {
					t.Errorf("%s: usage %+v, want %d", name, got.Usage, usage)
				}
				seen := map[int]bool{}
				for i, res := range got.Results {
					if seen[res.Index] || res.Index < 0 || res.Index >= len(req.Documents) {
						t.Fatalf("%s: bad index %d", name, res.Index)
					}
					seen[res.Index] = true
					if i > 0 && res.RelevanceScore > got.Results[i-1].RelevanceScore {
						t.Errorf("%s: results not sorted: %v after %v", name, res.RelevanceScore, got.Results[i-1].RelevanceScore)
					}
					if task == "classify" && !(res.RelevanceScore > 0 && res.RelevanceScore < 1) {
						t.Errorf("%s: a cross-encoder's sigmoid score out of (0,1): %v", name, res.RelevanceScore)
					}
					if req.ReturnDocuments != nil && !*req.ReturnDocuments {
						if res.Document != nil {
							t.Errorf("%s: return_documents false, got document %s", name, *res.Document)
						}
						continue
					}
					var doc struct {
						Text       string
						MultiModal any `json:"multi_modal"`
					}
					if res.Document == nil || json.Unmarshal(*res.Document, &doc) != nil || doc.Text != req.Documents[res.Index] {
						t.Errorf("%s: result %d document %v, want the text of document %d", name, i, res.Document, res.Index)
					}
				}
			}
		}
	}
}

// A bi-encoder's score is the cosine similarity of the two embeddings the
// server returns through the OpenAI SDK; a document scored against itself
// gets 1 and ranks first. The score and rerank calls go through the SDK's
// generic Post as a client of these vLLM extensions would.
func TestScore_BiEncoderIsTheCosineOfTheSDKEmbeddings(t *testing.T) {
	env := poolingServer(t, "embed", nil)
	c := env.sdkClient()
	query := "the quick brown fox jumps over the lazy dog"
	docs := []string{"an unrelated sentence about taxes", query, "the quick brown fox sleeps", "the quick brown"}
	var got scoreAnswer
	err := c.Post(context.Background(), "score", map[string]any{"model": "mocker-model", "text_1": query, "text_2": docs}, &got)
	if err != nil {
		t.Fatal(err)
	}
	q := embed(t, c, query)
	if got.Object != "list" || len(got.Data) != len(docs) || !strings.HasPrefix(got.ID, "score-") {
		t.Fatalf("answer %+v", got)
	}
	usage := 0
	for i, d := range docs {
		want := float64(float32(cosine(q, embed(t, c, d))))
		if got.Data[i].Index != i || got.Data[i].Object != "score" || math.Abs(got.Data[i].Score-want) > 1e-6 {
			t.Errorf("pair %d: %+v, want score %v (cosine of the embeddings)", i, got.Data[i], want)
		}
		usage += env.tokens(query, true) + env.tokens(d, true)
	}
	if got.Usage.PromptTokens != usage || got.Usage.TotalTokens != usage {
		t.Errorf("usage %+v, want %d", got.Usage, usage)
	}
	// The same pairs as N:N lists, and under the other field names.
	queries := slices.Repeat([]string{query}, len(docs))
	for _, keys := range [][2]string{{"text_1", "text_2"}, {"queries", "documents"}, {"queries", "items"}, {"data_1", "data_2"}} {
		var nn scoreAnswer
		err := c.Post(context.Background(), "score", map[string]any{keys[0]: queries, keys[1]: docs}, &nn, option.WithBaseURL(env.URL+"/"))
		if err != nil {
			t.Fatal(err)
		}
		for i := range docs {
			if nn.Data[i].Score != got.Data[i].Score {
				t.Errorf("%v pair %d: %v, 1:N gave %v", keys, i, nn.Data[i].Score, got.Data[i].Score)
			}
		}
	}
	var rr rerankAnswer
	if err := c.Post(context.Background(), "rerank", map[string]any{"query": query, "documents": docs, "top_n": 2}, &rr); err != nil {
		t.Fatal(err)
	}
	if len(rr.Results) != 2 || rr.Results[0].Index != 1 || rr.Results[0].RelevanceScore < 0.999999 {
		t.Errorf("rerank: the query itself must rank first with score 1: %+v", rr.Results)
	}
}

// A cross-encoder reads each pair as one sequence: N documents are N
// engine requests whose shared query prefix comes from the prefix cache.
func TestScore_CrossEncoderPairsAreSequencesSharingTheQueryPrefix(t *testing.T) {
	cfg := testConfig(t, map[string]any{"runner": "pooling", "convert": "classify", "block_size": 16})
	reg := metrics.New(metrics.Options{Model: cfg.ServedName(), BlockSize: cfg.EffectiveBlockSize(), NumGPUBlocks: cfg.NumGPUBlocks, MaxModelLen: cfg.MaxModelLen, EnablePrefixCaching: true}, "test")
	env := startServerWith(t, cfg, func(r int) engine.Options {
		return engine.Options{Rank: r, Observer: reg.Observer(r)}
	}, settings.Deps{Metrics: reg.Handler()})
	query := strings.Repeat("a long shared query about the capital cities of europe ", 8)
	docs := []string{"Paris", "Berlin", "Madrid", query}
	got := decodeAs[scoreAnswer](t, env.post("/score", mustJSON(t, map[string]any{"text_1": query, "text_2": docs})))
	q := env.tokens(query, true)
	best := 0
	for i, d := range got.Data {
		if d.Score <= 0 || d.Score >= 1 {
			t.Errorf("pair %d: sigmoid score %v out of (0,1)", i, d.Score)
		}
		if d.Score > got.Data[best].Score {
			best = i
		}
	}
	if best != 3 || math.Abs(got.Data[3].Score-float64(float32(1/(1+math.Exp(-5))))) > 1e-7 {
		t.Errorf("the query scored against itself: best %d, score %v, want pair 3 at sigmoid(5)", best, got.Data[3].Score)
	}
	raw := decodeAs[scoreAnswer](t, env.post("/score", mustJSON(t, map[string]any{"text_1": query, "text_2": docs, "use_activation": false})))
	if math.Abs(raw.Data[3].Score-5) > 1e-6 {
		t.Errorf("use_activation false: the self pair's logit %v, want 5 (10·cos − 5)", raw.Data[3].Score)
	}
	m := env.Get("/metrics").Body
	for _, want := range []string{
		`vllm:request_success_total{engine="0",finished_reason="length",model_name="mocker-model"} 8`,
		`vllm:generation_tokens_total{engine="0",model_name="mocker-model"} 0`,
	} {
		if !strings.Contains(m, want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
	hits := metricValue(t, m, `vllm:prefix_cache_hits_total{engine="0",model_name="mocker-model"}`)
	if hits < float64(7*(q/16)*16) {
		t.Errorf("prefix cache hits %v: 7 of the 8 pair sequences should reuse the %d-token query's full blocks", hits, q)
	}
}

func metricValue(t *testing.T, exposition, series string) float64 {
	t.Helper()
	for line := range strings.SplitSeq(exposition, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("no series %s", series)
	return 0
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestClassify_ProbabilitiesFromTheHeadAreDeterministic(t *testing.T) {
	env := poolingServer(t, "classify", map[string]any{"num_labels": 3})
	type answer struct {
		ID   string `json:"id"`
		Data []struct {
			Index      int       `json:"index"`
			Label      string    `json:"label"`
			Probs      []float64 `json:"probs"`
			NumClasses int       `json:"num_classes"`
		} `json:"data"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	body := `{"input":["I loved this film","The service was terrible","I loved this film"]}`
	a := decodeAs[answer](t, env.post("/classify", body))
	if !strings.HasPrefix(a.ID, "classify-") || len(a.Data) != 3 {
		t.Fatalf("%+v", a)
	}
	for i, d := range a.Data {
		sum, best := 0.0, 0
		for k, p := range d.Probs {
			sum += p
			if p > d.Probs[best] {
				best = k
			}
		}
		if d.Index != i || d.NumClasses != 3 || len(d.Probs) != 3 || math.Abs(sum-1) > 1e-6 || d.Label != "LABEL_"+strconv.Itoa(best) {
			t.Errorf("item %d: %+v (sum %v)", i, d, sum)
		}
	}
	if !slices.Equal(a.Data[0].Probs, a.Data[2].Probs) || slices.Equal(a.Data[0].Probs, a.Data[1].Probs) {
		t.Errorf("same input must give the same probs, different ones different: %v %v %v", a.Data[0].Probs, a.Data[1].Probs, a.Data[2].Probs)
	}
	if want := 2*env.tokens("I loved this film", true) + env.tokens("The service was terrible", true); a.Usage.PromptTokens != want {
		t.Errorf("usage %d, want %d", a.Usage.PromptTokens, want)
	}
	// use_activation false: the logits, whose softmax is the probs.
	l := decodeAs[answer](t, env.post("/classify", `{"input":"I loved this film","use_activation":false}`))
	var z float64
	for _, x := range l.Data[0].Probs {
		z += math.Exp(x)
	}
	for k, x := range l.Data[0].Probs {
		if math.Abs(math.Exp(x)/z-a.Data[0].Probs[k]) > 1e-6 {
			t.Errorf("softmax(logits)[%d] = %v, probs %v", k, math.Exp(x)/z, a.Data[0].Probs[k])
		}
	}
	// /pooling on a classifier returns the same probabilities.
	p := decodeAs[struct {
		ID   string `json:"id"`
		Data []struct {
			Object string    `json:"object"`
			Data   []float64 `json:"data"`
		} `json:"data"`
	}](t, env.post("/pooling", `{"input":"I loved this film"}`))
	if !strings.HasPrefix(p.ID, "pool-") || p.Data[0].Object != "pooling" || !slices.Equal(p.Data[0].Data, a.Data[0].Probs) {
		t.Errorf("/pooling %+v, want the probs %v", p, a.Data[0].Probs)
	}
}

func TestPooling_EmbedTaskReturnsTheEmbeddingsVectors(t *testing.T) {
	env := poolingServer(t, "embed", nil)
	c := env.sdkClient()
	for _, dims := range []int{0, 32} {
		body := map[string]any{"input": []string{"first input", "second input"}}
		var opts []func(*openai.EmbeddingNewParams)
		if dims > 0 {
			body["dimensions"] = dims
			opts = append(opts, func(p *openai.EmbeddingNewParams) { p.Dimensions = openai.Int(int64(dims)) })
		}
		p := decodeAs[struct {
			Data []struct {
				Index int       `json:"index"`
				Data  []float64 `json:"data"`
			} `json:"data"`
		}](t, env.post("/pooling", mustJSON(t, body)))
		for i, text := range []string{"first input", "second input"} {
			if want := embed(t, c, text, opts...); !slices.Equal(p.Data[i].Data, want) {
				t.Errorf("dims %d item %d: /pooling and /v1/embeddings differ", dims, i)
			}
		}
	}
}

// Bad input gets OpenAI-shaped 400s with vLLM's messages, and a huge
// document list is refused from its length before any engine work.
func TestPooling_BadInputIsA400(t *testing.T) {
	env := poolingServer(t, "embed", nil)
	many := make([]string, 10000)
	for i := range many {
		many[i] = "document " + strconv.Itoa(i)
	}
	cases := []struct {
		path, body, msg string
	}{
		{"/score", `{"text_1":["a","b"],"text_2":["a","b","c"]}`, "Input lengths must be either 1:1, 1:N or N:N"},
		{"/score", `{"text_1":[],"text_2":["a"]}`, "At least one text element must be given"},
		{"/score", `{"text_1":"a","text_2":[]}`, "At least one text_pair element must be given"},
		{"/score", `{"text_1":"a"}`, "Field required: text_2"},
		{"/score", `{"text_1":{"content":[]},"text_2":"a"}`, "MultiModalParam is not supported for mocker-model"},
		{"/score", `{"text_1":"a","text_2":[1]}`, "Invalid type for field 'text_2[0]': expected string"},
		{"/rerank", `{"query":["a"],"documents":["b"]}`, "Invalid type for field 'query': expected string"},
		{"/rerank", `{"query":"a","documents":[]}`, "At least one text_pair element must be given"},
		{"/rerank", mustJSON(t, map[string]any{"query": "q", "documents": many}), "documents has 10000 items, more than the limit of 2048 (--max-embedding-inputs)."},
		{"/v2/rerank", `{"query":"a","documents":["b"],"top_n":"2"}`, "Invalid type for field 'top_n': expected integer"},
		{"/pooling", `{"input":"a","task":"classify"}`, "Task classify is not supported, it must be one of the supported tasks: ['embed']"},
		{"/pooling", `{"input":""}`, "input must not be empty"},
		{"/invocations", `{"foo":1}`, "Cannot find suitable handler for request. Expected one of: ['EmbeddingRequest', 'RerankRequest', 'ScoreRequest', 'PoolingRequest']"},
	}
	for _, c := range cases {
		r := env.post(c.path, c.body)
		msg, _, _, code := errorOf(t, r)
		if r.Status != 400 || code != 400 || msg != c.msg {
			t.Errorf("%s %.60s: %d %q, want 400 %q", c.path, c.body, r.Status, msg, c.msg)
		}
	}
	if r := env.post("/rerank", `{"query":"still","documents":["serving"]}`); r.Status != 200 {
		t.Errorf("after bad input: %d %s", r.Status, r.Body)
	}
}

// /invocations sends each body shape to the handler vLLM's SageMaker route
// picks, among those the model has.
func TestInvocations_DispatchByBodyShape(t *testing.T) {
	gen := startServer(t, nil)
	for _, c := range []struct{ body, want string }{
		{`{"messages":[{"role":"user","content":"hi"}],"max_tokens":2}`, `"object":"chat.completion"`},
		{`{"prompt":"hi","max_tokens":2}`, `"object":"text_completion"`},
		{`{"input":"hi"}`, `"object":"embedding"`},
	} {
		if r := gen.post("/invocations", c.body); r.Status != 200 || !strings.Contains(r.Body, c.want) {
			t.Errorf("generate model, %s: %d %.200s", c.body, r.Status, r.Body)
		}
	}
	msg, _, _, _ := errorOf(t, gen.post("/invocations", `{"query":"q","documents":["d"]}`))
	if want := "Cannot find suitable handler for request. Expected one of: ['ChatCompletionRequest', 'CompletionRequest', 'EmbeddingRequest']"; msg != want {
		t.Errorf("rerank body on a generative model: %q", msg)
	}
	pool := poolingServer(t, "classify", nil)
	for _, c := range []struct{ body, want string }{
		{`{"query":"q","documents":["d","q"]}`, `"results":[{"index":1`},
		{`{"text_1":"q","text_2":["d"]}`, `"object":"score"`},
		{`{"input":"hi"}`, `"num_classes":1`},
	} {
		if r := pool.post("/invocations", c.body); r.Status != 200 || !strings.Contains(r.Body, c.want) {
			t.Errorf("cross-encoder, %s: %d %.200s", c.body, r.Status, r.Body)
		}
	}
	if r := pool.post("/invocations", `{"prompt":"hi"}`); r.Status != 400 {
		t.Errorf("a completion body on a pooling model: %d %s", r.Status, r.Body)
	}
}

// The chat form (messages) of /v1/embeddings, /classify and /pooling is
// one sequence: the conversation rendered with the chat template and
// vLLM's pooling defaults (no generation prompt, no extra special tokens),
// the very tokens /tokenize gives for it.
func TestPooling_ChatFormIsTheRenderedConversation(t *testing.T) {
	env := poolingServer(t, "embed", nil)
	msgs := `"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hello there"}]`
	tok := decodeAs[struct {
		Tokens []int `json:"tokens"`
	}](t, env.post("/tokenize", `{`+msgs+`,"add_generation_prompt":false}`))
	byIDs := decodeAs[struct {
		Data []struct {
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}](t, env.post("/v1/embeddings", mustJSON(t, map[string]any{"input": tok.Tokens})))
	for _, path := range []string{"/v1/embeddings", "/invocations"} {
		chat := decodeAs[struct {
			Data []struct {
				Embedding []float64 `json:"embedding"`
			} `json:"data"`
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
			} `json:"usage"`
		}](t, env.post(path, `{`+msgs+`}`))
		if len(chat.Data) != 1 || !slices.Equal(chat.Data[0].Embedding, byIDs.Data[0].Embedding) || chat.Usage.PromptTokens != len(tok.Tokens) {
			t.Errorf("%s: the chat form's embedding differs from the rendered tokens' (usage %d, want %d)", path, chat.Usage.PromptTokens, len(tok.Tokens))
		}
	}
	pool := decodeAs[struct {
		Data []struct {
			Data []float64 `json:"data"`
		} `json:"data"`
	}](t, env.post("/pooling", `{`+msgs+`}`))
	if len(pool.Data) != 1 || !slices.Equal(pool.Data[0].Data, byIDs.Data[0].Embedding) {
		t.Errorf("/pooling chat form differs")
	}
	if r := env.post("/pooling", `{"messages":[{"role":"user","content":"x"}],"add_generation_prompt":true,"continue_final_message":true}`); r.Status != 400 {
		t.Errorf("both chat flags: %d %s", r.Status, r.Body)
	}
	cls := poolingServer(t, "classify", map[string]any{"num_labels": 2})
	if r := cls.post("/classify", `{`+msgs+`}`); r.Status != 200 || !strings.Contains(r.Body, `"num_classes":2`) {
		t.Errorf("/classify chat form: %d %s", r.Status, r.Body)
	}
}

// The npm openai SDK against a pooling model: its (base64) embeddings,
// and score and rerank through its generic post, agree — the scores are
// the cosines of the SDK's own vectors.
func TestNodeSDK_PoolingScoresAreCosinesOfTheSDKEmbeddings(t *testing.T) {
	env := poolingServer(t, "embed", sdkKeyed)
	got := decodeInto[struct {
		Embeddings [][]float64
		Score      scoreAnswer
		Rerank     rerankAnswer
	}](t, runNodeSDK(t, env, "pooling")["pooling"])
	if len(got.Embeddings) != 4 || len(got.Score.Data) != 3 || len(got.Rerank.Results) != 2 {
		t.Fatalf("%+v", got)
	}
	for i, d := range got.Score.Data {
		want := float64(float32(cosine(got.Embeddings[0], got.Embeddings[i+1])))
		if math.Abs(d.Score-want) > 1e-6 {
			t.Errorf("score %d = %v, cosine of the SDK's vectors %v", i, d.Score, want)
		}
	}
	// documents reversed: [taxes, red fox, brown fox]; the query itself first.
	if got.Rerank.Results[0].Index != 2 || got.Rerank.Results[0].RelevanceScore < 0.999999 || got.Rerank.Results[1].Index != 1 {
		t.Errorf("rerank results %+v", got.Rerank.Results)
	}
}

// truncate_prompt_tokens keeps the last tokens, or the first with
// truncation_side "right"; the vector is that of the kept tokens.
func TestPooling_TruncationSide(t *testing.T) {
	env := poolingServer(t, "embed", nil)
	ids := []int{11, 12, 13, 14, 15, 16, 17, 18}
	vec := func(path string, body map[string]any) ([]float64, int) {
		a := decodeAs[struct {
			Data []struct {
				Embedding []float64 `json:"embedding"`
				Data      []float64 `json:"data"`
			} `json:"data"`
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
			} `json:"usage"`
		}](t, env.post(path, mustJSON(t, body)))
		return append(a.Data[0].Embedding, a.Data[0].Data...), a.Usage.PromptTokens
	}
	for side, kept := range map[string][]int{"": ids[5:], "left": ids[5:], "right": ids[:3]} {
		body := map[string]any{"input": ids, "truncate_prompt_tokens": 3}
		if side != "" {
			body["truncation_side"] = side
		}
		got, n := vec("/pooling", body)
		want, _ := vec("/v1/embeddings", map[string]any{"input": kept})
		if n != 3 || !slices.Equal(got, want) {
			t.Errorf("side %q: %d tokens, vector of %v expected", side, n, kept)
		}
	}
	msg, _, _, _ := errorOf(t, env.post("/pooling", `{"input":"x","truncation_side":"middle"}`))
	if msg != "truncation_side must be 'left' or 'right', got 'middle'" {
		t.Errorf("bad side: %q", msg)
	}
}

// FuzzPoolingHandlers sends arbitrary bodies to the pooling routes of a
// cross-encoder (/score, /rerank, /classify, /pooling) and to
// /invocations through the whole stack: every answer is a 200 with valid
// JSON or an error in vLLM's shape, never a panic, never another status.
func FuzzPoolingHandlers(f *testing.F) {
	for _, seed := range []struct {
		route uint8
		body  string
	}{
		{0, `{"text_1":"a b","text_2":["a b","c"]}`},
		{0, `{"queries":["a","b"],"documents":["c","d"],"use_activation":false}`},
		{1, `{"query":"q","documents":["x","q"],"top_n":1,"return_documents":false}`},
		{1, `{"query":{"content":[]},"documents":["x"]}`},
		{2, `{"input":[[1,2],[3]],"truncate_prompt_tokens":1,"truncation_side":"right"}`},
		{2, `{"messages":[{"role":"user","content":"hi"}]}`},
		{3, `{"input":"a","task":"classify","encoding_format":"base64"}`},
		{4, `{"query":"q","documents":["d"]}`},
		{4, `{"text_1":"a","text_2":"b"}`},
	} {
		f.Add([]byte(seed.body), seed.route)
	}
	handler := startFuzzServer(f, map[string]any{"runner": "pooling", "convert": "classify"})
	f.Fuzz(func(t *testing.T, body []byte, route uint8) {
		path := []string{"/score", "/rerank", "/classify", "/pooling", "/invocations"}[route%5]
		rec := postFuzz(handler, path, body)
		out := rec.Body.Bytes()
		switch rec.Code {
		case 200:
			if !json.Valid(out) {
				t.Fatalf("200 with invalid JSON: %q", tail(out))
			}
		case 400, 404, 413:
			var e wire.ErrorBody
			if err := json.Unmarshal(out, &e); err != nil || e.Error.Code != rec.Code || e.Error.Message == "" || e.Error.Type == "" {
				t.Fatalf("%d without vLLM's error shape: %q", rec.Code, out)
			}
		default:
			t.Fatalf("status %d for %s %q: %q", rec.Code, path, body, tail(out))
		}
	})
}

// A fixed seed gives the same scores on every server; another seed other
// scores (the basis is seeded), with the self-pair still first.
func TestRerank_ScoresFollowTheSeed(t *testing.T) {
	body := `{"query":"alpha beta gamma","documents":["delta","alpha beta","alpha beta gamma","epsilon zeta"]}`
	run := func(seed int) rerankAnswer {
		return decodeAs[rerankAnswer](t, poolingServer(t, "classify", map[string]any{"seed": seed}).post("/rerank", body))
	}
	a, b, c := run(7), run(7), run(8)
	for i := range a.Results {
		if a.Results[i].Index != b.Results[i].Index || a.Results[i].RelevanceScore != b.Results[i].RelevanceScore {
			t.Errorf("seed 7 twice, result %d: %+v vs %+v", i, a.Results[i], b.Results[i])
		}
	}
	if a.Results[0].Index != 2 || c.Results[0].Index != 2 {
		t.Errorf("the self pair must rank first: %d, %d", a.Results[0].Index, c.Results[0].Index)
	}
	same := true
	for i := range a.Results {
		same = same && a.Results[i].RelevanceScore == c.Results[i].RelevanceScore
	}
	if same {
		t.Error("seeds 7 and 8 gave the same scores")
	}
}

// SageMaker's adapter header becomes the body's model: an unknown name is
// the model 404, a served one runs.
func TestInvocations_AdapterHeaderIsTheModel(t *testing.T) {
	env := startServer(t, map[string]any{"served_model_name": []any{"mocker-model", "alias"}})
	body := `{"prompt":"hi","max_tokens":2,"model":"mocker-model"}`
	r := env.post("/invocations", body, "X-Amzn-SageMaker-Adapter-Identifier", "no-such-adapter")
	if msg, _, _, _ := errorOf(t, r); r.Status != 404 || msg != "The model `no-such-adapter` does not exist." {
		t.Errorf("unknown adapter: %d %s", r.Status, r.Body)
	}
	if r := env.post("/invocations", body, "X-Amzn-SageMaker-Adapter-Identifier", "alias"); r.Status != 200 || !strings.Contains(r.Body, `"object":"text_completion"`) {
		t.Errorf("served name: %d %s", r.Status, r.Body)
	}
}
