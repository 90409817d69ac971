package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// runAgainst runs cfg (URL filled in) against a real HTTP server running
// handler and returns the result and the number of connections the server
// accepted.
func runAgainst(t *testing.T, cfg Config, handler http.HandlerFunc) (*Result, int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(handler)
	srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	cfg.URL = srv.URL
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 1
	}
	if cfg.Requests == 0 {
		cfg.Requests = 1
	}
	if cfg.MaxTokens == 0 {
		cfg.MaxTokens = 3
	}
	res, err := Run(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res, conns.Load()
}

// The request on the wire, as net/http's server parses it: method, path,
// headers, and a body that encoding/json decodes to what the config asks.
func TestClientRequestOnTheWire(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cfg        Config
		wantPath   string
		wantAccept string
		wantAuth   string
		wantBody   map[string]any // besides model, max_tokens and the prompt
	}{
		{"chat stream", Config{Chat: true, Model: "m1", MaxTokens: 7, PromptTokens: 5, IgnoreEOS: true, APIKey: "sk-test"},
			"/v1/chat/completions", "text/event-stream", "Bearer sk-test",
			map[string]any{"ignore_eos": true, "stream": true, "stream_options": map[string]any{"include_usage": true}}},
		{"completions no stream", Config{Model: "m2", MaxTokens: 2, PromptTokens: 3, NoStream: true},
			"/v1/completions", "", "", map[string]any{"stream": false}},
		{"path override", Config{Chat: true, MaxTokens: 1, Path: "/custom/x", NoStream: true},
			"/custom/x", "", "", map[string]any{"stream": false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			type seen struct {
				method, path, host, agent, ctype, accept, auth string
				length                                         int64
				body                                           []byte
			}
			got := make(chan seen, 1)
			res, _ := runAgainst(t, tc.cfg, func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				got <- seen{r.Method, r.URL.Path, r.Host, r.Header.Get("User-Agent"), r.Header.Get("Content-Type"),
					r.Header.Get("Accept"), r.Header.Get("Authorization"), r.ContentLength, body}
				writeUsage(w, tc.cfg.NoStream, tc.cfg.MaxTokens)
			})
			if res.Requests != 1 || res.Errors != 0 {
				t.Fatalf("requests %d errors %v", res.Requests, res.ErrorKinds)
			}
			s := <-got
			if s.method != http.MethodPost || s.path != tc.wantPath || s.agent != "mocker-bench" ||
				s.ctype != "application/json" || s.accept != tc.wantAccept || s.auth != tc.wantAuth {
				t.Errorf("request %+v", s)
			}
			if !strings.HasPrefix(s.host, "127.0.0.1:") || s.length != int64(len(s.body)) {
				t.Errorf("Host %q, Content-Length %d for %d body bytes", s.host, s.length, len(s.body))
			}
			var body map[string]any
			if err := json.Unmarshal(s.body, &body); err != nil {
				t.Fatalf("body %s: %v", s.body, err)
			}
			wantModel := tc.cfg.Model
			if wantModel == "" {
				wantModel = "mocker-model"
			}
			if body["model"] != wantModel || body["max_tokens"] != float64(tc.cfg.MaxTokens) {
				t.Errorf("body %s", s.body)
			}
			var prompt string
			if tc.cfg.Chat {
				msgs, _ := body["messages"].([]any)
				if len(msgs) != 1 || msgs[0].(map[string]any)["role"] != "user" {
					t.Fatalf("messages %v", body["messages"])
				}
				prompt, _ = msgs[0].(map[string]any)["content"].(string)
			} else {
				prompt, _ = body["prompt"].(string)
			}
			if n := len(strings.Fields(prompt)); n != max(tc.cfg.PromptTokens, 1) {
				t.Errorf("prompt %q has %d words, want %d", prompt, n, tc.cfg.PromptTokens)
			}
			for k, v := range tc.wantBody {
				if fmt.Sprint(body[k]) != fmt.Sprint(v) {
					t.Errorf("body[%q] = %v, want %v", k, body[k], v)
				}
			}
		})
	}
}

// writeUsage answers a request with maxTokens tokens: a JSON body with
// usage, or an SSE stream with one chunk per token, usage and [DONE].
func writeUsage(w http.ResponseWriter, noStream bool, maxTokens int) {
	usage := fmt.Sprintf(`"usage":{"prompt_tokens":5,"total_tokens":%d,"completion_tokens":%d}`, 5+maxTokens, maxTokens)
	if noStream {
		_, _ = io.WriteString(w, `{"choices":[{"index":0,"text":"x"}],`+usage+`}`)
		return
	}
	_, _ = io.WriteString(w, sseStream(maxTokens, usage))
}

