package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/testutil"
)

// /generate runs the shared generation path: these tests mirror the chat
// tests of request ids (stream_test.go), faults (faults_test.go), the
// stuck-reader watch and the SSE write deadline (hardening_test.go).

// sglangErrorOf decodes SGLang's error shape, {"error":{"message":…}}, and
// fails when the body has any other shape.
func sglangErrorOf(t *testing.T, body string) string {
	t.Helper()
	var e map[string]map[string]any
	if err := json.Unmarshal([]byte(body), &e); err != nil || len(e) != 1 || len(e["error"]) != 1 {
		t.Fatalf("not SGLang's error shape: %q", body)
	}
	msg, _ := e["error"]["message"].(string)
	return msg
}

// lastSGLangEvent decodes the last result event of a /generate stream
// (events before [DONE] or an error event).
func lastSGLangEvent(t *testing.T, evs []timedEvent) (last sglangResultJSON, n int) {
	t.Helper()
	for _, ev := range evs {
		if ev.data == "[DONE]" || strings.HasPrefix(ev.data, `{"error"`) {
			continue
		}
		decodeSGLangBody(t, ev.data, &last)
		n++
	}
	return last, n
}

func TestSGLangGenerate_RequestIDHeader(t *testing.T) {
	e := startSGLang(t, map[string]any{"enable_request_id_headers": true})
	for _, stream := range []bool{false, true} {
		body := `{"text":"a b c","sampling_params":{"max_new_tokens":3}}`
		if stream {
			body = `{"text":"a b c","stream":true,"sampling_params":{"max_new_tokens":3}}`
		}
		r := e.post("/generate", body, "X-Request-Id", "abc")
		if r.Status != http.StatusOK || r.Header.Get("X-Request-Id") != "abc" {
			t.Errorf("stream=%v: status %d, X-Request-Id %q, want abc", stream, r.Status, r.Header.Get("X-Request-Id"))
		}
		var res sglangResultJSON
		if stream {
			evs := sseEvents(t, r.Body)
			decodeSGLangBody(t, evs[len(evs)-2], &res)
		} else {
			decodeSGLangBody(t, r.Body, &res)
		}
		if res.MetaInfo.ID != "abc" {
			t.Errorf("stream=%v: meta_info.id %q, want the header's abc", stream, res.MetaInfo.ID)
		}
	}
	// Without the header the response header carries the id the body
	// reports (the rid here).
	r := e.post("/generate", `{"text":"a","rid":"my-rid","sampling_params":{"max_new_tokens":1}}`)
	var res sglangResultJSON
	decodeSGLangBody(t, r.Body, &res)
	if r.Header.Get("X-Request-Id") != "my-rid" || res.MetaInfo.ID != "my-rid" {
		t.Errorf("X-Request-Id %q, meta_info.id %q, want my-rid", r.Header.Get("X-Request-Id"), res.MetaInfo.ID)
	}
	// Off by default, as for chat.
	if r := startSGLang(t, nil).post("/generate", `{"text":"a","sampling_params":{"max_new_tokens":1}}`, "X-Request-Id", "abc"); r.Header.Get("X-Request-Id") != "" {
		t.Errorf("X-Request-Id %q without enable_request_id_headers", r.Header.Get("X-Request-Id"))
	}
}

