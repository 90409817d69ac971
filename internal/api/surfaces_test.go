package api

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/api/responses"
	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

func TestResponses_BadInputIsAnOpenAIShaped400AndTheServerKeepsServing(t *testing.T) {
	env := startServer(t, nil)
	for _, tc := range []struct{ name, body, param, msg string }{
		{"unknown item type", `{"input":[{"type":"computer_call_output","call_id":"c"}]}`, "input[0].type", "Unknown input item type 'computer_call_output'"},
		{"unknown item among good ones", `{"input":[{"role":"user","content":"hi"},{"type":"bogus"}]}`, "input[1].type", "Unknown input item type 'bogus'"},
		{"missing input", `{"model":"mocker-model"}`, "input", "Field required: input"},
		{"input of the wrong type", `{"input":42}`, "input", "expected string or array"},
		{"image part of no URL scheme", `{"input":[{"role":"user","content":[{"type":"input_image","image_url":"x"}]}]}`, "messages[0].content[0]", "The URL must be either a HTTP, data or file URL."},
		{"file part", `{"input":[{"role":"user","content":[{"type":"input_file","file_id":"f"}]}]}`, "input[0].content[0].type", "input_file content parts are not supported"},
		{"built-in tool", `{"input":"hi","tools":[{"type":"web_search"}]}`, "tools[0].type", "tool type 'web_search' is not supported"},
		{"background", `{"input":"hi","background":true}`, "background", "background mode"},
		{"bad text format", `{"input":"hi","text":{"format":{"type":"xml"}}}`, "text.format.type", "text.format.type must be"},
		{"unknown previous response", `{"input":"hi","previous_response_id":"resp_nope"}`, "response_id", "Response with id 'resp_nope' not found."},
		{"max_output_tokens 0", `{"input":"hi","max_output_tokens":0}`, "max_output_tokens", "max_output_tokens must be at least 1"},
		{"max_output_tokens too large", `{"input":"hi","max_output_tokens":99999999}`, "max_output_tokens", "max_output_tokens=99999999 cannot be greater than max_model_len"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := env.post("/v1/responses", tc.body)
			if r.Status != 400 && r.Status != 404 {
				t.Fatalf("status %d: %s", r.Status, r.Body)
			}
			e, ok := jsonOf(t, r.Body)["error"].(map[string]any)
			if !ok {
				t.Fatalf("not OpenAI's error shape: %s", r.Body)
			}
			if e["param"] != tc.param || !strings.Contains(e["message"].(string), tc.msg) || e["code"] != float64(r.Status) {
				t.Errorf("error = %v, want param %q and a message with %q", e, tc.param, tc.msg)
			}
		})
	}
	if r := env.post("/v1/responses", `{"input":"still serving","max_output_tokens":2}`); r.Status != 200 {
		t.Errorf("after bad input: %d %s", r.Status, r.Body)
	}
}