// sseStream is a chat stream: the role chunk, n content chunks, the usage
// chunk (when usage is not empty) and [DONE].
func sseStream(n int, usage string) string {
	const pre = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[`
	var b strings.Builder
	b.WriteString(pre + `{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}` + "\n\n")
	for i := range n {
		fmt.Fprintf(&b, pre+`{"index":0,"delta":{"content":" w%d"},"logprobs":null,"finish_reason":null}]}`+"\n\n", i)
	}
	if usage != "" {
		b.WriteString(pre + `],` + usage + "}\n\n")
	}
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

// flushInPieces writes s in pieces of size bytes, flushing each: with
// net/http each flush is one HTTP chunk, so lines and even "data:" are cut
// across chunks and across the client's reads.
func flushInPieces(w http.ResponseWriter, s string, size int) {
	for len(s) > 0 {
		n := min(size, len(s))
		_, _ = io.WriteString(w, s[:n])
		w.(http.Flusher).Flush()
		s = s[n:]
	}
}

// waitForClientGone blocks until the client closes the connection. net/http
// notices that (and cancels the request's context) only once the request
// body has been read.
func waitForClientGone(r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	select {
	case <-r.Context().Done():
	case <-time.After(10 * time.Second): // never hang the test
	}
}

// Responses: bodies framed by Content-Length or chunked, SSE streams cut
// anywhere, and every way a response can fail.
func TestClientResponses(t *testing.T) {
	usage3 := `"usage":{"prompt_tokens":7,"total_tokens":10,"completion_tokens":3}`
	longToken := `data: {"choices":[{"index":0,"delta":{"content":"` + strings.Repeat("x", 3*bufSize) + `"}}]}` + "\n\n"
	for _, tc := range []struct {
		name       string
		noStream   bool
		timeout    time.Duration
		handler    http.HandlerFunc
		wantErr    string // substring of the one error kind; "" = success
		wantTokens int64
		wantChunks int64
		wantPrompt float64
	}{
		{name: "content-length body", noStream: true, handler: func(w http.ResponseWriter, _ *http.Request) {
			body := `{"choices":[],` + usage3 + `}`
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			_, _ = io.WriteString(w, body)
		}, wantTokens: 3, wantChunks: 3, wantPrompt: 7},
		{name: "chunked body", noStream: true, handler: func(w http.ResponseWriter, _ *http.Request) {
			flushInPieces(w, `{"choices":[],`+usage3+`}`, 5)
		}, wantTokens: 3, wantChunks: 3, wantPrompt: 7},
		{name: "stream in one chunk", handler: func(w http.ResponseWriter, _ *http.Request) {
			flushInPieces(w, sseStream(3, usage3), 1<<20)
		}, wantTokens: 3, wantChunks: 3, wantPrompt: 7},
		{name: "stream framed by Content-Length is read as one body", handler: func(w http.ResponseWriter, _ *http.Request) {
			// Not what vLLM sends: without chunked framing the client does
			// not follow the stream and counts usage tokens as chunks.
			_, _ = io.WriteString(w, sseStream(2, usage3))
		}, wantTokens: 3, wantChunks: 3, wantPrompt: 7},
		{name: "stream one byte per chunk", handler: func(w http.ResponseWriter, _ *http.Request) {
			flushInPieces(w, sseStream(3, usage3), 1)
		}, wantTokens: 3, wantChunks: 3, wantPrompt: 7},
		{name: "stream 7 bytes per chunk, CRLF", handler: func(w http.ResponseWriter, _ *http.Request) {
			flushInPieces(w, strings.ReplaceAll(sseStream(4, ""), "\n", "\r\n"), 7)
		}, wantTokens: 4, wantChunks: 4},
		{name: "line longer than the read buffer", handler: func(w http.ResponseWriter, _ *http.Request) {
			flushInPieces(w, longToken+longToken+"data: [DONE]\n\n", 1000)
		}, wantTokens: 2, wantChunks: 2},
		{name: "usage preferred over chunk count", handler: func(w http.ResponseWriter, _ *http.Request) {
			flushInPieces(w, sseStream(2, `"usage":{"prompt_tokens":1,"completion_tokens":9}`), 100)
		}, wantTokens: 9, wantChunks: 2, wantPrompt: 1},
		{name: "non-200 with a JSON error", handler: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":{"message":"max_tokens must be at least 1","type":"BadRequestError","param":"max_tokens","code":400}}`)
		}, wantErr: "HTTP 400: max_tokens must be at least 1"},
		{name: "non-200 chunked text", handler: func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
			flushInPieces(w, "overloaded\n", 3)
		}, wantErr: "HTTP 503: overloaded"},
		{name: "error event mid-stream", handler: func(w http.ResponseWriter, _ *http.Request) {
			stream := sseStream(2, "")
			cut := strings.Index(stream, "data: [DONE]")
			flushInPieces(w, stream[:cut]+`data: {"error":{"message":"boom","type":"InternalServerError","param":null,"code":500}}`+"\n\ndata: [DONE]\n\n", 64)
		}, wantErr: "stream error: boom"},
		{name: "server closes mid-stream", handler: func(w http.ResponseWriter, _ *http.Request) {
			stream := sseStream(3, "")
			flushInPieces(w, stream[:len(stream)/2], 50)
			panic(http.ErrAbortHandler) // net/http closes the connection without the last chunk
		}, wantErr: "unexpected EOF"},
		{name: "stream ends without [DONE]", handler: func(w http.ResponseWriter, _ *http.Request) {
			stream := sseStream(3, "")
			flushInPieces(w, strings.TrimSuffix(stream, "data: [DONE]\n\n"), 50)
		}, wantErr: "stream ended without [DONE]"},
		{name: "body without usage", noStream: true, handler: func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, `{"choices":[]}`)
		}, wantErr: "response without usage.completion_tokens"},
		{name: "timeout before the response", timeout: 100 * time.Millisecond, handler: func(_ http.ResponseWriter, r *http.Request) {
			waitForClientGone(r)
		}, wantErr: "i/o timeout"},
		{name: "timeout mid-stream", timeout: 300 * time.Millisecond, handler: func(w http.ResponseWriter, r *http.Request) {
			flushInPieces(w, strings.TrimSuffix(sseStream(1, ""), "data: [DONE]\n\n"), 10)
			waitForClientGone(r)
		}, wantErr: "i/o timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Streams without [DONE] are only consumed once the handler ends.
			cfg := Config{Chat: true, NoStream: tc.noStream, Timeout: tc.timeout}
			if cfg.Timeout == 0 {
				cfg.Timeout = 10 * time.Second
			}
			res, _ := runAgainst(t, cfg, tc.handler)
			if tc.wantErr != "" {
				if res.Requests != 0 || res.Errors != 1 || len(res.ErrorKinds) != 1 {
					t.Fatalf("requests %d errors %d %v, want one error %q", res.Requests, res.Errors, res.ErrorKinds, tc.wantErr)
				}
				for kind := range res.ErrorKinds {
					if !strings.Contains(kind, tc.wantErr) {
						t.Errorf("error %q, want one containing %q", kind, tc.wantErr)
					}
				}
				return
			}
			if res.Requests != 1 || res.Errors != 0 {
				t.Fatalf("requests %d errors %v", res.Requests, res.ErrorKinds)
			}
			if res.OutputTokens != tc.wantTokens || res.TokenChunks != tc.wantChunks || res.PromptTokensMean != tc.wantPrompt {
				t.Errorf("tokens %d chunks %d prompt mean %v, want %d %d %v",
					res.OutputTokens, res.TokenChunks, res.PromptTokensMean, tc.wantTokens, tc.wantChunks, tc.wantPrompt)
			}
		})
	}
}

