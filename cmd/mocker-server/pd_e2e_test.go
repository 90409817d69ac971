package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/testutil"
)

// End-to-end disaggregated prefill/decode (docs/disaggregation.md): real
// servers, a proxy written here that does what vLLM's NIXL toy proxy and
// llm-d's routing sidecar do, and the servers' /metrics.

// pdTiming is the fixed timing model of these tests: a prefill pass costs
// 20 ms, a decode pass 10 ms, and moving a token's KV 1 ms (10 MB a token
// at 10 GB/s).
var pdTiming = map[string]any{
	"speedup_ratio": 1, "timing_model": "fixed", "fixed_prefill_ms": 20, "fixed_decode_ms": 10,
	"block_size": 16, "kv_bytes_per_token": 10_000_000, "kv_transfer_bandwidth": 10,
	"enable_prompt_tokens_details": true, "log_level": "error",
}

const msPerToken = 1.0 // transfer time per token under pdTiming

func pdConfig(t *testing.T, extra map[string]any) map[string]any {
	t.Helper()
	o := map[string]any{}
	for k, v := range pdTiming {
		o[k] = v
	}
	for k, v := range extra {
		o[k] = v
	}
	return o
}

var nixlBoth = map[string]any{"kv_connector": "NixlConnector", "kv_role": "kv_both"}

// pdProxy is the test's P/D proxy.
type pdProxy struct {
	client          *http.Client
	prefill, decode string
}

// pdResult is what the proxy's client saw.
type pdResult struct {
	prefillBody []byte
	prefillTime time.Duration // until the prefill answer was read
	params      map[string]any
	ttft        time.Duration
	content     string
	usage       map[string]any
	finish      string
	status      int    // the decode answer's status
	errBody     string // the decode answer when not 200
}

func postJSON(t *testing.T, c *http.Client, u string, body map[string]any, reqID string) *http.Response {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, u, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if reqID != "" {
		req.Header.Set("X-Request-Id", reqID)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", u, err)
	}
	return resp
}