func TestMessages_BadInputIsAnAnthropicShaped400AndTheServerKeepsServing(t *testing.T) {
	env := startServer(t, nil)
	hello := `"messages":[{"role":"user","content":"hi"}]`
	for _, tc := range []struct {
		name, body string
		status     int
		typ, msg   string
	}{
		{"no max_tokens", `{"model":"mocker-model",` + hello + `}`, 400, "invalid_request_error", "max_tokens"},
		{"max_tokens 0", `{"model":"mocker-model","max_tokens":0,` + hello + `}`, 400, "invalid_request_error", "max_tokens must be positive"},
		{"no model", `{"max_tokens":5,` + hello + `}`, 400, "invalid_request_error", "model"},
		{"no messages", `{"model":"mocker-model","max_tokens":5}`, 400, "invalid_request_error", "messages"},
		{"bad role", `{"model":"mocker-model","max_tokens":5,"messages":[{"role":"tool","content":"x"}]}`, 400, "invalid_request_error", "got 'tool'"},
		{"unknown block", `{"model":"mocker-model","max_tokens":5,"messages":[{"role":"user","content":[{"type":"video"}]}]}`, 400, "invalid_request_error", "'video'"},
		{"tool choice without name", `{"model":"mocker-model","max_tokens":5,"tool_choice":{"type":"tool"},` + hello + `}`, 400, "invalid_request_error", "tool_choice.name"},
		{"unknown model", `{"model":"claude-3","max_tokens":5,` + hello + `}`, 404, "not_found_error", "does not exist"},
		{"not JSON", `{"model":`, 400, "invalid_request_error", "Invalid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := env.post("/v1/messages", tc.body)
			if r.Status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.Status, tc.status, r.Body)
			}
			m := jsonOf(t, r.Body)
			e, ok := m["error"].(map[string]any)
			if m["type"] != "error" || !ok || len(e) != 2 {
				t.Fatalf("not Anthropic's error shape: %s", r.Body)
			}
			if e["type"] != tc.typ || !strings.Contains(e["message"].(string), tc.msg) {
				t.Errorf("error = %v, want type %q and a message with %q", e, tc.typ, tc.msg)
			}
			if r.Header.Get("Content-Length") != wire.Itoa(len(r.Body)) {
				t.Errorf("Content-Length %s for a %d-byte body", r.Header.Get("Content-Length"), len(r.Body))
			}
		})
	}
	if r := env.post("/v1/messages", `{"model":"mocker-model","max_tokens":2,`+hello+`}`); r.Status != 200 {
		t.Errorf("after bad input: %d %s", r.Status, r.Body)
	}
}

func TestMessages_APIKeyInXAPIKeyOrBearer(t *testing.T) {
	env := startServer(t, map[string]any{"api_key": []any{"sk-1"}})
	body := `{"model":"mocker-model","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}`
	for _, tc := range []struct {
		name    string
		path    string
		headers []string
		status  int
	}{
		{"x-api-key", "/v1/messages", []string{"X-Api-Key", "sk-1"}, 200},
		{"bearer", "/v1/messages", []string{"Authorization", "Bearer sk-1"}, 200},
		{"wrong x-api-key", "/v1/messages", []string{"X-Api-Key", "sk-2"}, 401},
		{"none", "/v1/messages", nil, 401},
		// x-api-key is an Anthropic client's header: OpenAI routes keep
		// vLLM's Bearer-only rule.
		{"x-api-key on chat", "/v1/chat/completions", []string{"X-Api-Key", "sk-1"}, 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := body
			if tc.path != "/v1/messages" {
				b = helloChat + `,"max_tokens":2}`
			}
			if r := env.post(tc.path, b, tc.headers...); r.Status != tc.status {
				t.Errorf("status %d, want %d: %s", r.Status, tc.status, r.Body)
			}
		})
	}
}

func TestResponses_PreviousResponseIDContinuesTheStoredConversation(t *testing.T) {
	env := startServer(t, nil)
	first := jsonOf(t, env.post("/v1/responses", `{"input":"Tell me a story.","instructions":"Be brief.","max_output_tokens":3}`, "X-Request-Id", "one").Body)
	if first["id"] != "resp_one" {
		t.Fatalf("id = %v", first["id"])
	}
	p1 := first["usage"].(map[string]any)["input_tokens"].(float64)
	next := jsonOf(t, env.post("/v1/responses", `{"input":"More.","previous_response_id":"resp_one","max_output_tokens":3}`).Body)
	alone := jsonOf(t, env.post("/v1/responses", `{"input":"More.","max_output_tokens":3}`).Body)
	p2 := next["usage"].(map[string]any)["input_tokens"].(float64)
	pa := alone["usage"].(map[string]any)["input_tokens"].(float64)
	// The continued prompt holds the first turn (minus its instructions),
	// its answer and the new input.
	if !(p2 > pa && p2 < p1+pa+10) || next["previous_response_id"] != "resp_one" {
		t.Errorf("input tokens: first %v, continued %v, alone %v; previous_response_id %v", p1, p2, pa, next["previous_response_id"])
	}
	// The stored response is retrievable as answered.
	if r := env.Get("/v1/responses/resp_one"); r.Status != 200 || jsonOf(t, r.Body)["id"] != "resp_one" {
		t.Errorf("GET stored: %d %.200s", r.Status, r.Body)
	}
	// Only background responses can be cancelled, and the mock runs none.
	if r := env.post("/v1/responses/resp_one/cancel", ``); r.Status != 400 || !strings.Contains(r.Body, "Cannot cancel a synchronous response.") {
		t.Errorf("cancel stored: %d %s", r.Status, r.Body)
	}
	if r := env.post("/v1/responses/resp_nope/cancel", ``); r.Status != 404 {
		t.Errorf("cancel unknown: %d %s", r.Status, r.Body)
	}
	// store: false keeps nothing.
	env.post("/v1/responses", `{"input":"x","store":false,"max_output_tokens":1}`, "X-Request-Id", "nostore")
	if r := env.Get("/v1/responses/resp_nostore"); r.Status != 404 {
		t.Errorf("store false: GET = %d", r.Status)
	}
}

