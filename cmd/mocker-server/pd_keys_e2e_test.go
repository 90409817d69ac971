package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/testutil"
)

// bearer adds an API key to every request of a client.
type bearer struct {
	key  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}

// TestPDSideChannelNeedsTheAPIKey runs a prefill and a decode worker with
// --api-key. A client without the key can no longer release a real handoff
// on the prefill worker's API port (it got 204 and the decode then failed
// with 500); the decode worker, which sends its key, pulls and releases it.
func TestPDSideChannelNeedsTheAPIKey(t *testing.T) {
	keys := map[string]any{"api_key": []any{"k3y"}}
	prefill := e2eStartProduction(t, loadConfig(t, pdConfig(t, map[string]any{
		"kv_transfer_config": nixlBoth, "worker_id": "prefill-1", "api_key": keys["api_key"]})))
	decode := e2eStartProduction(t, loadConfig(t, pdConfig(t, map[string]any{
		"kv_transfer_config": nixlBoth, "worker_id": "decode-1", "api_key": keys["api_key"]})))
	keyed := &http.Client{Timeout: 30 * time.Second, Transport: bearer{"k3y", http.DefaultTransport}}
	plain := &http.Client{Timeout: 30 * time.Second}
	defer keyed.CloseIdleConnections()
	defer plain.CloseIdleConnections()

	// The prefill half, by hand: its kv_transfer_params name the handoff.
	p := pdProxy{client: keyed, prefill: prefill.url, decode: decode.url}
	body := pdChatBody("You are terse.", "Say something about keys.", 4)
	pre := clone(body)
	pre["kv_transfer_params"] = map[string]any{"do_remote_decode": true}
	pre["max_tokens"] = 1
	resp := postJSON(t, keyed, prefill.url+"/v1/chat/completions", pre, "")
	var pr struct {
		KVTransferParams struct {
			EngineID  string `json:"remote_engine_id"`
			RequestID string `json:"remote_request_id"`
		} `json:"kv_transfer_params"`
	}
	err := json.NewDecoder(resp.Body).Decode(&pr)
	resp.Body.Close()
	if resp.StatusCode != 200 || err != nil || pr.KVTransferParams.RequestID == "" {
		t.Fatalf("prefill = %d, %v, %+v", resp.StatusCode, err, pr)
	}
	release := fmt.Sprintf(`{"remote_engine_id":%q,"remote_request_id":%q}`, pr.KVTransferParams.EngineID, pr.KVTransferParams.RequestID)
	// mocker_kv_held_blocks follows the engine's published stats, a
	// moment after the prefill's answer.
	var held float64
	testutil.WaitFor(t, 5*time.Second, "the prefill to hold the handoff's blocks", func() bool {
		held = heldBlocks(t, prefill)
		return held > 0
	})
	for _, auth := range []string{"", "Bearer wrong"} {
		req, _ := http.NewRequest(http.MethodPost, prefill.url+"/kv_transfer/release",
			strings.NewReader(release))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := plain.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("release with %q: %d, want 401", auth, resp.StatusCode)
		}
	}
	if v := heldBlocks(t, prefill); v != held {
		t.Errorf("held blocks %v after the refused releases, %v before", v, held)
	}
	// A whole P/D request through the proxy still works: the decode
	// worker's pull and release carry its key, and its handoff is freed
	// (the first one, never pulled, stays held until its timeout).
	res := p.chat(t, "keyed-1", body)
	if res.status != 200 || res.finish == "" {
		t.Fatalf("P/D with keys: %d %s", res.status, res.errBody)
	}
	deadline := time.Now().Add(5 * time.Second)
	for heldBlocks(t, prefill) != held {
		if time.Now().After(deadline) {
			t.Fatalf("%v blocks still held after the decode pulled them", heldBlocks(t, prefill))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
