package api

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

func TestTokenizeDetokenize(t *testing.T) {
	env := startServer(t, nil)
	tests := []struct{ path, body, want string }{
		{"/tokenize", `{"prompt":"Hello, world!"}`, `{"count":4,"max_model_len":32768,"tokens":[38422,17,69937,35354],"token_strs":null}`},
		{"/tokenize", `{"prompt":"Hello, world!","return_token_strs":true,"model":"mocker-model"}`, `{"count":4,"max_model_len":32768,"tokens":[38422,17,69937,35354],"token_strs":["Hello",","," world","!"]}`},
		{"/tokenize", `{"messages":[{"role":"user","content":"Hello!"}]}`, `{"count":11,"max_model_len":32768,"tokens":[1,94002,18,38422,35354,2,18,1,120736,33288,18],"token_strs":null}`},
		{"/tokenize", `{"messages":[{"role":"user","content":"Hello!"}],"add_generation_prompt":false}`, `{"count":7,"max_model_len":32768,"tokens":[1,94002,18,38422,35354,2,18],"token_strs":null}`},
		{"/detokenize", `{"tokens":[3,1000,3518,16]}`, `{"prompt":"<think> baba kelo."}`},
	}
	for _, tt := range tests {
		r := env.post(tt.path, tt.body)
		if r.Status != 200 || r.Body != tt.want {
			t.Errorf("%s %s = %d %s, want %s", tt.path, tt.body, r.Status, r.Body, tt.want)
		}
	}
	errs := []struct {
		path, body string
		status     int
		msg        string
	}{
		{"/detokenize", `{"tokens":[1,131072]}`, 400, "Token id 131072 is out of vocabulary"},
		{"/detokenize", `{"tokens":"x"}`, 400, "Invalid type for field 'tokens': expected array"},
		{"/detokenize", `{}`, 400, "Field required: tokens"},
		{"/tokenize", `{"prompt":"a","messages":[]}`, 400, "Either `prompt` or `messages` must be given, not both."},
		{"/tokenize", `{"prompt":"a","model":"x"}`, 404, "The model `x` does not exist."},
		{"/tokenize", `{"prompt":1}`, 400, "Invalid type for field 'prompt': expected string"},
	}
	for _, tt := range errs {
		r := env.post(tt.path, tt.body)
		if msg, _, _, _ := errorOf(t, r); r.Status != tt.status || msg != tt.msg {
			t.Errorf("%s %s = %d %q, want %d %q", tt.path, tt.body, r.Status, msg, tt.status, tt.msg)
		}
	}
}

func TestModelsAndMisc(t *testing.T) {
	env := startServer(t, map[string]any{"served_model_name": []any{"a", "b"}, "model": "root"})
	r := env.Get("/v1/models")
	re := regexp.MustCompile(`^\{"object":"list","data":\[\{"id":"a","object":"model","created":1760000000,"owned_by":"vllm","root":"root","parent":null,"max_model_len":32768,"permission":\[\{"id":"modelperm-[0-9a-f]{32}","object":"model_permission","created":1760000000,"allow_create_engine":false,"allow_sampling":true,"allow_logprobs":true,"allow_search_indices":false,"allow_view":true,"allow_fine_tuning":false,"organization":"\*","group":null,"is_blocking":false\}\]\},\{"id":"b",.*\]\}$`)
	if r.Status != 200 || !re.MatchString(r.Body) {
		t.Errorf("/v1/models = %s", r.Body)
	}
	// Every served name is accepted; responses carry the first (vLLM).
	if r := env.post("/v1/chat/completions", helloChat+`,"model":"b","max_tokens":1}`); jsonOf(t, r.Body)["model"] != "a" {
		t.Errorf("second served name: %s", r.Body)
	}
	if r := env.post("/v1/chat/completions", helloChat+`,"max_tokens":1}`); jsonOf(t, r.Body)["model"] != "a" {
		t.Errorf("default model: %s", r.Body)
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/health", ""}, {"GET", "/ping", ""}, {"POST", "/ping", ""},
	} {
		if r := env.do(c.method, c.path, "", c.body); r.Status != 200 || r.Body != "" {
			t.Errorf("%s %s = %d %q", c.method, c.path, r.Status, r.Body)
		}
	}
	if r := env.Get("/version"); r.Body != `{"version":"test-version"}` {
		t.Errorf("/version = %s", r.Body)
	}
	if r := env.Get("/load"); r.Body != `{"server_load":0}` || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("/load = %s", r.Body)
	}
	if r := env.Get("/metrics"); r.Status != 200 || r.Body != "" || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") {
		t.Errorf("/metrics = %d %q", r.Status, r.Body)
	}
	if r := env.Get("/nope"); r.Status != 404 || r.Body != `{"detail":"Not Found"}` {
		t.Errorf("404: %d %s", r.Status, r.Body)
	}
	if r := env.Get("/v1/chat/completions"); r.Status != 405 || r.Body != `{"detail":"Method Not Allowed"}` {
		t.Errorf("405: %d %s", r.Status, r.Body)
	}
	r = env.do("OPTIONS", "/v1/chat/completions", "", "", "Origin", "http://x", "Access-Control-Request-Method", "POST")
	if r.Status != 200 || r.Header.Get("Access-Control-Allow-Origin") != "*" ||
		r.Header.Get("Access-Control-Allow-Methods") != "*" || r.Header.Get("Access-Control-Allow-Headers") != "*" {
		t.Errorf("preflight: %d %v", r.Status, r.Header)
	}
	for _, p := range []string{"/health", "/nope", "/v1/models", "/load"} {
		if env.Get(p).Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("%s lacks CORS header", p)
		}
	}
}

