package api

import (
	"net/http"
	"testing"
)

func TestDrainingRefusesGenerationButNotOtherEndpoints(t *testing.T) {
	env := startServer(t, map[string]any{"speedup_ratio": "inf"})
	env.srv.SetDraining(true)
	for _, path := range []string{"/v1/chat/completions", "/v1/completions"} {
		body := helloChat + `}`
		if path == "/v1/completions" {
			body = `{"prompt":"Hello"}`
		}
		r := env.post(path, body)
		if r.Status != http.StatusServiceUnavailable {
			t.Fatalf("%s while draining = %d %s", path, r.Status, r.Body)
		}
		msg, typ, param, code := errorOf(t, r)
		if typ != "ServiceUnavailableError" || code != 503 || param != nil || msg == "" {
			t.Errorf("%s error = %q %q %v %v", path, msg, typ, param, code)
		}
	}
	if r := env.Get("/health"); r.Status != http.StatusOK {
		t.Errorf("/health while draining = %d", r.Status)
	}
	if r := env.Get("/v1/models"); r.Status != http.StatusOK {
		t.Errorf("/v1/models while draining = %d", r.Status)
	}
	env.srv.SetDraining(false)
	if r := env.post("/v1/chat/completions", helloChat+`,"max_tokens":2}`); r.Status != http.StatusOK {
		t.Errorf("chat after undrain = %d %s", r.Status, r.Body)
	}
}

func TestHealthFailingAnswers503UntilCleared(t *testing.T) {
	env := startServer(t, nil)
	env.srv.SetHealthFailing(true)
	for _, path := range []string{"/health", "/ping"} {
		r := env.Get(path)
		if r.Status != http.StatusServiceUnavailable {
			t.Fatalf("%s while failing = %d", path, r.Status)
		}
		if _, typ, _, _ := errorOf(t, r); typ != "ServiceUnavailableError" {
			t.Errorf("%s error type %q", path, typ)
		}
	}
	env.srv.SetHealthFailing(false)
	if r := env.Get("/health"); r.Status != http.StatusOK {
		t.Errorf("/health after clearing = %d", r.Status)
	}
}
