package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// The production server counts injected faults on /metrics and answers
// net/http's own errors (431) with JSON.
func TestE2E_InjectedFaultsAreCountedAndStdlibErrorsAreJSON(t *testing.T) {
	cfg := loadConfig(t, map[string]any{"failure_script": "first 2: server_error; next 1: truncate after 1; then ok"})
	r := e2eStartProduction(t, cfg)
	for range 4 {
		resp, err := r.client.Post(r.url+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"messages":[{"role":"user","content":"Hi"}],"max_tokens":3,"stream":true}`))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	exp := r.e2eScrape(t)
	for typ, want := range map[string]float64{"server_error": 2, "truncate": 1, "rate_limit": 0} {
		s := exp.series("mocker_injected_faults_total", map[string]string{"type": typ})
		if len(s) != 1 || s[0].GetCounter().GetValue() != want {
			t.Errorf("mocker_injected_faults_total{type=%q} = %v, want %v", typ, s, want)
		}
	}

	c, err := net.Dial("tcp", strings.TrimPrefix(r.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("a", 2<<20)+"\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	var e struct {
		Error struct {
			Code int    `json:"code"`
			Type string `json:"type"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || resp.StatusCode != 431 || e.Error.Code != 431 ||
		resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("431: %d %v %s", resp.StatusCode, resp.Header, body)
	}
}