// chat runs one request through the proxy: a non-streaming prefill with
// do_remote_decode and max_tokens 1, then a stream from the decode worker
// with the kv_transfer_params the prefill returned.
func (p pdProxy) chat(t *testing.T, reqID string, body map[string]any) pdResult {
	t.Helper()
	var res pdResult
	start := time.Now()
	pre := clone(body)
	pre["kv_transfer_params"] = map[string]any{"do_remote_decode": true, "do_remote_prefill": false,
		"remote_engine_id": nil, "remote_block_ids": nil, "remote_host": nil, "remote_port": nil}
	pre["stream"], pre["max_tokens"] = false, 1
	delete(pre, "stream_options")
	resp := postJSON(t, p.client, p.prefill+"/v1/chat/completions", pre, reqID)
	res.prefillBody, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("prefill = %d: %s", resp.StatusCode, res.prefillBody)
	}
	var pr struct {
		KVTransferParams map[string]any `json:"kv_transfer_params"`
	}
	if err := json.Unmarshal(res.prefillBody, &pr); err != nil || pr.KVTransferParams == nil {
		t.Fatalf("prefill response without kv_transfer_params: %v %s", err, res.prefillBody)
	}
	res.params = pr.KVTransferParams
	res.prefillTime = time.Since(start)
	dec := clone(body)
	dec["kv_transfer_params"] = pr.KVTransferParams
	dec["stream"] = true
	dec["stream_options"] = map[string]any{"include_usage": true}
	resp = postJSON(t, p.client, p.decode+"/v1/chat/completions", dec, reqID)
	defer resp.Body.Close()
	res.status = resp.StatusCode
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		res.errBody = string(b)
		return res
	}
	sc := bufio.NewScanner(resp.Body)
	var content strings.Builder
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			break
		}
		var chunk struct {
			Choices []struct {
				Delta        struct{ Content string } `json:"delta"`
				FinishReason *string                  `json:"finish_reason"`
			} `json:"choices"`
			Usage map[string]any `json:"usage"`
			Error map[string]any `json:"error"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			t.Fatalf("bad chunk %q: %v", data, err)
		}
		if chunk.Error != nil {
			t.Fatalf("stream error %v", chunk.Error)
		}
		for _, c := range chunk.Choices {
			if c.Delta.Content != "" && res.ttft == 0 {
				res.ttft = time.Since(start)
			}
			content.WriteString(c.Delta.Content)
			if c.FinishReason != nil {
				res.finish = *c.FinishReason
			}
		}
		if chunk.Usage != nil {
			res.usage = chunk.Usage
		}
	}
	res.content = content.String()
	return res
}

func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func pdChatBody(system, user string, maxTokens int) map[string]any {
	return map[string]any{"messages": []map[string]any{{"role": "system", "content": system}, {"role": "user", "content": user}},
		"max_tokens": maxTokens}
}

// plainChat answers body without disaggregation (the reference output).
func plainChat(t *testing.T, c *http.Client, base string, body map[string]any) (content string, promptTokens int) {
	t.Helper()
	resp := postJSON(t, c, base+"/v1/chat/completions", body, "")
	defer resp.Body.Close()
	var r struct {
		Choices []struct{ Message struct{ Content string } } `json:"choices"`
		Usage   struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != 200 {
		t.Fatalf("plain chat = %d, %v", resp.StatusCode, err)
	}
	return r.Choices[0].Message.Content, r.Usage.PromptTokens
}

func heldBlocks(t *testing.T, r *running) float64 {
	return r.e2eScrape(t).value("mocker_kv_held_blocks", nil)
}

func TestPDNixlFlowEndToEnd(t *testing.T) {
	prefill := e2eStartProduction(t, loadConfig(t, pdConfig(t, map[string]any{
		"kv_transfer_config": nixlBoth, "worker_id": "prefill-1"})))
	decode := e2eStartProduction(t, loadConfig(t, pdConfig(t, map[string]any{
		"kv_transfer_config": nixlBoth, "worker_id": "decode-1", "kv_transfer_timing_mode": "destination_missing"})))
	reference := e2eStartProduction(t, loadConfig(t, pdConfig(t, nil)))
	client := &http.Client{Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	proxy := pdProxy{client: client, prefill: prefill.url, decode: decode.url}
	prefillPort, _ := strconv.Atoi(must(url.Parse(prefill.url)).Port())

	system := strings.Repeat("You are a careful assistant who answers briefly. ", 3)
	// The decode leg (the proxy's decode request to the first token: the
	// side-channel check, the transfer, the first decode pass) must be
	// within 3 ms of transfer + decode pass, and the client's whole TTFT,
	// which adds the prefill's HTTP hop, within 5 ms of prefill pass +
	// transfer + decode pass: the best of five, every one within 25 ms.
	// The bounds are this machine's transport floor (three loopback HTTP
	// exchanges and three timer wake-ups, ≈ 2.1 ms; docs/BENCHMARKS.md)
	// with room for an idle CPU's deeper sleep, and still catch a wrong
	// transfer size (1 ms per token here) or an extra pass (10 ms). Under the
	// race detector these only log (timingErrorf); make check-pd-timing
	// runs them without it.
	timingErrorf := t.Errorf
	if raceEnabled {
		timingErrorf = t.Logf
	}
	const attempts = 5
	bestTTFTErr, bestLegErr := math.Inf(1), math.Inf(1)
	for i := range attempts {
		body := pdChatBody(fmt.Sprintf("Session %d. ", i)+system, "What is the capital of France?", 8)
		want, p := plainChat(t, client, reference.url, body)
		res := proxy.chat(t, fmt.Sprintf("pd-%d", i), body)
		if res.status != 200 {
			t.Fatalf("decode = %d: %s", res.status, res.errBody)
		}
		// vLLM's kv_transfer_params, byte for byte.
		n := (p + 15) / 16
		wantParams := fmt.Sprintf(`"kv_transfer_params":{"do_remote_prefill":true,"do_remote_decode":false,"remote_block_ids":%s,"remote_engine_id":"prefill-1","remote_request_id":"chatcmpl-pd-%d","remote_host":"127.0.0.1","remote_port":%d,"tp_size":1}`,
			mustJSON(res.params["remote_block_ids"]), i, prefillPort)
		if !bytes.Contains(res.prefillBody, []byte(wantParams)) {
			t.Errorf("prefill body %s\nwant %s", res.prefillBody, wantParams)
		}
		if got := len(res.params["remote_block_ids"].([]any)); got != n {
			t.Errorf("remote_block_ids has %d blocks, want %d for %d prompt tokens", got, n, p)
		}
		if !bytes.Contains(res.prefillBody, []byte(`"finish_reason":"length"`)) || !bytes.Contains(res.prefillBody, []byte(`"completion_tokens":1`)) {
			t.Errorf("prefill body %s: want one token, finish length", res.prefillBody)
		}
		// The full stream, as an aggregated server answers it.
		if res.content != want || res.finish != "length" {
			t.Errorf("decode stream %q (finish %q), want %q (length)", res.content, res.finish, want)
		}
		if got := res.usage["prompt_tokens"]; got != float64(p) || res.usage["completion_tokens"] != float64(8) {
			t.Errorf("usage %v, want %d prompt and 8 completion tokens", res.usage, p)
		}
		if d, _ := res.usage["prompt_tokens_details"].(map[string]any); d == nil || d["cached_tokens"] != float64(0) {
			t.Errorf("usage %v: want 0 locally cached tokens on the cold decode worker", res.usage)
		}
		// TTFT = prefill pass + transfer + first decode pass.
		model := 20 + float64(p)*msPerToken + 10
		got := float64(res.ttft) / float64(time.Millisecond)
		t.Logf("request %d: %d prompt tokens, TTFT %.3f ms (prefill answered after %v), model %.3f ms", i, p, got, res.prefillTime, model)
		bestTTFTErr = min(bestTTFTErr, math.Abs(got-model))
		leg := float64(res.ttft-res.prefillTime) / float64(time.Millisecond)
		bestLegErr = min(bestLegErr, math.Abs(leg-(float64(p)*msPerToken+10)))
		if got < model-0.5 {
			t.Errorf("TTFT %.3f ms is shorter than the model's %.3f ms", got, model)
		} else if got > model+25 {
			timingErrorf("TTFT %.3f ms, want about %.3f ms", got, model)
		}
		// The prefill's blocks are freed right after the pull.
		testutil.WaitFor(t, 5*time.Second, "prefill held blocks released", func() bool { return heldBlocks(t, prefill) == 0 })
	}
	if bestTTFTErr > 5 {
		timingErrorf("best client TTFT off the model by %.3f ms, want <= 5 ms", bestTTFTErr)
	}
	dm := decode.e2eScrape(t)
	t.Logf("best decode leg off the model by %.3f ms, best client TTFT by %.3f ms", bestLegErr, bestTTFTErr)
	if bestLegErr > 3 {
		timingErrorf("best decode leg off transfer + decode pass by %.3f ms, want <= 3 ms", bestLegErr)
	}
	if n, _ := dm.hist("vllm:nixl_xfer_time_seconds", nil); n != attempts {
		t.Errorf("vllm:nixl_xfer_time_seconds count %d, want %d", n, attempts)
	}
	if n, _ := dm.hist("mocker_kv_transfer_seconds", map[string]string{"dp_rank": "0"}); n != attempts {
		t.Errorf("mocker_kv_transfer_seconds count %d, want %d", n, attempts)
	}
	if v := heldBlocks(t, decode); v != 0 {
		t.Errorf("decode worker holds %v blocks", v)
	}
}

func TestPDDestinationMissingTransfersOnlyMissingBlocks(t *testing.T) {
	prefill := e2eStartProduction(t, loadConfig(t, pdConfig(t, map[string]any{"kv_transfer_config": nixlBoth, "worker_id": "p"})))
	decode := e2eStartProduction(t, loadConfig(t, pdConfig(t, map[string]any{"kv_transfer_config": nixlBoth,
		"worker_id": "d", "kv_transfer_timing_mode": "destination_missing"})))
	client := &http.Client{Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	proxy := pdProxy{client: client, prefill: prefill.url, decode: decode.url}
	system := strings.Repeat("Shared instructions for every turn of this conversation. ", 4)
	bytesBefore := 0.0
	for i, user := range []string{"First question?", "Second, longer question about the same topic?"} {
		res := proxy.chat(t, fmt.Sprintf("dm-%d", i), pdChatBody(system, user, 4))
		if res.status != 200 {
			t.Fatalf("decode = %d: %s", res.status, res.errBody)
		}
		p := int(res.usage["prompt_tokens"].(float64))
		cached := int(res.usage["prompt_tokens_details"].(map[string]any)["cached_tokens"].(float64))
		total := decode.e2eScrape(t).value("mocker_kv_transfer_bytes_total", nil)
		moved := total - bytesBefore
		bytesBefore = total
		if i == 1 && cached == 0 {
			t.Fatalf("second request: no local prefix hit (usage %v)", res.usage)
		}
		if want := float64(p-cached) * 10_000_000; moved != want {
			t.Errorf("request %d: %v bytes moved, want %v ((%d prompt - %d cached) tokens)", i, moved, want, p, cached)
		}
	}
}

func TestPDHoldTimeoutAndFailedPulls(t *testing.T) {
	prefill := e2eStartProduction(t, loadConfig(t, pdConfig(t, map[string]any{"kv_transfer_config": nixlBoth,
		"worker_id": "p", "handoff_session_timeout_ms": 1500})))
	failing := e2eStartProduction(t, loadConfig(t, pdConfig(t, map[string]any{"kv_transfer_config": map[string]any{
		"kv_connector": "NixlConnector", "kv_role": "kv_consumer"}})))
	recomputing := e2eStartProduction(t, loadConfig(t, pdConfig(t, map[string]any{"kv_transfer_config": map[string]any{
		"kv_connector": "NixlConnector", "kv_role": "kv_consumer", "kv_load_failure_policy": "recompute"}})))
	client := &http.Client{Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()

	body := pdChatBody("Be brief.", "Name a colour.", 4)
	pre := clone(body)
	pre["kv_transfer_params"] = map[string]any{"do_remote_decode": true}
	pre["max_tokens"] = 1
	resp := postJSON(t, client, prefill.url+"/v1/chat/completions", pre, "timeout-1")
	var pr struct {
		KVTransferParams map[string]any `json:"kv_transfer_params"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&pr)
	resp.Body.Close()
	// The held-blocks gauge is set when the pass settles, which may come
	// just after the response that pass delivered: wait for it (well within
	// the 1.5 s timeout).
	testutil.WaitFor(t, time.Second, "the prefill to hold its blocks", func() bool { return heldBlocks(t, prefill) > 0 })
	// Released by the 1.5 s timeout, not vLLM's 480 s default. The timeout
	// is long enough that the hold is still there when the test looks,
	// even under -race on a loaded machine; the exact instant is checked in
	// virtual time by the engine's tests.
	start := time.Now()
	testutil.WaitFor(t, 10*time.Second, "hold released at the timeout", func() bool { return heldBlocks(t, prefill) == 0 })
	t.Logf("hold released after %v (timeout 1.5s)", time.Since(start))

	// The decode comes too late: vLLM's default policy fails it...
	dec := clone(body)
	dec["kv_transfer_params"] = pr.KVTransferParams
	resp = postJSON(t, client, failing.url+"/v1/chat/completions", dec, "")
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 500 || !strings.Contains(string(b), `"message":"KV transfer from prefill worker failed: `) ||
		!strings.Contains(string(b), "410") || !strings.Contains(string(b), `"type":"InternalServerError"`) {
		t.Errorf("late decode = %d %s, want 500 KV transfer failed (410)", resp.StatusCode, b)
	}
	// ... an unreachable prefill worker too ...
	gone := clone(pr.KVTransferParams)
	ln := testutil.Listen(t)
	gone["remote_port"] = testutil.Port(ln.Addr())
	_ = ln.Close()
	dec["kv_transfer_params"] = gone
	resp = postJSON(t, client, failing.url+"/v1/chat/completions", dec, "")
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 500 || !strings.Contains(string(b), "KV transfer from prefill worker failed: ") {
		t.Errorf("decode with an unreachable prefill = %d %s, want 500", resp.StatusCode, b)
	}
	fm := failing.e2eScrape(t)
	if v := fm.value("vllm:nixl_num_failed_transfers_total", nil); v != 2 {
		t.Errorf("vllm:nixl_num_failed_transfers_total = %v, want 2", v)
	}
	if v := fm.value("vllm:num_requests_running", nil) + fm.value("vllm:num_requests_waiting", nil) + fm.value("mocker_kv_held_blocks", nil); v != 0 {
		t.Errorf("failed decodes left %v requests or held blocks", v)
	}
	// ... and under kv_load_failure_policy recompute the prompt is
	// computed locally.
	dec["kv_transfer_params"] = pr.KVTransferParams
	resp = postJSON(t, client, recomputing.url+"/v1/chat/completions", dec, "")
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(b, []byte(`"completion_tokens":4`)) {
		t.Errorf("recomputing decode = %d %s, want 200 with 4 tokens", resp.StatusCode, b)
	}
}

