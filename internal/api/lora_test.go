package api

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/testutil"
	"github.com/openai/openai-go/v3"
)

// loraOverlay enables LoRA with runtime updating, plus extra keys.
func loraOverlay(extra map[string]any) map[string]any {
	o := map[string]any{"enable_lora": true, "max_loras": 2, "allow_runtime_lora_updating": true}
	for k, v := range extra {
		o[k] = v
	}
	return o
}

// startLoRAServer starts a server and loads its --lora-modules, as the
// binary does at startup.
func startLoRAServer(t *testing.T, extra map[string]any) *testEnv {
	t.Helper()
	env := startServer(t, loraOverlay(extra))
	if err := env.srv.LoadStaticAdapters(); err != nil {
		t.Fatal(err)
	}
	return env
}

// modelCards returns /v1/models as id → card.
func (e *testEnv) modelCards() map[string]map[string]any {
	e.t.Helper()
	r := e.Get("/v1/models")
	if r.Status != http.StatusOK {
		e.t.Fatalf("/v1/models: %d %s", r.Status, r.Body)
	}
	out := map[string]map[string]any{}
	var ids []string
	for _, c := range jsonOf(e.t, r.Body)["data"].([]any) {
		card := c.(map[string]any)
		ids = append(ids, card["id"].(string))
		out[card["id"].(string)] = card
	}
	out["#order"] = map[string]any{"ids": ids}
	return out
}

func TestLoRAAdapterLifecycleThroughTheSDK(t *testing.T) {
	env := startLoRAServer(t, nil)
	ctx := context.Background()
	c := env.sdkClient()

	r := env.post("/v1/load_lora_adapter", `{"lora_name":"sql","lora_path":"/adapters/sql"}`)
	if r.Status != http.StatusOK || r.Body != "Success: LoRA adapter 'sql' added successfully." {
		t.Fatalf("load: %d %q", r.Status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		t.Errorf("load answer has Content-Type %q; vLLM sends none", ct)
	}

	page, err := c.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	if !slices.Equal(ids, []string{"mocker-model", "sql"}) {
		t.Errorf("models %v, want [mocker-model sql]", ids)
	}
	sql := page.Data[1]
	if got := sql.JSON.ExtraFields["parent"].Raw(); got != `"mocker-model"` {
		t.Errorf("parent %s", got)
	}
	if got := sql.JSON.ExtraFields["root"].Raw(); got != `"/adapters/sql"` {
		t.Errorf("root %s", got)
	}
	if got := sql.JSON.ExtraFields["max_model_len"].Raw(); got != "null" {
		t.Errorf("adapter max_model_len %s, want null", got)
	}

	stream := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model: "sql", Messages: helloMessages, MaxTokens: openai.Int(4),
	})
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		ch := stream.Current()
		if ch.Model != "sql" {
			t.Errorf("chunk model %q, want the adapter", ch.Model)
		}
		acc.AddChunk(ch)
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Choices) != 1 || acc.Choices[0].Message.Content == "" || acc.Choices[0].FinishReason != "length" {
		t.Errorf("streamed %+v", acc.Choices)
	}

	r = env.post("/v1/unload_lora_adapter", `{"lora_name":"sql"}`)
	if r.Status != http.StatusOK || r.Body != "Success: LoRA adapter 'sql' removed successfully." {
		t.Fatalf("unload: %d %q", r.Status, r.Body)
	}
	_, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "sql", Messages: helloMessages, MaxTokens: openai.Int(2)})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound ||
		apiErr.Message != "The model `sql` does not exist." || apiErr.Type != "NotFoundError" {
		t.Errorf("request for the unloaded adapter: %v", err)
	}
	if cards := env.modelCards(); len(cards["#order"]["ids"].([]string)) != 1 {
		t.Errorf("models after unload %v", cards["#order"])
	}
	testutil.WaitFor(t, 2*time.Second, "idle engines", env.idle)
}