func TestResponseStore_IsBoundedOldestFirst(t *testing.T) {
	st := responses.NewResponseStore(3, 0)
	for _, id := range []string{"a", "b", "c", "d"} {
		st.Put(id, &responses.StoredResponse{Body: []byte(id)})
	}
	if st.Get("a") != nil || st.Get("b") == nil || st.Get("d") == nil {
		t.Errorf("after 4 puts into 3 slots: a=%v b=%v d=%v", st.Get("a"), st.Get("b"), st.Get("d"))
	}
	st.Put("b", &responses.StoredResponse{Body: []byte("b2")}) // re-storing moves it to the back
	st.Put("e", &responses.StoredResponse{})
	if st.Get("c") != nil || string(st.Get("b").Body) != "b2" {
		t.Errorf("re-stored b should outlive c")
	}
}

// A client that leaves a Responses or Messages stream releases its engine
// work like a chat stream does.
func TestSurfaceStreams_DisconnectCancels(t *testing.T) {
	env := startServer(t, map[string]any{
		"speedup_ratio": 1.0, "timing_model": "fixed", "fixed_prefill_ms": 5.0, "fixed_decode_ms": 20.0,
	})
	for _, tc := range []struct{ path, body string }{
		{"/v1/responses", `{"input":"Hello","max_output_tokens":1000,"stream":true}`},
		{"/v1/messages", `{"model":"m","max_tokens":1000,"stream":true,"messages":[{"role":"user","content":"Hello"}]}`},
	} {
		t.Run(tc.path, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			body := strings.Replace(tc.body, `"model":"m"`, `"model":"mocker-model"`, 1)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, env.URL+tc.path, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := env.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(resp.Body)
			for range 12 { // a few events' lines
				if _, err := br.ReadString('\n'); err != nil {
					t.Fatal(err)
				}
			}
			testutil.WaitFor(t, time.Second, "a running sequence", func() bool {
				return env.engines[0].Load().Running == 1
			})
			cancel()
			resp.Body.Close()
			testutil.WaitFor(t, 2*time.Second, "engine work released", env.idle)
		})
	}
}

