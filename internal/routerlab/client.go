package routerlab

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mocker-server/mocker-server/internal/loadgen"
)

// HeaderWorker is the response header in which every simulated worker
// names itself (its fleet admin id), as internal/worker sets it.
const HeaderWorker = "X-Mocker-Worker"

// client sends streaming completions to the router, over a bounded pool of
// kept-alive connections.
type client struct {
	http    *http.Client
	url     string
	model   string
	apiKey  string
	timeout time.Duration
	onToken func(time.Time)
}

func newClient(baseURL, model, apiKey string, maxConns int, timeout time.Duration) *client {
	tr := &http.Transport{
		Proxy:               nil, // the router is the proxy under test
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        maxConns,
		MaxIdleConnsPerHost: maxConns,
		MaxConnsPerHost:     maxConns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true, // SSE: every byte as it comes
		ReadBufferSize:      16 << 10,
		WriteBufferSize:     64 << 10,
	}
	return &client{http: &http.Client{Transport: tr}, url: strings.TrimRight(baseURL, "/") + "/v1/completions",
		model: model, apiKey: apiKey, timeout: timeout}
}

func (c *client) close() { c.http.CloseIdleConnections() }

// result is what one streamed request came to.
type result struct {
	worker       string
	status       int
	err          string
	sent         time.Time
	first, last  time.Time
	end          time.Time // when the answer ended, well or not
	tokens       int
	promptTokens int
	cached       int // -1: the server did not report cached tokens
	ids          []uint32
}

// do sends one request and follows its stream to the end. wantIDs asks the
// server for the generated token ids (a later session turn needs them).
func (c *client) do(ctx context.Context, id string, prompt []uint32, outTokens int, wantIDs bool, body *[]byte) (res result) {
	b := (*body)[:0]
	b = append(b, `{"model":`...)
	b = strconv.AppendQuote(b, c.model)
	b = append(b, `,"prompt":[`...)
	for i, t := range prompt {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, uint64(t), 10)
	}
	b = append(b, `],"max_tokens":`...)
	b = strconv.AppendInt(b, int64(outTokens), 10)
	b = append(b, `,"min_tokens":`...)
	b = strconv.AppendInt(b, int64(outTokens), 10)
	b = append(b, `,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}`...)
	if wantIDs {
		b = append(b, `,"return_token_ids":true`...)
	}
	b = append(b, '}')
	*body = b

	res.cached = -1
	if wantIDs {
		res.ids = make([]uint32, 0, outTokens) // grown once, not per chunk
	}
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(b))
	if err != nil {
		res.err = err.Error()
		return res
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	// The request's workload index, for the router's and the workers' logs
	// (vLLM takes X-Request-Id as the request id).
	req.Header.Set("X-Request-Id", id)
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	// The send time is when the request was written to the connection:
	// the router sees requests in that order, which is the order the
	// offline replay must give them in (a goroutine may start a request
	// late on a busy machine; the write is what counts).
	res.sent = time.Now()
	var wrote atomic.Int64
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { wrote.Store(time.Now().UnixNano()) },
	}))
	defer func() {
		res.end = time.Now()
		if w := wrote.Load(); w != 0 {
			res.sent = time.Unix(0, w)
		}
	}()
	resp, err := c.http.Do(req)
	if err != nil {
		res.err = transportError(err)
		return res
	}
	defer resp.Body.Close()
	res.status = resp.StatusCode
	res.worker = resp.Header.Get(HeaderWorker)
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		res.err = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(msg))
		return res
	}
	br := bufio.NewReaderSize(resp.Body, 8<<10)
	var scratch []byte
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A line longer than the buffer (a long token_ids list): join it.
			scratch = append(scratch[:0], line...)
			for err == bufio.ErrBufferFull {
				line, err = br.ReadSlice('\n')
				scratch = append(scratch, line...)
			}
			line = scratch
		}
		if len(line) > 0 {
			kind, p := loadgen.Classify(line)
			switch kind {
			case loadgen.EvToken:
				now := time.Now()
				if c.onToken != nil {
					c.onToken(now)
				}
				if res.tokens == 0 {
					res.first = now
				}
				res.last = now
				n := 1
				if wantIDs {
					ids := appendTokenIDs(res.ids, p)
					n = max(1, len(ids)-len(res.ids))
					res.ids = ids
				}
				res.tokens += n
			case loadgen.EvUsage:
				prompt, completion := loadgen.ParseUsage(p)
				res.promptTokens = prompt
				if completion >= 0 {
					res.tokens = completion
				}
				res.cached = scanInt(p, keyCached)
				if res.worker == "" {
					// A router that strips headers: the body may name
					// the worker (BodyWorkerField).
					res.worker = scanString(p, keyWorker)
				}
			case loadgen.EvError:
				res.err = "stream error: " + string(p)
				return res
			case loadgen.EvDone:
				// Read the body to its end (the terminating chunk), so
				// the connection goes back to the pool for the next
				// request instead of being closed under the router.
				_, _ = io.Copy(io.Discard, io.LimitReader(br, 64<<10))
				return res
			}
		}
		if err != nil {
			if err == io.EOF {
				res.err = "stream ended without [DONE]"
			} else {
				res.err = transportError(err)
			}
			return res
		}
	}
}

// BodyWorkerField is the top-level field of a stream's final usage chunk
// that names the worker, for routers that strip response headers
// (internal/api/pipeline.WorkerField: every fleet worker sends it); the
// driver reads it when the header is missing.
const BodyWorkerField = "mocker_worker"

var (
	keyCached   = []byte(`"cached_tokens":`)
	keyTokenIDs = []byte(`"token_ids":[`)
	keyWorker   = []byte(`"` + BodyWorkerField + `":"`)
)

// scanString returns the JSON string after key (which ends with the
// opening quote) in p, "" when absent or escaped (worker ids are plain).
func scanString(p, key []byte) string {
	i := bytes.Index(p, key)
	if i < 0 {
		return ""
	}
	rest := p[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 || bytes.IndexByte(rest[:j], '\\') >= 0 {
		return ""
	}
	return string(rest[:j])
}

// scanInt returns the non-negative integer after key in p, or -1.
func scanInt(p, key []byte) int {
	i := bytes.Index(p, key)
	if i < 0 {
		return -1
	}
	n, digits := 0, 0
	for _, c := range p[i+len(key):] {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
		digits++
	}
	if digits == 0 {
		return -1
	}
	return n
}

// appendTokenIDs appends the ids of a chunk's "token_ids" array (a
// completions chunk with return_token_ids carries its new tokens there).
func appendTokenIDs(dst []uint32, p []byte) []uint32 {
	i := bytes.Index(p, keyTokenIDs)
	if i < 0 {
		return dst
	}
	n, digits := uint64(0), 0
	for _, c := range p[i+len(keyTokenIDs):] {
		switch {
		case c >= '0' && c <= '9':
			n = n*10 + uint64(c-'0')
			digits++
		case c == ',' || c == ']':
			if digits > 0 {
				dst = append(dst, uint32(n))
			}
			if c == ']' {
				return dst
			}
			n, digits = 0, 0
		}
	}
	return dst
}

// transportError names a failed connection the way a report groups them.
func transportError(err error) string {
	s := err.Error()
	switch {
	case strings.Contains(s, "connection refused"):
		return "connection refused"
	case strings.Contains(s, "connection reset"):
		return "connection reset"
	case strings.Contains(s, "deadline exceeded"), strings.Contains(s, "Timeout"):
		return "timeout"
	case strings.Contains(s, "context canceled"):
		return "cancelled"
	case strings.Contains(s, "EOF"):
		return "connection closed"
	}
	return s
}
