package routerlab

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestClientReadsTheStream follows a real SSE answer from a listening
// server: tokens and their ids, usage with cached tokens, and the worker
// from the header or, when a router stripped it, from the final usage
// chunk's mocker_worker field.
func TestClientReadsTheStream(t *testing.T) {
	for _, c := range []struct {
		name, header, bodyField, want string
	}{
		{"header", "2", "", "2"},
		{"body", "", `,"mocker_worker":"7"`, "7"},
		{"header wins", "1", `,"mocker_worker":"7"`, "1"},
		{"neither", "", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("X-Request-Id") != "lab-4" {
					http.Error(w, "no request id", http.StatusBadRequest)
					return
				}
				if c.header != "" {
					w.Header().Set(HeaderWorker, c.header)
				}
				w.Header().Set("Content-Type", "text/event-stream")
				for i, id := range []int{11, 12, 13} {
					fmt.Fprintf(w, "data: {\"id\":\"cmpl-1\",\"choices\":[{\"index\":0,\"text\":\"t%d\",\"token_ids\":[%d]}]}\n\n", i, id)
					w.(http.Flusher).Flush()
					time.Sleep(5 * time.Millisecond)
				}
				fmt.Fprintf(w, "data: {\"id\":\"cmpl-1\",\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"total_tokens\":7,\"completion_tokens\":3,\"prompt_tokens_details\":{\"cached_tokens\":2}}%s}\n\ndata: [DONE]\n\n", c.bodyField)
			}))
			defer srv.Close()
			cl := newClient(srv.URL, "m", "", 2, time.Minute)
			defer cl.close()
			var body []byte
			res := cl.do(context.Background(), requestID(4), []uint32{1, 2, 3, 4}, 3, true, &body)
			if res.err != "" || res.status != 200 || res.tokens != 3 || res.promptTokens != 4 || res.cached != 2 ||
				fmt.Sprint(res.ids) != "[11 12 13]" || res.worker != c.want {
				t.Errorf("result %+v, want 3 tokens [11 12 13], 4 prompt, 2 cached, worker %q", res, c.want)
			}
			if gap := res.last.Sub(res.first); gap < 8*time.Millisecond {
				t.Errorf("first to last token %v: the stream was not read as it came", gap)
			}
			if string(body) != `{"model":"m","prompt":[1,2,3,4],"max_tokens":3,"min_tokens":3,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true},"return_token_ids":true}` {
				t.Errorf("request body %s", body)
			}
		})
	}
}
