package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/pebbe/zmq4"
	"github.com/zeebo/xxh3"

	"github.com/mocker-server/mocker-server/internal/testutil"
)

// e2eLoRAState is the newest series of vllm:lora_requests_info (readers
// take the one with the largest timestamp as the current state); empty
// before the first pass.
func (s *e2eExposition) e2eLoRAState(t *testing.T) (running, waiting, maxLoRA string) {
	t.Helper()
	best := -1.0
	for _, m := range s.series("vllm:lora_requests_info", nil) {
		if v := m.GetGauge().GetValue(); v > best {
			best = v
			l := e2eLabelMap(m)
			if len(l) != 3 {
				t.Errorf("vllm:lora_requests_info labels %v, want max_lora, waiting_lora_adapters, running_lora_adapters", l)
			}
			running, waiting, maxLoRA = l["running_lora_adapters"], l["waiting_lora_adapters"], l["max_lora"]
		}
	}
	if best >= 0 && best < float64(time.Now().Add(-time.Hour).Unix()) {
		t.Fatalf("vllm:lora_requests_info value %v is not a current Unix time", best)
	}
	return running, waiting, maxLoRA
}

// TestE2E_LoRAAdaptersThroughTheServer runs the real server with
// --enable-lora --max-loras 2 and runtime updating: adapters are loaded
// over HTTP, listed and streamed from with the OpenAI SDK; while a and b
// stream, a request for c waits, which vllm:lora_requests_info (read with
// the Prometheus text parser) shows; the same prompt under a and b gives KV
// events with different hashes (the documented xxh3 formula) and each
// adapter's lora_id and lora_name, seen live on a ZMQ SUB and in the
// replay; unloading an adapter makes its requests 404.
func TestE2E_LoRAAdaptersThroughTheServer(t *testing.T) {
	var P, R int
	var srv *running
	testutil.WithPortRuns(t, 2, 1, func(bases []int) error {
		P, R = bases[0], bases[1]
		var err error
		srv, err = e2eTryStartProduction(t, loadConfig(t, map[string]any{
			"enable_lora": true, "max_loras": 2, "max_cpu_loras": 3, "allow_runtime_lora_updating": true,
			"lora_load_time_ms": 5, "block_size": 4, "speedup_ratio": 1,
			"timing_model": "fixed", "fixed_prefill_ms": 5, "fixed_decode_ms": 15,
			"zmq_kv_events_port": P, "zmq_replay_port": R, "log_level": "error",
		}))
		return err
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := openai.NewClient(option.WithBaseURL(srv.url+"/v1/"), option.WithAPIKey("x"),
		option.WithHTTPClient(srv.client), option.WithMaxRetries(0))
	post := func(path string, body any) (int, string) {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.url+path, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		resp, err := srv.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}

	for _, name := range []string{"a", "b", "c"} {
		if st, body := post("/v1/load_lora_adapter", map[string]string{"lora_name": name, "lora_path": "/adapters/" + name}); st != 200 {
			t.Fatalf("load %s: %d %s", name, st, body)
		}
	}
	page, err := c.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(page.Data); n != 4 || page.Data[3].ID != "c" || page.Data[3].JSON.ExtraFields["parent"].Raw() != `"mocker-model"` {
		t.Fatalf("models %+v", page.Data)
	}
	// Loading is vLLM's add_lora: each adapter enters the CPU cache and a
	// GPU slot, so c pushed a out of the GPU (2 slots) but not out of the
	// CPU cache (3).
	testutil.WaitUntil(t, 5*time.Second, func() string {
		s := srv.e2eScrape(t)
		levels := map[string]string{}
		for _, m := range s.series("vllm:lora_adapter_loaded", map[string]string{"engine": "0", "pinned": "false"}) {
			l := e2eLabelMap(m)
			levels[l["adapter_name"]] = l["level"]
			if m.GetGauge().GetValue() != 1 {
				return fmt.Sprintf("loaded series %v = %v", l, m.GetGauge().GetValue())
			}
		}
		gpu := s.value("vllm:num_gpu_loaded_lora_adapters", map[string]string{"engine": "0"})
		cpu := s.value("vllm:num_cpu_loaded_lora_adapters", map[string]string{"engine": "0"})
		if fmt.Sprint(levels) != "map[a:cpu b:gpu c:gpu]" || gpu != 2 || cpu != 3 {
			return fmt.Sprintf("levels %v gpu %v cpu %v", levels, gpu, cpu)
		}
		return ""
	})

	// a and b stream 150 tokens each (≥ 2.2 s, a wide window even on a busy
	// machine); c arrives while both run.
	var wg sync.WaitGroup
	stream := func(adapter string, tokens int) {
		defer wg.Done()
		st := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
			Model: adapter, MaxTokens: openai.Int(int64(tokens)),
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello " + adapter)},
		})
		n := 0
		for st.Next() {
			if ch := st.Current(); ch.Model != adapter {
				t.Errorf("chunk model %q, want %q", ch.Model, adapter)
			}
			n++
		}
		if err := st.Err(); err != nil || n == 0 {
			t.Errorf("stream %s: %d chunks, %v", adapter, n, err)
		}
	}
	state := func() string {
		run, wait, maxLoRA := srv.e2eScrape(t).e2eLoRAState(t)
		if maxLoRA != "" && maxLoRA != "2" { // "": no pass reported yet
			t.Errorf("max_lora label %q, want 2", maxLoRA)
		}
		return "running=" + run + " waiting=" + wait
	}
	waitState := func(want string) {
		t.Helper()
		testutil.WaitUntil(t, 5*time.Second, func() string {
			if s := state(); s != want {
				return s
			}
			return ""
		})
	}
	wg.Add(1)
	go stream("a", 150)
	waitState("running=a waiting=")
	wg.Add(1)
	go stream("b", 150)
	waitState("running=a,b waiting=")
	wg.Add(1)
	go stream("c", 2)
	testutil.WaitUntil(t, 5*time.Second, func() string {
		s := srv.e2eScrape(t)
		run, wait, _ := s.e2eLoRAState(t)
		deferred := s.value("vllm:num_requests_waiting_by_reason", map[string]string{"reason": "deferred"})
		if run != "a,b" || wait != "c" || deferred != 1 {
			return fmt.Sprintf("running=%s waiting=%s deferred=%v", run, wait, deferred)
		}
		return ""
	})
	wg.Wait()
	waitState("running= waiting=")

	// The same token prompt under a and b: live on a SUB (synchronised on
	// probes first, see FIELD-NOTES) and in the replay.
	sub := &e2eKVSub{rank: 0, sub: testutil.NewZMQSocket(t, nil, zmq4.SUB, fmt.Sprintf("tcp://127.0.0.1:%d", P), false,
		func(s *zmq4.Socket) error { return s.SetSubscribe("") })}
	complete := func(model string, prompt []int) {
		t.Helper()
		st, body := post("/v1/completions", map[string]any{"model": model, "prompt": prompt, "max_tokens": 1})
		if st != 200 {
			t.Fatalf("completion %s: %d %s", model, st, body)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for k := 0; !sub.take(t, 150*time.Millisecond); k++ {
		if time.Now().After(deadline) {
			t.Fatal("no live KV event within 5 s of probing")
		}
		complete("mocker-model", []int{50000 + 10*k, 1, 2, 3, 4})
	}
	for sub.take(t, 100*time.Millisecond) {
	}
	prompt := []int{11, 12, 13, 14, 15, 16, 17, 18, 19}
	complete("a", prompt)
	complete("b", prompt)
	complete("a", prompt) // a hit: no new blocks under a
	live := map[string]e2eKVEvent{}
	for len(live) < 2 && sub.take(t, 2*time.Second) {
		for _, ev := range sub.live[len(sub.live)-1].events {
			if ev.kind == "BlockStored" && ev.loraName != "" {
				live[ev.loraName] = ev
			}
		}
	}
	ea, eb := live["a"], live["b"]
	if ea.loraID != 1 || eb.loraID != 2 || len(ea.hashes) != 2 || len(eb.hashes) != 2 {
		t.Fatalf("live adapter events a=%+v b=%+v", ea, eb)
	}
	for i := range 2 {
		if ea.hashes[i] == eb.hashes[i] {
			t.Errorf("block %d has hash %d under both adapters", i, ea.hashes[i])
		}
	}
	// docs/kv-hashing.md: block 0 of adapter a is XXH3(seed 1337, LE-u32
	// tokens ‖ "a").
	var in []byte
	for _, tok := range prompt[:4] {
		in = binary.LittleEndian.AppendUint32(in, uint32(tok))
	}
	if want := xxh3.HashSeed(append(in, 'a'), 1337); ea.hashes[0] != want {
		t.Errorf("adapter a block 0 hash %d, want %d", ea.hashes[0], want)
	}
	if fmt.Sprint(ea.extraKeys) != "[[a] [a]]" || fmt.Sprint(eb.extraKeys) != "[[b] [b]]" {
		t.Errorf("extra keys %v / %v", ea.extraKeys, eb.extraKeys)
	}

	// A consumer rebuilding the cache from the replayed stream: every hash
	// belongs to one adapter, and a's second request stored nothing.
	owner := map[uint64]string{}
	storedUnder := map[string]int{}
	for _, b := range e2eReplay(t, fmt.Sprintf("tcp://127.0.0.1:%d", R), 0, true, false) {
		for _, ev := range b.events {
			if ev.kind != "BlockStored" {
				continue
			}
			storedUnder[ev.loraName]++
			for _, h := range ev.hashes {
				if o, ok := owner[h]; ok && o != ev.loraName {
					t.Errorf("hash %d stored under %q and %q", h, o, ev.loraName)
				}
				owner[h] = ev.loraName
			}
		}
	}
	if storedUnder["a"] < 1 || storedUnder["b"] < 1 {
		t.Errorf("stored events per adapter %v", storedUnder)
	}

	if st, body := post("/v1/unload_lora_adapter", map[string]string{"lora_name": "a"}); st != 200 {
		t.Fatalf("unload: %d %s", st, body)
	}
	_, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "a", MaxTokens: openai.Int(1),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || !strings.Contains(apiErr.Message, "The model `a` does not exist.") {
		t.Errorf("request for an unloaded adapter: %v", err)
	}
	if st, body := post("/v1/unload_lora_adapter", map[string]string{"lora_name": "a"}); st != 404 ||
		!strings.Contains(body, `"The lora adapter 'a' cannot be found."`) || !strings.Contains(body, `"NotFoundError"`) {
		t.Errorf("second unload: %d %s", st, body)
	}
}

// TestRun_LoRAFlagErrorsExitWithStatus2: bad LoRA settings stop startup with
// one line per problem and exit status 2.
func TestRun_LoRAFlagErrorsExitWithStatus2(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--enable-lora", "--max-loras", "0"}, "--max-loras must be >= 1, got 0"},
		{[]string{"serve", "--enable-lora", "--max-loras", "2", "--max-cpu-loras", "1"}, "--max-cpu-loras (1) must be >= --max-loras (2)"},
		{[]string{"serve", "--model", "m", "--enable-lora", "--lora-modules", "m=/p"}, `adapter name "m" is a served model name`},
	} {
		var stdout, stderr strings.Builder
		err := run(context.Background(), tt.args, &stdout, &stderr)
		if code := exitCode(err); code != 2 || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tt.args, code, stderr.String(), tt.want)
		}
	}
}
