package kvtransfer

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzSideChannelBody posts arbitrary bodies to both side-channel routes of
// a prefill worker holding one handoff: every answer is a JSON error with a
// 4xx status naming no engine id, never a panic or a 5xx, and the handoff
// is released only by a body that names it exactly.
func FuzzSideChannelBody(f *testing.F) {
	for _, seed := range []string{
		`{"remote_engine_id":"prefill-0","remote_request_id":"req-1","remote_block_ids":[1,2]}`,
		`{"remote_engine_id":"other","remote_request_id":"req-1"}`,
		`{"remote_engine_id":"prefill-0","remote_request_id":"nope"}`,
		`{"remote_engine_id":"prefill-0","remote_request_id":"req-1","remote_block_ids":[9]}`,
		`{"remote_block_ids":[1e400]}`, `[]`, `null`, `{`, ``, strings.Repeat(`[`, 10000),
	} {
		f.Add(seed, true)
		f.Add(seed, false)
	}
	f.Fuzz(func(t *testing.T, body string, release bool) {
		s, err := New(nil, Options{EngineID: "prefill-0"})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		// A registered handoff whose blocks are held (rank -1: no engine
		// to ask, so a release only forgets it).
		s.NewHandoff(HandoffSpec{RequestID: "req-1", Rank: -1})
		s.Held("req-1", []int{1, 2}, false)
		path := PullPath
		if release {
			path = ReleasePath
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
		switch code := rec.Code; {
		case code == http.StatusNoContent:
			var b pullBody
			if json.Unmarshal([]byte(body), &b) != nil || b.EngineID != "prefill-0" || b.RequestID != "req-1" {
				t.Fatalf("%s accepted %q", path, body)
			}
		case code >= 400 && code < 500:
			var e errorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == "" {
				t.Fatalf("%d answer is not a JSON error: %q", code, rec.Body.String())
			}
			if code == http.StatusNotFound && strings.Contains(e.Error, "prefill-0") {
				t.Fatalf("404 names the engine id: %q", e.Error)
			}
		default:
			t.Fatalf("%s %q: status %d", path, body, code)
		}
	})
}