func TestLoRAModulesAreServedFromStartup(t *testing.T) {
	env := startLoRAServer(t, map[string]any{
		"served_model_name": []any{"base", "other"},
		"lora_modules": []any{"sql=/adapters/sql",
			`{"name":"chat","path":"/adapters/chat","base_model_name":"other"}`},
	})
	cards := env.modelCards()
	if got := cards["#order"]["ids"].([]string); !slices.Equal(got, []string{"base", "other", "sql", "chat"}) {
		t.Errorf("models %v", got)
	}
	if cards["sql"]["parent"] != "base" || cards["chat"]["parent"] != "other" || cards["chat"]["root"] != "/adapters/chat" {
		t.Errorf("adapter cards %v / %v", cards["sql"], cards["chat"])
	}
	if cards["base"]["parent"] != nil || cards["base"]["max_model_len"] == nil {
		t.Errorf("base card %v", cards["base"])
	}
	r := env.post("/v1/completions", `{"model":"chat","prompt":"hi","max_tokens":2}`)
	if r.Status != http.StatusOK || jsonOf(t, r.Body)["model"] != "chat" {
		t.Errorf("completion from a static adapter: %d %s", r.Status, r.Body)
	}
	r = env.post("/tokenize", `{"model":"sql","prompt":"hi"}`)
	if r.Status != http.StatusOK {
		t.Errorf("tokenize with an adapter: %d %s", r.Status, r.Body)
	}
}

func TestLoRABadInput(t *testing.T) {
	dir := t.TempDir()
	okDir := filepath.Join(dir, "ok")
	wide := filepath.Join(dir, "wide")
	for _, d := range []string{okDir, wide} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(okDir, "adapter_config.json"), []byte(`{"r": 16}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wide, "adapter_config.json"), []byte(`{"r": 64}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := startLoRAServer(t, map[string]any{"lora_path_check": "exists", "lora_modules": []any{"sql=" + okDir}})
	missing := filepath.Join(dir, "missing")
	tests := []struct {
		name, path, body string
		status           int
		typ, msg         string
	}{
		{"load twice", "/v1/load_lora_adapter", `{"lora_name":"sql","lora_path":"` + okDir + `"}`,
			400, "InvalidUserInput", "The lora adapter 'sql' has already been loaded."},
		{"unload unknown", "/v1/unload_lora_adapter", `{"lora_name":"nope"}`,
			404, "NotFoundError", "The lora adapter 'nope' cannot be found."},
		{"name of the base model", "/v1/load_lora_adapter", `{"lora_name":"mocker-model","lora_path":"` + okDir + `"}`,
			400, "InvalidUserInput", "The lora adapter 'mocker-model' has the name of a served model."},
		{"empty name", "/v1/load_lora_adapter", `{"lora_name":"","lora_path":"/p"}`,
			400, "InvalidUserInput", "Both 'lora_name' and 'lora_path' must be provided."},
		{"empty unload name", "/v1/unload_lora_adapter", `{"lora_name":""}`,
			400, "InvalidUserInput", "'lora_name' needs to be provided to unload a LoRA adapter."},
		{"missing path field", "/v1/load_lora_adapter", `{"lora_name":"x"}`,
			400, "Bad Request", "Field required: lora_path"},
		{"name of the wrong type", "/v1/load_lora_adapter", `{"lora_name":5,"lora_path":"/p"}`,
			400, "Bad Request", "Invalid type for field 'lora_name': expected string"},
		{"path that does not exist", "/v1/load_lora_adapter", `{"lora_name":"x","lora_path":"` + missing + `"}`,
			404, "NotFoundError", "Loading lora x failed: No adapter found for " + missing},
		{"rank above max_lora_rank", "/v1/load_lora_adapter", `{"lora_name":"x","lora_path":"` + wide + `"}`,
			400, "BadRequestError", "LoRA rank 64 is greater than max_lora_rank 16."},
		{"unknown model", "/v1/completions", `{"model":"x","prompt":"hi"}`,
			404, "NotFoundError", "The model `x` does not exist."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := env.post(tt.path, tt.body)
			msg, typ, _, code := errorOf(t, r)
			if r.Status != tt.status || int(code) != tt.status || typ != tt.typ || msg != tt.msg {
				t.Errorf("%d %s %q, want %d %s %q", r.Status, typ, msg, tt.status, tt.typ, tt.msg)
			}
		})
	}
	// Nothing leaked: only the static adapter is listed.
	if got := env.modelCards()["#order"]["ids"].([]string); !slices.Equal(got, []string{"mocker-model", "sql"}) {
		t.Errorf("models after bad input %v", got)
	}
}

func TestLoRAUpdatingRoutesNeedThePermission(t *testing.T) {
	env := startServer(t, map[string]any{"enable_lora": true})
	for _, p := range []string{"/v1/load_lora_adapter", "/v1/unload_lora_adapter"} {
		if r := env.post(p, `{"lora_name":"a","lora_path":"/a"}`); r.Status != http.StatusNotFound {
			t.Errorf("%s without VLLM_ALLOW_RUNTIME_LORA_UPDATING: %d %s", p, r.Status, r.Body)
		}
	}
}