// Responses and Messages deltas arrive at the engine's token times, like
// chat chunks: consecutive deltas one decode pass apart at the client, and
// the server's flushes within 2 ms of the modeled token times (fixed timing
// model; medians, as a shared 2-core machine delays single flushes).
func TestSurfaceStreams_DeltasArriveAtTokenTimes(t *testing.T) {
	const decodeMS = 12
	tolerance := 2 * time.Millisecond
	for _, tc := range []struct{ name, path, body, delta string }{
		{"responses text", "/v1/responses", `{"input":"Hello","max_output_tokens":24,"stream":true}`, "response.output_text.delta"},
		{"responses function call", "/v1/responses", `{"input":"Weather?","tools":[{"type":"function","name":"get_weather","parameters":` +
			weatherSchema + `}],"tool_choice":"required","stream":true,"seed":3}`, "response.function_call_arguments.delta"},
		{"messages text", "/v1/messages", `{"model":"mocker-model","max_tokens":24,"stream":true,"messages":[{"role":"user","content":"Hello"}]}`, "content_block_delta"},
		{"messages tool_use", "/v1/messages", `{"model":"mocker-model","max_tokens":200,"stream":true,"messages":[{"role":"user","content":"Weather?"}],` +
			`"tools":[{"name":"get_weather","input_schema":` + weatherSchema + `}],"tool_choice":{"type":"tool","name":"get_weather"}}`, "content_block_delta"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lags := &lagRecorder{}
			env := startServer(t, map[string]any{"timing_model": "fixed", "fixed_prefill_ms": 5.0,
				"fixed_decode_ms": float64(decodeMS), "speedup_ratio": 1.0}, settings.Deps{DeliveryLag: lags})
			req, _ := http.NewRequest(http.MethodPost, env.URL+tc.path, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := env.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			var arrivals []time.Time
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					break // end of the stream
				}
				if strings.TrimSpace(line) == "event: "+tc.delta {
					arrivals = append(arrivals, time.Now())
				}
			}
			if len(arrivals) < 8 {
				t.Fatalf("only %d %s events", len(arrivals), tc.delta)
			}
			gaps := make([]time.Duration, 0, len(arrivals)-1)
			for k := 1; k < len(arrivals); k++ {
				gaps = append(gaps, arrivals[k].Sub(arrivals[k-1]))
			}
			slices.Sort(gaps)
			if median, want := gaps[len(gaps)/2], decodeMS*time.Millisecond; median < want-tolerance || median > want+tolerance {
				t.Errorf("median gap between deltas %v, want %v ± %v (gaps %v)", median, want, tolerance, gaps)
			}
			lags.mu.Lock()
			defer lags.mu.Unlock()
			sorted := slices.Sorted(slices.Values(lags.lags))
			if len(sorted) == 0 || sorted[len(sorted)/2] > tolerance.Seconds() {
				t.Errorf("flush lags (s) %v: median above %v", sorted, tolerance)
			}
		})
	}
}

func TestMessagesCountTokens_IsThePromptOfTheSameMessagesRequest(t *testing.T) {
	env := startServer(t, nil)
	msgs := `"system":"Be brief.","messages":[{"role":"user","content":"Hello there!"}]`
	count := jsonOf(t, env.post("/v1/messages/count_tokens", `{"model":"mocker-model",`+msgs+`}`).Body)
	full := jsonOf(t, env.post("/v1/messages", `{"model":"mocker-model","max_tokens":1,`+msgs+`}`).Body)
	want := full["usage"].(map[string]any)["input_tokens"]
	if count["input_tokens"] != want || count["context_management"].(map[string]any)["original_input_tokens"] != want {
		t.Errorf("count_tokens = %v, want input_tokens %v", count, want)
	}
	r := env.post("/v1/messages/count_tokens", `{"model":"mocker-model"}`)
	if m := jsonOf(t, r.Body); r.Status != 400 || m["type"] != "error" {
		t.Errorf("without messages: %d %s", r.Status, r.Body)
	}
}

// sseData returns the data of every event of a named-event SSE body whose
// type is typ, in order.
func sseData(t *testing.T, body, typ string) []string {
	t.Helper()
	var out []string
	for _, ev := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		name, data, ok := strings.Cut(strings.TrimPrefix(ev, "event: "), "\ndata: ")
		if !ok {
			t.Fatalf("malformed event %q", ev)
		}
		if name == typ {
			out = append(out, data)
		}
	}
	return out
}

