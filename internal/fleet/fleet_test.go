package fleet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/mocker-server/mocker-server/internal/testutil"
)

// The fleet under test: two groups in one process.
//
//	group 1: workers 0-1, model "small", 128 KV blocks, 20 ms per decode pass
//	group 2: workers 2-7, model "big", 2 DP ranks, 15 ms per decode pass
//
// Every worker publishes KV events Dynamo-style (--zmq-kv-events-port,
// --zmq-replay-port), so worker i, rank r publishes on kvPort + 2i + r.
const (
	smallDecode = 20 * time.Millisecond
	bigDecode   = 15 * time.Millisecond
	adminKey    = "test-admin-key"
)

type fleetEnv struct {
	fleet          *Fleet
	admin          string
	client         *http.Client
	kvPort, replay int
	urls           []string
	models         []string
}

func startTestFleet(t *testing.T) *fleetEnv {
	t.Helper()
	file, err := ParseFile([]byte(`
workers:
  - count: 2
    args: ["--served-model-name", "small", "--num-gpu-blocks", "128", "--fixed-decode-ms", "20"]
  - count: 6
    args: ["--served-model-name", "big", "--data-parallel-size", "2"]
`))
	if err != nil {
		t.Fatal(err)
	}
	// 8 workers × stride 2 KV-event ports, and as many replay ports, bound
	// by the workers themselves: retried if another process takes one.
	var (
		f              *Fleet
		members        []Member
		kvPort, replay int
	)
	testutil.WithPortRuns(t, 2, 16, func(bases []int) error {
		kvPort, replay = bases[0], bases[1]
		var err error
		// HTTP ports below the ephemeral range: worker 0 is restarted on
		// its port (testutil.RestartablePortRun).
		members, _, err = Plan(Spec{File: file, BasePort: testutil.RestartablePortRun(t, 8), Base: testLoadOptions(map[string]any{
			"timing_model": "fixed", "fixed_prefill_ms": 5, "fixed_decode_ms": 15, "block_size": 16,
			"zmq_kv_events_port": kvPort, "zmq_replay_port": replay, "log_level": "warn",
			"host": "127.0.0.1",
		})})
		if err != nil {
			t.Fatal(err)
		}
		f, err = Start(context.Background(), members, Options{AdminAddr: "127.0.0.1:0", AdminKey: adminKey,
			ShutdownGrace: 2 * time.Second})
		return err
	})
	env := &fleetEnv{fleet: f, admin: f.AdminURL(), kvPort: kvPort, replay: replay,
		client: &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}}
	for i := range members {
		env.urls = append(env.urls, f.Worker(i).URL())
		env.models = append(env.models, map[bool]string{true: "small", false: "big"}[i < 2])
	}
	t.Cleanup(func() {
		f.Stop()
		env.client.CloseIdleConnections()
	})
	return env
}

func (e *fleetEnv) action(t *testing.T, id, action, body string) (int, any) {
	t.Helper()
	return adminCall(t, e.client, http.MethodPost, e.admin+"/workers/"+id+"/"+action, adminKey, body)
}

// get reads an admin route.
func (e *fleetEnv) get(t *testing.T, path string) (int, any) {
	t.Helper()
	return adminCall(t, e.client, http.MethodGet, e.admin+path, adminKey, "")
}

func (e *fleetEnv) sdk(i int) *openai.Client {
	c := openai.NewClient(option.WithBaseURL(e.urls[i]+"/v1/"), option.WithAPIKey("unused"),
		option.WithHTTPClient(e.client), option.WithMaxRetries(0),
		option.WithHeader("X-Data-Parallel-Rank", "0"))
	return &c
}

// A prompt long enough to fill a few 16-token blocks, distinct per worker.
func prompt(i, n int) string {
	return fmt.Sprintf("worker %d request %d: %s", i, n, strings.Repeat("the quick brown fox jumps over the lazy dog ", 6))
}