func TestAuth(t *testing.T) {
	env := startServer(t, map[string]any{"api_key": []any{"k1", "k2"}, "dev_mode": true})
	for _, c := range []struct {
		path, auth string
		status     int
	}{
		{"/v1/models", "", 401},
		{"/v1/models", "Bearer nope", 401},
		{"/v1/models", "bearer k1", 401},
		{"/v1/models", "Bearer k1", 200},
		{"/v1/models", "Bearer k2", 200},
		{"/v1/unknown", "", 401},
		{"/v1/unknown", "Bearer k1", 404},
		{"/health", "", 200},
		{"/load", "", 200},
	} {
		var h []string
		if c.auth != "" {
			h = []string{"Authorization", c.auth}
		}
		r := env.Get(c.path, h...)
		if r.Status != c.status {
			t.Errorf("%s %q = %d, want %d", c.path, c.auth, r.Status, c.status)
		}
		if c.status == 401 && r.Body != `{"error":"Unauthorized"}` {
			t.Errorf("401 body %s", r.Body)
		}
	}
	// The endpoints that use the model or change state are guarded too.
	for _, c := range []struct{ path, body string }{
		{"/tokenize", `{"prompt":"a"}`}, {"/detokenize", `{"tokens":[1]}`}, {"/reset_prefix_cache", ""},
	} {
		if r := env.post(c.path, c.body); r.Status != 401 || r.Body != `{"error":"Unauthorized"}` {
			t.Errorf("%s without a key = %d %s, want 401", c.path, r.Status, r.Body)
		}
		r := env.do("POST", c.path, "application/json", c.body, "Authorization", "Bearer k2")
		if r.Status != 200 {
			t.Errorf("%s with a key = %d %s", c.path, r.Status, r.Body)
		}
	}
	if r := env.do("OPTIONS", "/v1/models", "", ""); r.Status != 200 {
		t.Errorf("OPTIONS needs no auth: %d", r.Status)
	}
	// Authentication comes before the content-type check.
	if r := env.do("POST", "/v1/chat/completions", "text/plain", "x"); r.Status != 401 {
		t.Errorf("order: %d", r.Status)
	}
}