func TestSGLangGenerate_StatusFaultsInSGLangShape(t *testing.T) {
	e := startSGLang(t, map[string]any{"allow_fault_headers": true})
	tests := []struct {
		fault, retryAfter string
		status            int
		msg               string
	}{
		{"rate_limit;retry_after=2500ms", "3", 429, "Rate limit reached (injected fault)."},
		{"server_error", "", 500, "Internal Server Error (injected fault)"},
		{"unavailable", "1", 503, "The server is temporarily unavailable (injected fault)."},
		{"context_length", "", 400, "This model's maximum context length is 8192 tokens."},
	}
	for _, tt := range tests {
		r := e.post("/generate", `{"text":"hello","sampling_params":{"max_new_tokens":5}}`, "X-Mocker-Fault", tt.fault)
		msg := sglangErrorOf(t, r.Body)
		if r.Status != tt.status || !strings.HasPrefix(msg, tt.msg) || r.Header.Get("Retry-After") != tt.retryAfter {
			t.Errorf("%s: %d %s (Retry-After %q)", tt.fault, r.Status, r.Body, r.Header.Get("Retry-After"))
		}
	}
	r := e.post("/generate", `{"text":"hello"}`, "X-Mocker-Fault", "explode")
	if msg := sglangErrorOf(t, r.Body); r.Status != 400 || !strings.Contains(msg, `unknown fault "explode"`) {
		t.Errorf("malformed header: %d %s", r.Status, r.Body)
	}
	// A mid-stream fault on a non-streamed request: stream_error is a 500.
	r = e.post("/generate", `{"text":"hello","sampling_params":{"max_new_tokens":5}}`, "X-Mocker-Fault", "stream_error;after=2")
	if msg := sglangErrorOf(t, r.Body); r.Status != 500 || msg != "Internal Server Error" {
		t.Errorf("stream_error without streaming: %d %s", r.Status, r.Body)
	}
}

func TestSGLangGenerate_MidStreamFaults(t *testing.T) {
	e := startSGLang(t, map[string]any{"allow_fault_headers": true})
	const body = `{"text":"stream me","stream":true,"sampling_params":{"max_new_tokens":20}}`

	resp, evs, err := streamRawAt(t, e, "/generate", body, "X-Mocker-Fault", "truncate;after=5")
	if err != nil {
		t.Fatalf("truncate: %v", err)
	}
	last, _ := lastSGLangEvent(t, evs)
	for _, ev := range evs {
		if ev.data == "[DONE]" || strings.Contains(ev.data, `"error"`) || strings.Contains(ev.data, `"finish_reason":{`) {
			t.Errorf("truncate: unexpected event %s", ev.data)
		}
	}
	if len(last.OutputIDs) != 5 || resp.StatusCode != 200 || !resp.Close {
		t.Errorf("truncate: %d tokens, status %d, closed %v; want 5, 200, true", len(last.OutputIDs), resp.StatusCode, resp.Close)
	}

	_, evs, err = streamRawAt(t, e, "/generate", body, "X-Mocker-Fault", "stream_error;after=3")
	n := len(evs)
	if err != nil || n < 3 || evs[n-1].data != "[DONE]" {
		t.Fatalf("stream_error: %v, events %v", err, evs)
	}
	if msg := sglangErrorOf(t, evs[n-2].data); msg != "Internal Server Error (injected stream_error fault)" {
		t.Errorf("stream_error event %s", evs[n-2].data)
	}
	if last, _ := lastSGLangEvent(t, evs); len(last.OutputIDs) != 3 || last.MetaInfo.FinishReason != nil {
		t.Errorf("stream_error: last result %+v, want 3 tokens and no finish_reason", last)
	}
	testutil.WaitFor(t, 2*time.Second, "faulted streams to release the engine", e.idle)
}

// --failure-script applies to /generate as to every generation endpoint.
func TestSGLangGenerate_FailureScript(t *testing.T) {
	e := startSGLang(t, map[string]any{"failure_script": "every 2nd: server_error"})
	for i, want := range []int{200, 500, 200, 500} {
		r := e.post("/generate", `{"text":"a","sampling_params":{"max_new_tokens":2}}`)
		if r.Status != want {
			t.Errorf("request %d: %d %s, want %d", i+1, r.Status, r.Body, want)
		}
		if want == 500 {
			sglangErrorOf(t, r.Body)
		}
	}
}