func TestFleetOfEightHeterogeneousWorkers(t *testing.T) {
	env := startTestFleet(t)
	ctx := context.Background()

	// The listing: ids, URLs, models, roles and the port layout.
	status, list := adminCall(t, env.client, http.MethodGet, env.admin+"/workers", adminKey, "")
	workers, _ := list.([]any)
	if status != 200 || len(workers) != 8 {
		t.Fatalf("GET /workers = %d %v", status, list)
	}
	for i, raw := range workers {
		w := raw.(map[string]any)
		dp := map[bool]int{true: 1, false: 2}[i < 2]
		var wantKV, wantReplay []any
		for r := range dp {
			wantKV = append(wantKV, fmt.Sprintf("tcp://127.0.0.1:%d", env.kvPort+2*i+r))
			wantReplay = append(wantReplay, fmt.Sprintf("tcp://127.0.0.1:%d", env.replay+2*i+r))
		}
		if w["id"] != fmt.Sprint(i) || w["url"] != env.urls[i] || w["state"] != "running" ||
			w["model"] != env.models[i] || w["role"] != "aggregated" || w["engine_type"] != "vllm" ||
			w["dp_size"] != float64(dp) || !slices.Equal(w["kv_events_endpoints"].([]any), wantKV) ||
			!slices.Equal(w["replay_endpoints"].([]any), wantReplay) {
			t.Errorf("worker %d listed as %v", i, w)
		}
	}

	// Subscribe to every worker's rank-0 KV events before any traffic.
	subs := make([]*kvSub, 8)
	for i := range subs {
		subs[i] = newKVSub(t, fmt.Sprintf("tcp://127.0.0.1:%d", env.kvPort+2*i))
	}
	for end := time.Now().Add(400 * time.Millisecond); time.Now().Before(end); {
		for _, s := range subs {
			s.take(t, 5*time.Millisecond)
		}
	}
	for i, s := range subs {
		if len(s.live) != 0 {
			t.Fatalf("worker %d published %d batches before any request", i, len(s.live))
		}
	}

	// Chat through the OpenAI SDK: worker i gets i+1 requests.
	firstContent := make([]string, 8)
	for i := range 8 {
		c := env.sdk(i)
		for n := range i + 1 {
			resp, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
				Model:     env.models[i],
				Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt(i, n))},
				MaxTokens: openai.Int(8),
			})
			if err != nil {
				t.Fatalf("worker %d chat: %v", i, err)
			}
			if resp.Model != env.models[i] || len(resp.Choices) != 1 || resp.Choices[0].Message.Content == "" ||
				resp.Usage.CompletionTokens != 8 {
				t.Errorf("worker %d answered %+v", i, resp)
			}
			if n == 0 {
				firstContent[i] = resp.Choices[0].Message.Content
			}
		}
	}
	// Each worker serves only its own model.
	_, err := env.sdk(0).Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "big",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}, MaxTokens: openai.Int(2)})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Errorf("model big on a small worker: %v", err)
	}
	// Seeds differ per worker (seed + i): the big workers do not all say
	// the same thing to the same kind of request.
	distinct := map[string]bool{}
	for _, c := range firstContent[2:] {
		distinct[c] = true
	}
	if len(distinct) < 2 {
		t.Errorf("six workers with seeds 2..7 gave identical answers: %q", firstContent[2:])
	}

	// Each worker's /metrics counts only its own requests.
	for i := range 8 {
		fams := scrape(t, env.client, env.urls[i], "")
		if got := sum(fams, "vllm:request_success_total", nil); got != float64(i+1) {
			t.Errorf("worker %d: vllm:request_success_total = %v, want %d", i, got, i+1)
		}
	}

	// Each worker's KV events arrived on its own port with its own
	// sequence (from 0, contiguous), and replay returns the same batches.
	for i, s := range subs {
		s.drain(t, 300*time.Millisecond)
		if len(s.live) == 0 {
			t.Fatalf("worker %d: no KV events", i)
		}
		var seqs []uint64
		for n, b := range s.live {
			if b.seq != uint64(n) {
				t.Fatalf("worker %d: live seq %d at position %d", i, b.seq, n)
			}
			seqs = append(seqs, b.seq)
		}
		if got := replayAll(t, fmt.Sprintf("tcp://127.0.0.1:%d", env.replay+2*i)); !slices.Equal(got, seqs) {
			t.Errorf("worker %d: replay %v, live %v", i, got, seqs)
		}
	}

	t.Run("kill fails the in-flight stream and refuses connections; the others stream on time", func(t *testing.T) {
		victim := startStream(t, env.client, env.urls[0], "small", prompt(0, 100), 150)
		others := make([]*stream, 8)
		for i := 1; i < 8; i++ {
			others[i] = startStream(t, env.client, env.urls[i], env.models[i], prompt(i, 100), 50)
		}
		victim.waitTokens(t, 5, 5*time.Second)
		if status, _ := env.action(t, "0", "kill", ""); status != 200 {
			t.Fatalf("kill = %d", status)
		}
		rest, err := victim.finish(t, 5*time.Second)
		if !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("stream on the killed worker ended with %v after %d more tokens, want a connection reset", err, len(rest))
		}
		_, err = net.DialTimeout("tcp", strings.TrimPrefix(env.urls[0], "http://"), time.Second)
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("dial killed worker: %v, want connection refused", err)
		}
		for i := 1; i < 8; i++ {
			toks, err := others[i].finish(t, 10*time.Second)
			if err != nil || len(toks) != 50 {
				t.Fatalf("worker %d stream: %d tokens, %v", i, len(toks), err)
			}
			decode := map[bool]time.Duration{true: smallDecode, false: bigDecode}[i < 2]
			gaps := make([]time.Duration, 0, len(toks))
			for n := 1; n < len(toks); n++ {
				gaps = append(gaps, toks[n].Sub(toks[n-1]))
			}
			sort.Slice(gaps, func(a, b int) bool { return gaps[a] < gaps[b] })
			median, span := gaps[len(gaps)/2], toks[len(toks)-1].Sub(toks[0])
			ideal := time.Duration(len(gaps)) * decode
			if median < decode*7/10 || median > decode*13/10 || span > ideal*3/2+200*time.Millisecond {
				t.Errorf("worker %d: median gap %v, span %v; modeled %v per token, %v in all", i, median, span, decode, ideal)
			}
		}
	})

	t.Run("restart announces AllBlocksCleared with the next seq and serves again", func(t *testing.T) {
		s := subs[0]
		s.drain(t, 200*time.Millisecond)
		last := s.live[len(s.live)-1].seq
		n := len(s.live)
		if status, body := env.action(t, "0", "restart", ""); status != 200 || body.(map[string]any)["state"] != "running" {
			t.Fatalf("restart = %d %v", status, body)
		}
		if !s.take(t, 2*time.Second) {
			t.Fatal("no KV event after restart")
		}
		if b := s.live[n]; b.seq != last+1 || !slices.Equal(b.kinds, []string{"AllBlocksCleared"}) {
			t.Errorf("first batch after restart: seq %d kinds %v; want seq %d [AllBlocksCleared]", b.seq, b.kinds, last+1)
		}
		resp, err := env.sdk(0).Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "small",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt(0, 200))}, MaxTokens: openai.Int(4)})
		if err != nil || resp.Usage.CompletionTokens != 4 {
			t.Fatalf("chat after restart: %v", err)
		}
		s.drain(t, 200*time.Millisecond)
		for k := n + 1; k < len(s.live); k++ {
			if s.live[k].seq != s.live[k-1].seq+1 {
				t.Errorf("seq %d after %d", s.live[k].seq, s.live[k-1].seq)
			}
		}
	})

	t.Run("drain refuses new requests with 503 and lets the running one finish", func(t *testing.T) {
		running := startStream(t, env.client, env.urls[3], "big", prompt(3, 300), 40)
		running.waitTokens(t, 3, 5*time.Second)
		if status, body := env.action(t, "3", "drain", ""); status != 200 || body.(map[string]any)["state"] != "draining" {
			t.Fatalf("drain = %d %v", status, body)
		}
		status, body := adminCall(t, env.client, http.MethodPost, env.urls[3]+"/v1/chat/completions", "",
			`{"model":"big","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`)
		e, _ := body.(map[string]any)["error"].(map[string]any)
		if status != 503 || e["type"] != "ServiceUnavailableError" || e["code"] != float64(503) {
			t.Errorf("new request while draining = %d %v", status, body)
		}
		toks, err := running.finish(t, 10*time.Second)
		if err != nil || len(toks) != 37 || running.usage != 40 {
			t.Errorf("running stream: %d more tokens, usage %d, %v", len(toks), running.usage, err)
		}
		env.action(t, "3", "undrain", "")
		if _, err := env.sdk(3).Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "big",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}, MaxTokens: openai.Int(2)}); err != nil {
			t.Errorf("chat after undrain: %v", err)
		}
	})

	t.Run("pause stalls tokens and resume continues without loss or duplicates", func(t *testing.T) {
		s := startStream(t, env.client, env.urls[4], "big", prompt(4, 400), 30)
		s.waitTokens(t, 5, 5*time.Second)
		if status, body := env.action(t, "4", "pause", ""); status != 200 || body.(map[string]any)["state"] != "paused" {
			t.Fatalf("pause = %d %v", status, body)
		}
		// Tokens of the pass that was running when the pause arrived were
		// handed to the handler before the pause returned; give them time
		// to cross the socket, then nothing more may come.
		time.Sleep(100 * time.Millisecond)
		n := len(s.tokens)
		time.Sleep(400 * time.Millisecond)
		if stalled := len(s.tokens) - n; stalled != 0 {
			t.Errorf("%d tokens arrived while paused", stalled)
		}
		if status, _ := adminCall(t, env.client, http.MethodGet, env.urls[4]+"/health", "", ""); status != 200 {
			t.Errorf("/health while paused = %d, want 200", status)
		}
		env.action(t, "4", "resume", "")
		toks, err := s.finish(t, 10*time.Second)
		if err != nil || 5+len(toks) != 30 || s.usage != 30 {
			t.Errorf("after resume: %d tokens in all, usage %d, %v", 5+len(toks), s.usage, err)
		}
		// The output is planned from the worker's seed and the prompt, so
		// the same request again, never paused, must stream the same text.
		ref := startStream(t, env.client, env.urls[4], "big", prompt(4, 400), 30)
		if toks, err := ref.finish(t, 10*time.Second); err != nil || len(toks) != 30 {
			t.Fatalf("reference stream: %d tokens, %v", len(toks), err)
		}
		if got, want := s.text.String(), ref.text.String(); got != want {
			t.Errorf("paused stream text %q, unpaused %q", got, want)
		}

		// pause with a failing health check
		env.action(t, "5", "drain", "")
		env.action(t, "5", "pause", `{"health":"fail"}`)
		if status, _ := adminCall(t, env.client, http.MethodGet, env.urls[5]+"/health", "", ""); status != 503 {
			t.Errorf("/health while paused with health=fail = %d, want 503", status)
		}
		// GET /workers/{id} says what /health answers and that the paused
		// worker is also draining.
		if status, body := env.get(t, "/workers/5"); status != 200 || body.(map[string]any)["state"] != "paused" ||
			body.(map[string]any)["health"] != "failing" || body.(map[string]any)["draining"] != true {
			t.Errorf("GET /workers/5 while paused, draining, health=fail = %d %v", status, body)
		}
		env.action(t, "5", "resume", "")
		env.action(t, "5", "undrain", "")
		if status, _ := adminCall(t, env.client, http.MethodGet, env.urls[5]+"/health", "", ""); status != 200 {
			t.Errorf("/health after resume = %d", status)
		}
		if _, body := env.get(t, "/workers/5"); body.(map[string]any)["health"] != "ok" || body.(map[string]any)["draining"] != false {
			t.Errorf("GET /workers/5 after resume and undrain = %v", body)
		}
	})

	t.Run("slow adds a per-pass delay at run time", func(t *testing.T) {
		if status, body := env.action(t, "6", "slow", `{"extra_pass_delay_ms": 60}`); status != 200 {
			t.Fatalf("slow = %d %v", status, body)
		}
		s := startStream(t, env.client, env.urls[6], "big", prompt(6, 600), 6)
		toks, err := s.finish(t, 10*time.Second)
		if err != nil || len(toks) != 6 {
			t.Fatalf("slow stream: %d tokens, %v", len(toks), err)
		}
		if span := toks[5].Sub(toks[0]); span < 5*(bigDecode+60*time.Millisecond)*9/10 {
			t.Errorf("5 slowed passes took %v, want about %v", span, 5*(bigDecode+60*time.Millisecond))
		}
		if status, _ := env.action(t, "6", "slow", `{"speedup_ratio": -1}`); status != 400 {
			t.Errorf("negative speedup = %d, want 400", status)
		}
		// The refused action changed nothing: the listing shows the delay
		// of the applied one, and no ratio.
		_, body := env.get(t, "/workers/6")
		slow, _ := body.(map[string]any)["slow"].(map[string]any)
		if slow == nil || slow["extra_pass_delay_ms"] != float64(60) || slow["speedup_ratio"] != nil || body.(map[string]any)["state"] != "running" {
			t.Errorf("GET /workers/6 after slow = %v", body)
		}
		env.action(t, "6", "slow", `{"extra_pass_delay_ms": 0}`)
		if _, body := env.get(t, "/workers/6"); body.(map[string]any)["slow"] != nil {
			t.Errorf("GET /workers/6 after the delay was removed: slow = %v", body.(map[string]any)["slow"])
		}
		// A speedup ratio is shown as given; a restart drops it.
		env.action(t, "6", "slow", `{"speedup_ratio": "inf"}`)
		if _, body := env.get(t, "/workers/6"); fmt.Sprint(body.(map[string]any)["slow"]) != "map[extra_pass_delay_ms:0 speedup_ratio:inf]" {
			t.Errorf("GET /workers/6 after speedup_ratio inf: slow = %v", body.(map[string]any)["slow"])
		}
		env.action(t, "6", "restart", "")
		if _, body := env.get(t, "/workers/6"); body.(map[string]any)["slow"] != nil || body.(map[string]any)["health"] != "ok" {
			t.Errorf("GET /workers/6 after a restart: %v", body)
		}
	})

	t.Run("reset_prefix_cache publishes AllBlocksCleared", func(t *testing.T) {
		s := subs[7]
		s.drain(t, 100*time.Millisecond)
		n := len(s.live)
		if status, body := env.action(t, "7", "reset_prefix_cache", ""); status != 200 {
			t.Fatalf("reset_prefix_cache = %d %v", status, body)
		}
		if !s.take(t, 2*time.Second) || !slices.Equal(s.live[n].kinds, []string{"AllBlocksCleared"}) {
			t.Errorf("after reset: %v", s.live[n:])
		}
	})

	t.Run("admin metrics count the actions and export states", func(t *testing.T) {
		fams := scrape(t, env.client, env.admin, adminKey)
		for _, c := range []struct {
			worker, action string
			n              float64
		}{{"0", "kill", 1}, {"0", "restart", 1}, {"3", "drain", 1}, {"3", "undrain", 1}, {"4", "pause", 1},
			{"4", "resume", 1}, {"6", "slow", 3}, {"6", "restart", 1}, {"7", "reset_prefix_cache", 1}} {
			if got := sum(fams, "mocker_admin_actions_total", map[string]string{"worker": c.worker, "action": c.action}); got != c.n {
				t.Errorf("mocker_admin_actions_total{worker=%s,action=%s} = %v", c.worker, c.action, got)
			}
		}
		if got := sum(fams, "mocker_worker_state", map[string]string{"state": "running"}); got != 8 {
			t.Errorf("running workers = %v, want 8", got)
		}
	})

	t.Run("admin API: missing worker 404, missing or wrong key 401", func(t *testing.T) {
		status, body := env.action(t, "8", "kill", "")
		e, _ := body.(map[string]any)["error"].(map[string]any)
		if status != 404 || e["type"] != "NotFoundError" {
			t.Errorf("kill worker 8 = %d %v", status, body)
		}
		if status, _ := env.action(t, "1", "explode", ""); status != 404 {
			t.Errorf("unknown action = %d", status)
		}
		for _, key := range []string{"", "wrong"} {
			status, body := adminCall(t, env.client, http.MethodGet, env.admin+"/workers", key, "")
			if status != 401 || body.(map[string]any)["error"] != "Unauthorized" {
				t.Errorf("key %q: %d %v", key, status, body)
			}
			if status, _ := adminCall(t, env.client, http.MethodPost, env.admin+"/workers/1/kill", key, ""); status != 401 {
				t.Errorf("kill with key %q = %d", key, status)
			}
		}
		if env.fleet.Worker(1).State() != "running" {
			t.Error("an unauthorized kill killed worker 1")
		}
	})
}