// With several tools and parallel calls, a streamed Responses or Messages
// answer carries the same calls as the non-streamed one: the items of
// response.output_item.done are the final output, and the tool_use blocks
// rebuilt from content_block_start and input_json_delta are the content.
func TestSurfaceStreams_ParallelCallsMatchTheNonStreamedAnswer(t *testing.T) {
	env := startServer(t, nil)
	fn := func(name string) string {
		return `{"type":"function","name":"` + name + `","parameters":` + weatherSchema + `}`
	}
	tools := `[` + fn("a") + `,` + fn("b") + `,` + fn("c") + `]`
	var seed string
	for s := range 200 {
		body := `{"input":"x","tools":` + tools + `,"tool_choice":"required","seed":` + wire.Itoa(s) + `}`
		out := jsonOf(t, env.post("/v1/responses", body).Body)["output"].([]any)
		if len(out) >= 2 {
			seed = wire.Itoa(s)
			break
		}
	}
	if seed == "" {
		t.Fatal("no seed among 200 gives parallel calls")
	}
	body := `{"input":"x","tools":` + tools + `,"tool_choice":"required","seed":` + seed
	whole := jsonOf(t, env.post("/v1/responses", body+`}`, "X-Request-Id", "p").Body)
	stream := env.post("/v1/responses", body+`,"stream":true}`, "X-Request-Id", "p").Body
	var items []any
	for _, d := range sseData(t, stream, "response.output_item.done") {
		items = append(items, jsonOf(t, d)["item"])
	}
	wantJSON, _ := json.Marshal(whole["output"])
	gotJSON, _ := json.Marshal(items)
	if string(gotJSON) != string(wantJSON) {
		t.Errorf("streamed items\n%s\nnon-streamed output\n%s", gotJSON, wantJSON)
	}
	for _, it := range items {
		validWeather(t, "arguments", json.RawMessage(it.(map[string]any)["arguments"].(string)))
	}

	// Messages: the same tools in Anthropic's form. Anthropic requests
	// have no seed, so the prompt picks the draw.
	atools := strings.NewReplacer(`"type":"function",`, ``, `"parameters"`, `"input_schema"`).Replace(tools)
	var mbody string
	var mwhole map[string]any
	for s := range 200 {
		mbody = `{"model":"mocker-model","max_tokens":500,"messages":[{"role":"user","content":"x` + wire.Itoa(s) + `"}],"tools":` +
			atools + `,"tool_choice":{"type":"any"}`
		if mwhole = jsonOf(t, env.post("/v1/messages", mbody+`}`).Body); len(mwhole["content"].([]any)) >= 2 {
			break
		}
	}
	mstream := env.post("/v1/messages", mbody+`,"stream":true}`).Body
	var blocks []map[string]any
	for _, ev := range strings.Split(strings.TrimSuffix(mstream, "\n\n"), "\n\n") {
		_, data, _ := strings.Cut(ev, "\ndata: ")
		m := jsonOf(t, data)
		switch m["type"] {
		case "content_block_start":
			blocks = append(blocks, m["content_block"].(map[string]any))
			blocks[len(blocks)-1]["partial"] = ""
		case "content_block_delta":
			if d := m["delta"].(map[string]any); d["type"] == "input_json_delta" {
				blocks[len(blocks)-1]["partial"] = blocks[len(blocks)-1]["partial"].(string) + d["partial_json"].(string)
			}
		}
	}
	content := mwhole["content"].([]any)
	if len(blocks) != len(content) || len(content) < 2 || mwhole["stop_reason"] != "tool_use" {
		t.Fatalf("stream blocks %v, content %v", blocks, content)
	}
	for i, c := range content {
		cm := c.(map[string]any)
		var input any
		if err := json.Unmarshal([]byte(blocks[i]["partial"].(string)), &input); err != nil {
			t.Fatalf("block %d partial_json %q: %v", i, blocks[i]["partial"], err)
		}
		a, _ := json.Marshal(input)
		b, _ := json.Marshal(cm["input"])
		if blocks[i]["id"] != cm["id"] || blocks[i]["name"] != cm["name"] || string(a) != string(b) {
			t.Errorf("block %d: stream %v, non-stream %v", i, blocks[i], cm)
		}
	}
}