// A /generate client that stops reading is aborted like a chat client
// (TestHardening_StuckReaderIsAbortedAndItsKVFreed).
func TestSGLangGenerate_StuckReaderIsAbortedAndItsKVFreed(t *testing.T) {
	e := startSGLang(t, map[string]any{"max_unflushed_tokens": 64, "speedup_ratio": 1.0,
		"timing_model": "fixed", "fixed_prefill_ms": 1.0, "fixed_decode_ms": 1.0})
	c := e.startNonReaderOf("/generate", `{"text":"hello","stream":true,"sampling_params":{"max_new_tokens":8000}}`)
	testutil.WaitFor(t, 2*time.Second, "the sequence to run", func() bool { return e.engines[0].Load().Running == 1 })
	var stuckAt time.Time
	testutil.WaitFor(t, 5*time.Second, "the stuck stream's KV to be freed", func() bool {
		if stuckAt.IsZero() && e.srv.StuckStreams(64) > 0 {
			stuckAt = time.Now()
		}
		l := e.engines[0].Load()
		return l.Running == 0 && l.ActiveBlocks == 0
	})
	if stuckAt.IsZero() {
		t.Fatal("the KV was freed but no stream was ever seen stuck")
	}
	if d := time.Since(stuckAt); d > time.Second {
		t.Errorf("KV freed %v after the stream got stuck, want about 200 ms", d)
	}
	s := readUntilDone(c)
	i := strings.LastIndex(s, `data: {"error":{"message":`)
	if i < 0 || !strings.Contains(s[i:], "64 or more generated tokens were left unread") || !strings.Contains(s[i:], "data: [DONE]") {
		t.Errorf("stream end: %q", s[max(0, len(s)-400):])
	}
	testutil.WaitFor(t, 2*time.Second, "the request to end", e.idle)
}

// A /generate client that stops reading, with the stuck-reader watch off,
// is ended by the SSE write deadline: its engine work stops long before its
// max_new_tokens would end it.
func TestSGLangGenerate_WriteDeadlineEndsAStalledStream(t *testing.T) {
	e := startSGLang(t, map[string]any{"max_unflushed_tokens": 0, "speedup_ratio": 1.0,
		"timing_model": "fixed", "fixed_prefill_ms": 1.0, "fixed_decode_ms": 5.0})
	e.srv.SetWriteTimeout(300 * time.Millisecond)
	start := time.Now()
	// 8000 tokens at 5 ms: 40 s of engine work without the deadline.
	e.startNonReaderOf("/generate", `{"text":"hello","stream":true,"sampling_params":{"max_new_tokens":8000}}`)
	testutil.WaitFor(t, 2*time.Second, "the sequence to run", func() bool { return e.engines[0].Load().Running == 1 })
	testutil.WaitFor(t, 10*time.Second, "the write deadline to end the stream", func() bool {
		l := e.engines[0].Load()
		return l.Running == 0 && l.ActiveBlocks == 0
	})
	t.Logf("stream ended %v after it started", time.Since(start))
	testutil.WaitFor(t, 2*time.Second, "the request to end", e.idle)
}

// /generate reads its own fields straight into the typed request, so its
// errors name them (no translation into completions fields).
func TestSGLangGenerate_ErrorsNameSGLangFields(t *testing.T) {
	e := startSGLang(t, nil)
	for _, tc := range []struct{ body, msg string }{
		{`{"text":"a","sampling_params":{"max_new_tokens":"x"}}`, "Invalid type for field 'sampling_params.max_new_tokens'"},
		{`{"text":"a","sampling_params":{"max_new_tokens":0}}`, "max_new_tokens must be at least 1, got 0."},
		{`{"text":"a","sampling_params":{"max_new_tokens":9000}}`, "max_new_tokens=9000 cannot be greater than max_model_len=max_total_tokens=8192."},
		{`{"text":5}`, "Invalid type for field 'text': expected string"},
		{`{"input_ids":[1,"x"]}`, "Invalid type for field 'input_ids[1]'"},
		{`{"text":["a",7]}`, "Invalid type for field 'text[1]'"},
		{`{"text":"a","sampling_params":{"sampling_seed":1.5}}`, "Invalid type for field 'sampling_params.sampling_seed'"},
		{`{"text":"a","sampling_params":7}`, "Invalid type for field 'sampling_params'"},
	} {
		r := e.post("/generate", tc.body)
		if msg := sglangErrorOf(t, r.Body); r.Status != 400 || !strings.HasPrefix(msg, tc.msg) {
			t.Errorf("%s: %d %q, want a message starting %q", tc.body, r.Status, msg, tc.msg)
		}
	}
}