func TestPDBadInput(t *testing.T) {
	producer := e2eStartProduction(t, loadConfig(t, pdConfig(t, map[string]any{"kv_transfer_config": map[string]any{
		"kv_connector": "NixlConnector", "kv_role": "kv_producer"}})))
	both := e2eStartProduction(t, loadConfig(t, pdConfig(t, map[string]any{"kv_transfer_config": nixlBoth})))
	client := &http.Client{Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	for _, tc := range []struct {
		name, url, body, msg, param string
	}{
		{"both flags", both.url, `{` + msgs + `,"kv_transfer_params":{"do_remote_decode":true,"do_remote_prefill":true}}`,
			"kv_transfer_params: do_remote_decode and do_remote_prefill cannot both be true.", "kv_transfer_params"},
		{"decode without remote fields", both.url, `{` + msgs + `,"kv_transfer_params":{"do_remote_prefill":true}}`,
			"kv_transfer_params is missing remote_host, remote_port: a request with do_remote_prefill needs remote_host, remote_port.", "kv_transfer_params.remote_host"},
		{"pull without engine and blocks", both.url, `{` + msgs + `,"kv_transfer_params":{"do_remote_prefill":true,"remote_host":"127.0.0.1","remote_port":1}}`,
			"kv_transfer_params is missing remote_block_ids, remote_engine_id, remote_request_id: a request with do_remote_prefill needs remote_block_ids, remote_engine_id, remote_request_id, remote_host, remote_port.", "kv_transfer_params.remote_block_ids"},
		{"wrong type", both.url, `{` + msgs + `,"kv_transfer_params":{"do_remote_prefill":true,"remote_port":"x"}}`,
			"Invalid type for field 'kv_transfer_params.remote_port': expected integer", "kv_transfer_params.remote_port"},
		{"decode on a producer", producer.url, `{` + msgs + `,"kv_transfer_params":{"do_remote_prefill":true,"remote_host":"h","remote_port":0}}`,
			"This worker does not serve the decode side of disaggregated requests (kv_role kv_producer).", "kv_transfer_params"},
		{"n > 1", both.url, `{` + msgs + `,"n":2,"kv_transfer_params":{"do_remote_decode":true}}`,
			"n must be 1 for a disaggregated prefill/decode request, got 2.", "n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := client.Post(tc.url+"/v1/chat/completions", "application/json", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var e vllmErrorBody
			_ = json.NewDecoder(resp.Body).Decode(&e)
			if resp.StatusCode != 400 || e.Error.Code != 400 || e.Error.Message != tc.msg || e.Error.Param == nil || *e.Error.Param != tc.param {
				t.Errorf("= %d %+v, want 400 %q (param %s)", resp.StatusCode, e.Error, tc.msg, tc.param)
			}
		})
	}
	for _, r := range []*running{producer, both} {
		if v := heldBlocks(t, r); v != 0 {
			t.Errorf("%v held blocks after bad input", v)
		}
	}
}

