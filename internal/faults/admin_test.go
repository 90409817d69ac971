package faults

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func adminDo(t *testing.T, url, method, key, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s: Content-Type %q", method, ct)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: body %q: %v", method, raw, err)
	}
	return resp.StatusCode, m
}

func TestAdminHandler_GuardsReadsAndChangesSettings(t *testing.T) {
	in := mustNew(t, Settings{FailureRate: 0.5, FailureTypes: []string{"server_error"}}, Options{})
	ts := httptest.NewServer(NewAdminHandler(in, "s3cret"))
	defer ts.Close()

	for _, key := range []string{"", "wrong"} {
		code, body := adminDo(t, ts.URL, "GET", key, "")
		if code != 401 || len(body) != 1 || body["error"] != "Unauthorized" {
			t.Errorf("key %q: %d %v", key, code, body)
		}
	}
	code, body := adminDo(t, ts.URL, "GET", "s3cret", "")
	if code != 200 || body["failure_rate"] != 0.5 || body["failure_script"] != "" {
		t.Errorf("GET = %d %v", code, body)
	}
	// POST changes only the keys sent.
	code, body = adminDo(t, ts.URL, "POST", "s3cret", `{"failure_script":"first 1: rate_limit"}`)
	if code != 200 || body["failure_rate"] != 0.5 || body["failure_script"] != "first 1: rate_limit" {
		t.Errorf("POST = %d %v", code, body)
	}
	if d, _ := in.Decide(""); d.Fault.Kind != RateLimit {
		t.Errorf("next request after POST: %+v", d)
	}
	// PUT replaces everything.
	code, body = adminDo(t, ts.URL, "PUT", "s3cret", `{"allow_fault_headers":true}`)
	if code != 200 || body["failure_rate"] != 0.0 || body["allow_fault_headers"] != true {
		t.Errorf("PUT = %d %v", code, body)
	}
	for _, bad := range []string{`{"failure_rate":3}`, `{"failure_script":"first x: ok"}`, `{"nope":1}`, `[1]`, `{`} {
		code, body = adminDo(t, ts.URL, "POST", "s3cret", bad)
		if e, _ := body["error"].(map[string]any); code != 400 || e["code"] != 400.0 {
			t.Errorf("POST %s = %d %v", bad, code, body)
		}
	}
	if code, _ := adminDo(t, ts.URL, "DELETE", "s3cret", ""); code != 405 {
		t.Errorf("DELETE = %d", code)
	}
	if got := in.Settings(); !got.AllowHeaders || got.FailureRate != 0 {
		t.Errorf("rejected updates changed the settings: %+v", got)
	}
}

// TestAdminHandler_NamesAnUnknownKey: a misspelt key is refused with the
// key and the list of keys, in the same error type as every other bad
// body, and settingsKeys are exactly Settings' JSON keys.
func TestAdminHandler_NamesAnUnknownKey(t *testing.T) {
	in := mustNew(t, Settings{}, Options{})
	ts := httptest.NewServer(NewAdminHandler(in, "k"))
	defer ts.Close()
	for body, want := range map[string]string{
		`{"failure_rat":0.1}`: `unknown key "failure_rat"; the keys are failure_rate, failure_types, failure_script, allow_fault_headers`,
		`{`:                   "Invalid JSON body",
	} {
		code, m := adminDo(t, ts.URL, "POST", "k", body)
		e, _ := m["error"].(map[string]any)
		if msg, _ := e["message"].(string); code != 400 || e["type"] != "BadRequestError" || !strings.HasPrefix(msg, want) {
			t.Errorf("POST %s = %d %v, want BadRequestError %q", body, code, m, want)
		}
	}
	code, m := adminDo(t, ts.URL, "DELETE", "k", "")
	if e, _ := m["error"].(map[string]any); code != 405 || e["type"] != "MethodNotAllowedError" || e["message"] != "DELETE /: use GET, PUT or POST" {
		t.Errorf("DELETE = %d %v", code, m)
	}
	var tags []string
	st := reflect.TypeFor[Settings]()
	for i := range st.NumField() {
		tags = append(tags, strings.Split(st.Field(i).Tag.Get("json"), ",")[0])
	}
	if !slices.Equal(tags, settingsKeys) {
		t.Errorf("settingsKeys %v, Settings' JSON keys %v", settingsKeys, tags)
	}
}