// While the server starts up, the new generation endpoints answer 503 like
// chat, each in its own error shape.
func TestSurfaces_StartupGateAnswers503InEachShape(t *testing.T) {
	env := startServer(t, map[string]any{"startup_time": 60.0})
	r := env.post("/v1/responses", `{"input":"hi"}`)
	if e, ok := jsonOf(t, r.Body)["error"].(map[string]any); r.Status != 503 || !ok || e["code"] != 503.0 {
		t.Errorf("/v1/responses: %d %s", r.Status, r.Body)
	}
	r = env.post("/v1/embeddings", `{"input":"hi"}`)
	if r.Status != 503 {
		t.Errorf("/v1/embeddings: %d %s", r.Status, r.Body)
	}
	r = env.post("/v1/messages", `{"model":"mocker-model","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}`)
	m := jsonOf(t, r.Body)
	if e, ok := m["error"].(map[string]any); r.Status != 503 || m["type"] != "error" || !ok || e["type"] != "overloaded_error" {
		t.Errorf("/v1/messages: %d %s", r.Status, r.Body)
	}
	env.srv.SetReady(true)
	if r := env.post("/v1/messages", `{"model":"mocker-model","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}`); r.Status != 200 {
		t.Errorf("after startup: %d %s", r.Status, r.Body)
	}
}

// include: ["message.output_text.logprobs"] gives the chat path's logprobs
// in the Responses shapes: the output_text part lists every token (with
// bytes), each streamed delta its own token, the done event them all.
func TestResponses_LogprobsMatchChatInResponsesShapes(t *testing.T) {
	env := startServer(t, nil)
	body := `{"input":"Hello!","max_output_tokens":5,"include":["message.output_text.logprobs"],"top_logprobs":2`
	wholeBody := env.post("/v1/responses", body+`}`).Body
	whole := jsonOf(t, wholeBody)
	var rawEntries struct {
		Output []struct {
			Content []struct{ Logprobs []json.RawMessage }
		}
	}
	if err := json.Unmarshal([]byte(wholeBody), &rawEntries); err != nil || len(rawEntries.Output) == 0 ||
		len(rawEntries.Output[0].Content) == 0 {
		t.Fatalf("%v: %s", err, wholeBody)
	}
	if whole["top_logprobs"] != 2.0 {
		t.Errorf("top_logprobs echoed as %v", whole["top_logprobs"])
	}
	part := whole["output"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)
	got, _ := part["logprobs"].([]any)
	chat := jsonOf(t, env.post("/v1/chat/completions", helloChat+`,"max_tokens":5,"logprobs":true,"top_logprobs":2}`).Body)
	want := chat["choices"].([]any)[0].(map[string]any)["logprobs"].(map[string]any)["content"].([]any)
	if len(got) != 5 || len(want) != 5 {
		t.Fatalf("logprobs: responses %d entries, chat %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i].(map[string]any), want[i].(map[string]any)
		if k := keys(t, string(rawEntries.Output[0].Content[0].Logprobs[i])); !slices.Equal(k, []string{"token", "bytes", "logprob", "top_logprobs"}) {
			t.Errorf("entry keys %v", k)
		}
		if g["token"] != w["token"] || g["logprob"] != w["logprob"] || len(g["top_logprobs"].([]any)) != 2 {
			t.Errorf("entry %d: responses %v, chat %v", i, g, w)
		}
	}
	stream := env.post("/v1/responses", body+`,"stream":true}`).Body
	deltas := sseData(t, stream, "response.output_text.delta")
	for i, d := range deltas {
		lp := jsonOf(t, d)["logprobs"].([]any)
		e := lp[0].(map[string]any)
		if len(lp) != 1 || e["token"] != want[i].(map[string]any)["token"] || e["bytes"] != nil {
			t.Errorf("delta %d logprobs %v", i, lp)
		}
	}
	done := sseData(t, stream, "response.output_text.done")
	if len(done) != 1 || len(jsonOf(t, done[0])["logprobs"].([]any)) != 5 {
		t.Errorf("done event %v", done)
	}
	// Without include, events carry [] and the part null, as vLLM's do.
	plain := env.post("/v1/responses", `{"input":"Hello!","max_output_tokens":2,"stream":true}`).Body
	if d := sseData(t, plain, "response.output_text.delta"); !strings.Contains(d[0], `"logprobs":[]`) {
		t.Errorf("delta without include: %s", d[0])
	}
}