// vllmErrorBody is vLLM's error answer.
type vllmErrorBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    int     `json:"code"`
	} `json:"error"`
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func mustJSON(v any) string { return string(must(json.Marshal(v))) }

// TestPDBootstrapBetweenTwoProcesses runs Dynamo-style workers as two real
// processes: the prefill worker listens on --bootstrap-port, the decode
// worker rendezvouses with the room, either side arriving first.
func TestPDBootstrapBetweenTwoProcesses(t *testing.T) {
	ln := testutil.Listen(t)
	bootstrapPort := testutil.Port(ln.Addr())
	_ = ln.Close() // the prefill process binds it
	common := []string{"--timing-model", "fixed", "--fixed-prefill-ms", "20", "--fixed-decode-ms", "10",
		"--speedup-ratio", "1", "--kv-bytes-per-token", "10000000", "--kv-transfer-bandwidth", "10", "--log-level", "error"}
	prefill := startProc(t, append([]string{"--disaggregation-mode", "prefill", "--bootstrap-port", strconv.Itoa(bootstrapPort),
		"--worker-id", "prefill-proc"}, common...)...)
	decode := startProc(t, append([]string{"--disaggregation-mode", "decode"}, common...)...)
	client := &http.Client{Timeout: 40 * time.Second}
	defer client.CloseIdleConnections()

	prefillOnce := func(room uint64, user string) map[string]any {
		body := pdChatBody("Be brief.", user, 1)
		body["bootstrap_host"], body["bootstrap_port"], body["bootstrap_room"] = "127.0.0.1", bootstrapPort, room
		resp := postJSON(t, client, prefill.url+"/v1/chat/completions", body, "")
		defer resp.Body.Close()
		var r struct {
			KVTransferParams map[string]any `json:"kv_transfer_params"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != 200 {
			t.Fatalf("prefill = %d, %v", resp.StatusCode, err)
		}
		return r.KVTransferParams
	}
	decodeOnce := func(room uint64, user string, params map[string]any) (int, string) {
		body := pdChatBody("Be brief.", user, 4)
		if params != nil {
			body["kv_transfer_params"] = params
		} else {
			body["bootstrap_host"], body["bootstrap_port"], body["bootstrap_room"] = "127.0.0.1", bootstrapPort, room
		}
		resp := postJSON(t, client, decode.url+"/v1/chat/completions", body, "")
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	scrapeHeld := func() float64 {
		resp, err := client.Get(prefill.url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, `mocker_kv_held_blocks{dp_rank="0"} `); ok {
				f, _ := strconv.ParseFloat(v, 64)
				return f
			}
		}
		t.Fatalf("no mocker_kv_held_blocks in\n%s", b)
		return 0
	}

	t.Run("prefill first", func(t *testing.T) {
		params := prefillOnce(1001, "Name a colour.")
		if params["bootstrap_room"] != float64(1001) || params["remote_port"] != float64(bootstrapPort) ||
			params["remote_engine_id"] != "prefill-proc" || params["do_remote_prefill"] != true {
			t.Errorf("kv_transfer_params %v", params)
		}
		if scrapeHeld() == 0 {
			t.Error("no blocks held before the rendezvous")
		}
		if status, body := decodeOnce(0, "Name a colour.", params); status != 200 || !strings.Contains(body, `"completion_tokens":4`) {
			t.Fatalf("decode = %d %s", status, body)
		}
		testutil.WaitFor(t, 2*time.Second, "held blocks released after the ACK", func() bool { return scrapeHeld() == 0 })
	})
	t.Run("decode first", func(t *testing.T) {
		type answer struct {
			status int
			body   string
		}
		done := make(chan answer, 1)
		go func() {
			s, b := decodeOnce(2002, "Name a fruit.", nil)
			done <- answer{s, b}
		}()
		time.Sleep(100 * time.Millisecond) // the decode worker is waiting on the room
		select {
		case a := <-done:
			t.Fatalf("decode answered before its prefill: %d %s", a.status, a.body)
		default:
		}
		prefillOnce(2002, "Name a fruit.")
		a := <-done
		if a.status != 200 || !strings.Contains(a.body, `"completion_tokens":4`) {
			t.Fatalf("decode = %d %s", a.status, a.body)
		}
		testutil.WaitFor(t, 2*time.Second, "held blocks released after the ACK", func() bool { return scrapeHeld() == 0 })
	})
}

// TestPDKVEventsOnEachSide checks the KV events of a handoff as vLLM emits
// them: the prefill worker stores the prompt's full blocks, and the decode
// worker stores the same blocks when it has pulled them (replayed from
// each worker's ZMQ ROUTER from sequence 0).
func TestPDKVEventsOnEachSide(t *testing.T) {
	var prefill, decode *running
	var ports []int
	testutil.WithPortRuns(t, 4, 1, func(bases []int) error {
		ports = bases
		var err error
		prefill, err = e2eTryStartProduction(t, loadConfig(t, pdConfig(t, map[string]any{"kv_transfer_config": nixlBoth,
			"worker_id": "p", "zmq_kv_events_port": bases[0], "zmq_replay_port": bases[1]})))
		if err != nil {
			return err
		}
		decode, err = e2eTryStartProduction(t, loadConfig(t, pdConfig(t, map[string]any{"kv_transfer_config": nixlBoth,
			"worker_id": "d", "zmq_kv_events_port": bases[2], "zmq_replay_port": bases[3]})))
		return err
	})
	client := &http.Client{Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	res := pdProxy{client: client, prefill: prefill.url, decode: decode.url}.chat(t, "ev-1",
		pdChatBody(strings.Repeat("Remember this. ", 6), "Now answer.", 4))
	if res.status != 200 {
		t.Fatalf("decode = %d %s", res.status, res.errBody)
	}
	p := int(res.usage["prompt_tokens"].(float64))
	stored := func(replayPort int) (batches int, hashes []uint64) {
		for _, b := range e2eReplay(t, fmt.Sprintf("tcp://127.0.0.1:%d", replayPort), 0, true, false) {
			for _, ev := range b.events {
				if ev.kind != "BlockStored" {
					t.Errorf("replay port %d: unexpected %s", replayPort, ev.kind)
					continue
				}
				batches++
				hashes = append(hashes, ev.hashes...)
			}
		}
		return batches, hashes
	}
	pn, prefillHashes := stored(ports[1])
	dn, decodeHashes := stored(ports[3])
	// Prefill: the prompt's full blocks. Decode: the pulled full blocks
	// (all prompt tokens but the last, recomputed) when they arrive; the 4
	// decoded tokens fill no further block.
	if want := p / 16; pn != 1 || len(prefillHashes) != want {
		t.Errorf("prefill stored %d hashes in %d events, want %d in 1 (%d prompt tokens)", len(prefillHashes), pn, want, p)
	}
	if want := (p - 1) / 16; dn != 1 || len(decodeHashes) != want || !slices.Equal(decodeHashes, prefillHashes[:want]) {
		t.Errorf("decode stored %v in %d events, want the prefill's first %d hashes %v", decodeHashes, dn, want, prefillHashes)
	}
}