// Connections are kept alive across requests unless the server says
// Connection: close; a keep-alive connection the server closed while idle
// is redialled once without counting an error.
func TestClientConnectionReuse(t *testing.T) {
	for _, tc := range []struct {
		name      string
		handler   http.HandlerFunc
		wantConns int64
	}{
		{"keep-alive", func(w http.ResponseWriter, _ *http.Request) {
			writeUsage(w, false, 3)
		}, 1},
		{"Connection: close", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Connection", "close")
			writeUsage(w, false, 3)
		}, 5},
		{"closed while idle", func(w http.ResponseWriter, _ *http.Request) {
			// A complete keep-alive response, then the server drops the
			// connection without saying so.
			nc, buf, err := http.NewResponseController(w).Hijack()
			if err != nil {
				panic(err)
			}
			body := sseStream(3, `"usage":{"prompt_tokens":5,"completion_tokens":3}`)
			fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(body), body)
			_ = buf.Flush()
			time.Sleep(20 * time.Millisecond) // let the client read it all first
			_ = nc.Close()
		}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, conns := runAgainst(t, Config{Chat: true, Requests: 5, Timeout: 10 * time.Second}, tc.handler)
			if res.Requests != 5 || res.Errors != 0 || res.OutputTokens != 15 {
				t.Fatalf("requests %d errors %v tokens %d", res.Requests, res.ErrorKinds, res.OutputTokens)
			}
			if conns != tc.wantConns {
				t.Errorf("server accepted %d connections, want %d", conns, tc.wantConns)
			}
		})
	}
}
