package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/plan"
	"github.com/mocker-server/mocker-server/internal/testutil/testcfg"
)

// defaultConfig loads the server's own defaults — not the test defaults of
// testcfg.Load, which pin output_len_mode max — on port 0 without
// simulated delay, plus overlay.
func defaultConfig(t *testing.T, overlay map[string]any) *config.Config {
	t.Helper()
	o := map[string]any{"port": 0, "speedup_ratio": "inf"}
	maps.Copy(o, overlay)
	cfg, _, err := config.Load(testcfg.Options(o))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// postOK posts body and decodes the 200 answer into out; it reports a
// failure with t.Errorf (it runs on forEach's goroutines) and returns false.
func (r *running) postOK(t *testing.T, path, body string, out any) bool {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, r.url+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("%s: %d %s", path, resp.StatusCode, b)
		return false
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Errorf("%s: %v: %s", path, err, b)
		return false
	}
	return true
}

// lenChatAnswer is what the length tests read of a chat completion.
type lenChatAnswer struct {
	Choices []struct {
		FinishReason string `json:"finish_reason"`
		Message      struct {
			Content   string `json:"content"`
			Reasoning string `json:"reasoning"`
		} `json:"message"`
	} `json:"choices"`
	Usage struct {
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// forEach runs f(i) for i in [0, n) on 8 goroutines.
func forEach(n int, f func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				f(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// lengthRequests is how many seeded chat requests the distribution test
// sends: 10,000, or 2,000 under the race detector (several times slower).
func lengthRequests() int {
	if raceEnabled {
		return 2000
	}
	return 10000
}

// With the server's default flags, seeded chat answers with max_tokens
// 4096 end naturally at lengths from the configured log-normal
// distribution (median --natural-output-len 128, σ 1.0): the share ending
// by "stop", the median and p90 of completion_tokens are within four
// standard errors of the analytic values (docs/http-api.md, "Output
// lengths", has the measured table); no answer is empty; the same seed
// gives the same answer again; ignore_eos gives exactly max_tokens.
func TestServe_NaturalLengthDistribution(t *testing.T) {
	r := startServe(t, defaultConfig(t, nil), 0)
	const limit = 4096
	const median, sigma = 128, 1.0
	n := lengthRequests()
	lens := make([]int, n)
	contents := make([]string, n)
	finish := make([]string, n)
	forEach(n, func(i int) {
		var a lenChatAnswer
		if !r.postOK(t, "/v1/chat/completions", fmt.Sprintf(
			`{"messages":[{"role":"user","content":"Question %d?"}],"max_tokens":%d,"seed":%d}`, i, limit, i), &a) {
			return
		}
		lens[i], contents[i], finish[i] = a.Usage.CompletionTokens, a.Choices[0].Message.Content, a.Choices[0].FinishReason
	})
	stops := 0
	for i := range n {
		switch {
		case contents[i] == "":
			t.Errorf("seed %d: empty answer (%d tokens, %s)", i, lens[i], finish[i])
		case finish[i] == "stop" && lens[i] < limit:
			stops++
		case finish[i] == "length" && lens[i] == limit:
		default:
			t.Errorf("seed %d: %d tokens with finish_reason %q", i, lens[i], finish[i])
		}
	}
	sorted := slices.Clone(lens)
	slices.Sort(sorted)
	fn := float64(n)
	wantStop := plan.LogNormalCDF(median, sigma, limit-0.5)
	stopShare := float64(stops) / fn
	if se := math.Sqrt(wantStop * (1 - wantStop) / fn); math.Abs(stopShare-wantStop) > 4*se+1e-4 {
		t.Errorf("stop share %.4f, want %.4f ± %.4f", stopShare, wantStop, 4*se)
	}
	for _, q := range []float64{0.5, 0.9} {
		want := plan.LogNormalQuantile(median, sigma, q)
		z := math.Sqrt2 * math.Erfinv(2*q-1)
		rse := sigma * math.Sqrt(q*(1-q)/fn) / (math.Exp(-z*z/2) / math.Sqrt(2*math.Pi))
		got := float64(sorted[int(q*fn)])
		tol := 4*rse*want + 0.5
		if math.Abs(got-want) > tol {
			t.Errorf("p%.0f %v, want %.1f ± %.1f", 100*q, got, want, tol)
		}
		t.Logf("p%.0f completion_tokens %v (log-normal %.1f, tolerance ± %.1f)", 100*q, got, want, tol)
	}
	t.Logf("%d requests, max_tokens %d: finish stop %.2f%% (log-normal P(L < %d) %.2f%%)", n, limit, 100*stopShare, limit, 100*wantStop)

	// Determinism: the same seeded request gives the same answer.
	forEach(200, func(i int) {
		var a lenChatAnswer
		if !r.postOK(t, "/v1/chat/completions", fmt.Sprintf(
			`{"messages":[{"role":"user","content":"Question %d?"}],"max_tokens":%d,"seed":%d}`, i, limit, i), &a) {
			return
		}
		if a.Usage.CompletionTokens != lens[i] || a.Choices[0].Message.Content != contents[i] {
			t.Errorf("seed %d: %d tokens the second time, %d the first", i, a.Usage.CompletionTokens, lens[i])
		}
	})

	// ignore_eos: exactly max_tokens, finish length, every time.
	forEach(200, func(i int) {
		var a lenChatAnswer
		if !r.postOK(t, "/v1/chat/completions", fmt.Sprintf(
			`{"messages":[{"role":"user","content":"Question %d?"}],"max_tokens":%d,"seed":%d,"ignore_eos":true}`, i, limit, i), &a) {
			return
		}
		if a.Usage.CompletionTokens != limit || a.Choices[0].FinishReason != "length" {
			t.Errorf("seed %d ignore_eos: %d tokens, %s", i, a.Usage.CompletionTokens, a.Choices[0].FinishReason)
		}
	})
}

// Every surface caps the natural length with its own limit and reports
// its own finish: chat stop/length, Anthropic end_turn/max_tokens,
// Responses completed/incomplete, completions stop/length; min_tokens
// pushes the end out; --output-len-mode max gives exactly the limit.
func TestServe_NaturalLengthPerSurface(t *testing.T) {
	r := startServe(t, defaultConfig(t, nil), 0)

	// Anthropic, max_tokens 1024 (what SDK agents send): almost every
	// answer ends by itself (P(L ≥ 1024) = 1.9% at the defaults).
	var endTurns atomic.Int32
	const anthropicN = 200
	forEach(anthropicN, func(i int) {
		var m struct {
			StopReason string `json:"stop_reason"`
			Content    []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			Usage struct {
				OutputTokens int `json:"output_tokens"`
			} `json:"usage"`
		}
		if !r.postOK(t, "/v1/messages", fmt.Sprintf(
			`{"model":"mocker-model","max_tokens":1024,"messages":[{"role":"user","content":"Agent turn %d"}]}`, i), &m) {
			return
		}
		if len(m.Content) == 0 || m.Content[0].Text == "" {
			t.Errorf("message %d: no text: %+v", i, m)
		}
		switch {
		case m.StopReason == "end_turn" && m.Usage.OutputTokens < 1024:
			endTurns.Add(1)
		case m.StopReason == "max_tokens" && m.Usage.OutputTokens == 1024:
		default:
			t.Errorf("message %d: %d tokens, stop_reason %q", i, m.Usage.OutputTokens, m.StopReason)
		}
	})
	if n := endTurns.Load(); n < anthropicN*9/10 {
		t.Errorf("end_turn %d of %d", n, anthropicN)
	}

	// Responses: completed below max_output_tokens, incomplete at it.
	statuses := map[string]int{}
	var mu sync.Mutex
	forEach(100, func(i int) {
		var resp struct {
			Status string `json:"status"`
			Usage  struct {
				OutputTokens int `json:"output_tokens"`
			} `json:"usage"`
		}
		if !r.postOK(t, "/v1/responses", fmt.Sprintf(`{"input":"Task %d","max_output_tokens":128}`, i), &resp) {
			return
		}
		if (resp.Status == "completed") != (resp.Usage.OutputTokens < 128) || (resp.Status == "incomplete") != (resp.Usage.OutputTokens == 128) {
			t.Errorf("response %d: %d tokens, status %s", i, resp.Usage.OutputTokens, resp.Status)
		}
		mu.Lock()
		statuses[resp.Status]++
		mu.Unlock()
	})
	// max_output_tokens at the median: about half each.
	if statuses["completed"] < 30 || statuses["incomplete"] < 30 {
		t.Errorf("statuses %v", statuses)
	}

	// Completions and min_tokens.
	forEach(100, func(i int) {
		var c struct {
			Choices []struct {
				Text         string `json:"text"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			Usage struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if !r.postOK(t, "/v1/completions", fmt.Sprintf(`{"prompt":"Once %d","max_tokens":2000,"min_tokens":600,"seed":%d}`, i, i), &c) {
			return
		}
		if got := c.Usage.CompletionTokens; got < 601 || (c.Choices[0].FinishReason == "length") != (got == 2000) {
			t.Errorf("completion %d, min_tokens 600: %d tokens, %s", i, got, c.Choices[0].FinishReason)
		}
	})
}

// --output-len-mode max: every answer with a limit is exactly that long,
// on chat, Anthropic and Responses alike.
func TestServe_OutputLenModeMaxIsExact(t *testing.T) {
	r := startServe(t, defaultConfig(t, map[string]any{"output_len_mode": "max"}), 0)
	forEach(50, func(i int) {
		var a lenChatAnswer
		if !r.postOK(t, "/v1/chat/completions", fmt.Sprintf(`{"messages":[{"role":"user","content":"Q %d"}],"max_tokens":300}`, i), &a) {
			return
		}
		if a.Usage.CompletionTokens != 300 || a.Choices[0].FinishReason != "length" {
			t.Errorf("chat %d: %d %s", i, a.Usage.CompletionTokens, a.Choices[0].FinishReason)
		}
		var m struct {
			StopReason string `json:"stop_reason"`
			Usage      struct {
				OutputTokens int `json:"output_tokens"`
			} `json:"usage"`
		}
		if !r.postOK(t, "/v1/messages", fmt.Sprintf(`{"model":"mocker-model","max_tokens":300,"messages":[{"role":"user","content":"Q %d"}]}`, i), &m) {
			return
		}
		if m.Usage.OutputTokens != 300 || m.StopReason != "max_tokens" {
			t.Errorf("messages %d: %d %s", i, m.Usage.OutputTokens, m.StopReason)
		}
	})
}

// SGLang's /generate: max_new_tokens caps the natural length,
// min_new_tokens pushes it out, ignore_eos gives exactly max_new_tokens.
func TestServe_NaturalLengthSGLangGenerate(t *testing.T) {
	r := startServe(t, defaultConfig(t, map[string]any{"engine_type": "sglang"}), 0)
	type gen struct {
		Text     string `json:"text"`
		MetaInfo struct {
			FinishReason struct {
				Type string `json:"type"`
			} `json:"finish_reason"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"meta_info"`
	}
	kinds := map[string]int{}
	var mu sync.Mutex
	forEach(100, func(i int) {
		var g gen
		if !r.postOK(t, "/generate", fmt.Sprintf(`{"text":"Hi %d","sampling_params":{"max_new_tokens":1024}}`, i), &g) {
			return
		}
		n := g.MetaInfo.CompletionTokens
		if g.Text == "" || (g.MetaInfo.FinishReason.Type == "stop") != (n < 1024) {
			t.Errorf("generate %d: %d tokens, %s, %q", i, n, g.MetaInfo.FinishReason.Type, g.Text)
		}
		mu.Lock()
		kinds[g.MetaInfo.FinishReason.Type]++
		mu.Unlock()
		if !r.postOK(t, "/generate", fmt.Sprintf(`{"text":"Hi %d","sampling_params":{"max_new_tokens":500,"min_new_tokens":400}}`, i), &g) {
			return
		}
		if n := g.MetaInfo.CompletionTokens; n < 401 {
			t.Errorf("generate %d min_new_tokens 400: %d tokens", i, n)
		}
		if !r.postOK(t, "/generate", fmt.Sprintf(`{"text":"Hi %d","sampling_params":{"max_new_tokens":700,"ignore_eos":true}}`, i), &g) {
			return
		}
		if n := g.MetaInfo.CompletionTokens; n != 700 || g.MetaInfo.FinishReason.Type != "length" {
			t.Errorf("generate %d ignore_eos: %d tokens, %s", i, n, g.MetaInfo.FinishReason.Type)
		}
	})
	if kinds["stop"] < 90 {
		t.Errorf("finish kinds %v", kinds)
	}
}

// With reasoning on, an answer that ends naturally has visible content
// after its reasoning, even when the thinking ratio would take it all.
func TestServe_NaturalEndKeepsContentAfterReasoning(t *testing.T) {
	r := startServe(t, defaultConfig(t, map[string]any{
		"reasoning": map[string]any{"thinking_ratio": 1}, "natural_output_len": 4}), 0)
	forEach(300, func(i int) {
		var a lenChatAnswer
		if !r.postOK(t, "/v1/chat/completions", fmt.Sprintf(`{"messages":[{"role":"user","content":"Think %d"}],"max_tokens":64,"seed":%d}`, i, i), &a) {
			return
		}
		if a.Choices[0].FinishReason != "stop" {
			return
		}
		if strings.TrimSpace(a.Choices[0].Message.Content) == "" {
			t.Errorf("seed %d: empty content after reasoning %q (%d tokens)", i, a.Choices[0].Message.Reasoning, a.Usage.CompletionTokens)
		}
	})
}

// Determinism across runs: two servers with the same --seed give every
// prompt (no request seed: the prompt hash seeded with --seed decides) the
// same answer and length; another --seed draws other lengths.
func TestServe_NaturalLengthsAcrossRuns(t *testing.T) {
	lengths := func(seed int) ([]int, []string) {
		r := startServe(t, defaultConfig(t, map[string]any{"seed": seed}), 0)
		lens, texts := make([]int, 100), make([]string, 100)
		forEach(100, func(i int) {
			var a lenChatAnswer
			if !r.postOK(t, "/v1/chat/completions", fmt.Sprintf(`{"messages":[{"role":"user","content":"Turn %d"}],"max_tokens":2048}`, i), &a) {
				return
			}
			lens[i], texts[i] = a.Usage.CompletionTokens, a.Choices[0].Message.Content
		})
		return lens, texts
	}
	a, at := lengths(7)
	b, bt := lengths(7)
	c, _ := lengths(8)
	if !slices.Equal(a, b) || !slices.Equal(at, bt) {
		t.Errorf("same --seed, different answers:\n%v\n%v", a, b)
	}
	same := 0
	for i := range a {
		if a[i] == c[i] {
			same++
		}
	}
	if same > 10 {
		t.Errorf("--seed 7 and 8 gave %d of 100 equal lengths", same)
	}
}