func TestStartupGateAndHealth(t *testing.T) {
	env := startServer(t, map[string]any{"startup_time": 30.0})
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/health", ""}, {"GET", "/ping", ""}, {"POST", "/ping", ""},
		{"POST", "/v1/chat/completions", helloChat + "}"}, {"POST", "/v1/completions", `{"prompt":"a"}`},
	} {
		r := env.do(c.method, c.path, "application/json", c.body)
		if msg, typ, _, _ := errorOf(t, r); r.Status != 503 || msg != "The server is starting up." || typ != "ServiceUnavailableError" {
			t.Errorf("%s %s during startup = %d %q", c.method, c.path, r.Status, msg)
		}
	}
	for _, p := range []string{"/metrics", "/v1/models", "/load", "/version"} {
		if r := env.Get(p); r.Status != 200 {
			t.Errorf("%s during startup = %d", p, r.Status)
		}
	}
	env.srv.SetReady(true)
	if r := env.Get("/health"); r.Status != 200 {
		t.Errorf("/health after startup = %d", r.Status)
	}
	if r := env.post("/v1/chat/completions", helloChat+`,"max_tokens":1}`); r.Status != 200 {
		t.Errorf("chat after startup = %d", r.Status)
	}
	env.srv.MarkEngineDead(0)
	if r := env.Get("/health"); r.Status != 503 {
		t.Errorf("/health with a dead engine = %d", r.Status)
	}
}

func TestResetPrefixCache(t *testing.T) {
	// Like vLLM, the route exists only in dev mode.
	if r := startServer(t, nil).post("/reset_prefix_cache", ""); r.Status != 404 {
		t.Errorf("reset outside dev mode = %d %s, want 404", r.Status, r.Body)
	}
	env := startServer(t, map[string]any{"dp_size": 2, "speedup_ratio": 1.0, "timing_model": "fixed",
		"fixed_prefill_ms": 1.0, "fixed_decode_ms": 20.0, "dev_mode": true})
	if r := env.post("/reset_prefix_cache", ""); r.Status != 200 || r.Body != "" {
		t.Errorf("idle reset = %d %s", r.Status, r.Body)
	}
	// Keep rank 1 busy with a stream, then reset.
	cancel := env.holdStream("X-data-parallel-rank", "1")
	defer cancel()
	r := env.post("/reset_prefix_cache", "")
	msg, typ, _, _ := errorOf(t, r)
	if r.Status != 409 || typ != "ConflictError" || msg != "Prefix cache reset failed: blocks are in use on DP rank(s) 1." {
		t.Errorf("busy reset = %d %s", r.Status, r.Body)
	}
	cancel()
	testutil.WaitFor(t, 2*time.Second, "idle", env.idle)
}

type panicHandler struct{}

func (panicHandler) ServeHTTP(http.ResponseWriter, *http.Request) { panic("boom") }

func TestPanicRecovery(t *testing.T) {
	env := startServer(t, nil, settings.Deps{Metrics: panicHandler{}})
	r := env.Get("/metrics")
	msg, typ, _, _ := errorOf(t, r)
	if r.Status != 500 || typ != "InternalServerError" || msg != "Internal Server Error" {
		t.Errorf("panic: %d %s", r.Status, r.Body)
	}
	if r := env.Get("/health"); r.Status != 200 {
		t.Errorf("after panic: %d", r.Status)
	}
}

func TestRequestIDs(t *testing.T) {
	env := startServer(t, map[string]any{"enable_request_id_headers": true})
	cases := []struct {
		header, body, want string
	}{
		{"hdr-1", `,"request_id":"body-1"`, "hdr-1"},
		{"", `,"request_id":"body-1"`, "body-1"},
		{strings.Repeat("x", 513), `,"request_id":"body-2"`, "body-2"},
		{"", ``, ""},
	}
	for _, c := range cases {
		var h []string
		if c.header != "" {
			h = []string{"X-Request-Id", c.header}
		}
		r := env.post("/v1/completions", `{"prompt":"a","max_tokens":1`+c.body+`}`, h...)
		id := jsonOf(t, r.Body)["id"].(string)
		got := r.Header.Get("X-Request-Id")
		if c.want != "" && (id != "cmpl-"+c.want || got != c.want) {
			t.Errorf("%q/%q: id %s header %s", c.header, c.body, id, got)
		}
		if c.want == "" && !regexp.MustCompile(`^cmpl-[0-9a-f]{32}$`).MatchString(id) {
			t.Errorf("random id %s", id)
		}
	}
}
