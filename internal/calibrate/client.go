package calibrate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/mocker-server/mocker-server/internal/loadgen"
)

// SetupError is a problem with the endpoint found before any experiment
// ran: unreachable, unauthorized, no such model, no streaming. The command
// prints it as one line and exits with status 2.
type SetupError struct{ Msg string }

func (e *SetupError) Error() string { return e.Msg }

func setupErr(format string, args ...any) error {
	return &SetupError{Msg: fmt.Sprintf(format, args...)}
}

// Client talks to the endpoint under calibration.
type Client struct {
	// Base is the server's base URL without /v1 (e.g. http://127.0.0.1:8000).
	Base   string
	APIKey string
	// Model is the model name sent with every request.
	Model string
	// RequestTimeout bounds one request, retries included (default 2 min).
	RequestTimeout time.Duration
	// MaxRetries is how often a 429 or 503 is retried (default 3).
	MaxRetries int

	http *http.Client
	// lengthParams: the server accepted ignore_eos and min_tokens.
	lengthParams bool
}

// NewClient returns a client for base (a trailing /v1 is accepted).
func NewClient(base, apiKey, model string) *Client {
	base = strings.TrimRight(base, "/")
	base = strings.TrimSuffix(base, "/v1")
	return &Client{Base: base, APIKey: apiKey, Model: model, RequestTimeout: 2 * time.Minute, MaxRetries: 3,
		http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024, MaxConnsPerHost: 0,
			DisableCompression: true, ResponseHeaderTimeout: 0}}}
}

// Close releases the client's idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// ServerInfo is what discovery learned about the endpoint.
type ServerInfo struct {
	Model       string `json:"model"`
	MaxModelLen int    `json:"max_model_len,omitempty"`
	// Tokenize: POST /tokenize counts prompt tokens.
	Tokenize bool `json:"tokenize"`
	// LengthParams: ignore_eos and min_tokens were accepted.
	LengthParams bool `json:"length_params"`
	// BlockSize and NumGPUBlocks come from vllm:cache_config_info on
	// /metrics when the server exposes it (0 when not).
	BlockSize    int `json:"block_size,omitempty"`
	NumGPUBlocks int `json:"num_gpu_blocks,omitempty"`
}

func (c *Client) newRequest(ctx context.Context, method, path string, body any) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	return req, nil
}

// Discover checks the endpoint and learns what it supports. Every failure
// is a *SetupError with one line saying what is wrong.
func (c *Client) Discover(ctx context.Context) (ServerInfo, error) {
	var info ServerInfo
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := c.newRequest(ctx, http.MethodGet, "/v1/models", nil)
	if err != nil {
		return info, setupErr("bad --url %q: %v", c.Base, err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return info, setupErr("cannot reach %s: %v", c.Base, rootCause(err))
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return info, setupErr("%s refused the API key (HTTP %d on /v1/models); pass --api-key", c.Base, resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		return info, setupErr("%s/v1/models answered HTTP %d: %s", c.Base, resp.StatusCode, snippet(body))
	}
	var models struct {
		Data []struct {
			ID          string `json:"id"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &models); err != nil || len(models.Data) == 0 {
		return info, setupErr("%s/v1/models lists no models (is it an OpenAI-compatible server?)", c.Base)
	}
	var names []string
	for _, m := range models.Data {
		names = append(names, m.ID)
		if c.Model == "" || m.ID == c.Model {
			if c.Model == "" {
				c.Model = m.ID
			}
			info.Model, info.MaxModelLen = m.ID, m.MaxModelLen
		}
	}
	if info.Model == "" {
		return info, setupErr("model %q is not served by %s (it serves: %s)", c.Model, c.Base, strings.Join(names, ", "))
	}
	if _, err := c.tokenize(ctx, "hello world"); err == nil {
		info.Tokenize = true
	}
	info.BlockSize, info.NumGPUBlocks = c.cacheConfig(ctx)
	// One short streamed request, first with the exact-length parameters.
	c.lengthParams = true
	res, err := c.stream(ctx, "hello", 2, time.Now(), nil)
	if err != nil && res.Status == http.StatusBadRequest {
		c.lengthParams = false
		res, err = c.stream(ctx, "hello", 2, time.Now(), nil)
	}
	if err != nil {
		if errors.Is(err, errNotStreaming) {
			return info, setupErr("%s/v1/completions does not stream (answered without text/event-stream); calibration needs SSE", c.Base)
		}
		if res.Status == http.StatusUnauthorized || res.Status == http.StatusForbidden {
			return info, setupErr("%s refused the API key (HTTP %d on /v1/completions); pass --api-key", c.Base, res.Status)
		}
		if res.Status == http.StatusNotFound {
			return info, setupErr("%s has no /v1/completions for model %q: %v", c.Base, c.Model, err)
		}
		return info, setupErr("a first streamed /v1/completions request failed: %v", err)
	}
	if res.Tokens() == 0 {
		return info, setupErr("%s/v1/completions streamed no tokens", c.Base)
	}
	info.LengthParams = c.lengthParams
	return info, nil
}

// rootCause strips url.Error's wrapping for a one-line message.
func rootCause(err error) error {
	var op *net.OpError
	if errors.As(err, &op) {
		return op
	}
	return err
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// tokenize returns the server's token count of prompt (vLLM's /tokenize).
func (c *Client) tokenize(ctx context.Context, prompt string) (int, error) {
	req, err := c.newRequest(ctx, http.MethodPost, "/tokenize", map[string]any{"model": c.Model, "prompt": prompt})
	if err != nil {
		return 0, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("tokenize: HTTP %d", resp.StatusCode)
	}
	var out struct {
		Count  *int  `json:"count"`
		Tokens []int `json:"tokens"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return 0, fmt.Errorf("tokenize: %w", err)
	}
	if out.Count != nil {
		return *out.Count, nil
	}
	if out.Tokens == nil {
		return 0, errors.New("tokenize: no count")
	}
	return len(out.Tokens), nil
}

var (
	reCacheInfo = regexp.MustCompile(`(?m)^vllm:cache_config_info\{([^}]*)\}`)
	reLabel     = regexp.MustCompile(`(\w+)="([^"]*)"`)
)

// cacheConfig reads block_size and num_gpu_blocks from vLLM's
// cache_config_info metric; zeros when the server has no such metric.
func (c *Client) cacheConfig(ctx context.Context) (blockSize, numBlocks int) {
	req, err := c.newRequest(ctx, http.MethodGet, "/metrics", nil)
	if err != nil {
		return 0, 0
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	m := reCacheInfo.FindSubmatch(body)
	if resp.StatusCode != http.StatusOK || m == nil {
		return 0, 0
	}
	for _, l := range reLabel.FindAllSubmatch(m[1], -1) {
		v, _ := strconv.Atoi(string(l[2]))
		switch string(l[1]) {
		case "block_size":
			blockSize = v
		case "num_gpu_blocks":
			numBlocks = v
		}
	}
	return blockSize, numBlocks
}

var reServerSeries = regexp.MustCompile(`(?m)^vllm:(time_to_first_token|request_queue_time)_seconds_(sum|count)(?:\{[^}]*\})? ([0-9.eE+-]+)`)

// ttftScrape is one reading of the server's own TTFT and queue-time
// histograms (vLLM's vllm:time_to_first_token_seconds and
// vllm:request_queue_time_seconds, summed over their label sets).
type ttftScrape struct {
	ttftSum, ttftCount   float64
	queueSum, queueCount float64
	ok                   bool // the TTFT family is there
}

// serverTTFT reads the server's histograms; ok is false when /metrics has
// no TTFT family.
func (c *Client) serverTTFT(ctx context.Context) (s ttftScrape) {
	req, err := c.newRequest(ctx, http.MethodGet, "/metrics", nil)
	if err != nil {
		return s
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return s
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if resp.StatusCode != http.StatusOK {
		return s
	}
	for _, m := range reServerSeries.FindAllSubmatch(body, -1) {
		v, err := strconv.ParseFloat(string(m[3]), 64)
		if err != nil {
			continue
		}
		ttft := string(m[1]) == "time_to_first_token"
		switch {
		case ttft && string(m[2]) == "sum":
			s.ttftSum += v
			s.ok = true
		case ttft:
			s.ttftCount += v
		case string(m[2]) == "sum":
			s.queueSum += v
		default:
			s.queueCount += v
		}
	}
	return s
}

// Result is what one streamed request measured, as offsets from its
// experiment's start.
type Result struct {
	Sent time.Duration `json:"sent_ns"`
	// TokenTimes are the arrival offsets of the token chunks.
	TokenTimes       []time.Duration `json:"token_ns"`
	PromptTokens     int             `json:"prompt_tokens"`
	CompletionTokens int             `json:"completion_tokens"`
	Retries          int             `json:"retries,omitempty"`
	RateLimited      int             `json:"rate_limited,omitempty"`
	Status           int             `json:"status,omitempty"`
	Err              string          `json:"error,omitempty"`
}

// Tokens is the number of token chunks received.
func (r *Result) Tokens() int { return len(r.TokenTimes) }

// TTFT is the first token's offset from the send.
func (r *Result) TTFT() time.Duration { return r.TokenTimes[0] - r.Sent }

var errNotStreaming = errors.New("response is not an event stream")

// stream sends one streamed completion and records its token times
// relative to t0. A 429 or 503 is retried after its Retry-After (at most
// MaxRetries times); onToken, when set, is called with the token count
// after each token.
func (c *Client) stream(ctx context.Context, prompt string, maxTokens int, t0 time.Time, onToken func(int)) (Result, error) {
	var res Result
	ctx, cancel := context.WithTimeout(ctx, c.RequestTimeout)
	defer cancel()
	body := map[string]any{
		"model": c.Model, "prompt": prompt, "max_tokens": maxTokens, "temperature": 0,
		"stream": true, "stream_options": map[string]any{"include_usage": true},
	}
	if c.lengthParams {
		body["ignore_eos"] = true
		body["min_tokens"] = maxTokens
	}
	for attempt := 0; ; attempt++ {
		req, err := c.newRequest(ctx, http.MethodPost, "/v1/completions", body)
		if err != nil {
			return res, err
		}
		res.Sent = time.Since(t0)
		resp, err := c.http.Do(req)
		if err != nil {
			res.Err = rootCause(err).Error()
			return res, err
		}
		res.Status = resp.StatusCode
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
			wait := retryAfter(resp.Header.Get("Retry-After"), attempt)
			io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			if resp.StatusCode == http.StatusTooManyRequests {
				res.RateLimited++
			}
			if attempt >= c.MaxRetries {
				err := fmt.Errorf("HTTP %d after %d retries", resp.StatusCode, attempt)
				res.Err = err.Error()
				return res, err
			}
			res.Retries++
			select {
			case <-time.After(wait):
				continue
			case <-ctx.Done():
				res.Err = ctx.Err().Error()
				return res, ctx.Err()
			}
		}
		err = c.readStream(resp, t0, &res, onToken)
		resp.Body.Close()
		if err != nil {
			res.Err = err.Error()
		}
		return res, err
	}
}

// retryAfter reads a Retry-After header (seconds or an HTTP date), capped at
// 10 s; without one it backs off 0.5, 1, 2 … s.
func retryAfter(h string, attempt int) time.Duration {
	const maxWait = 10 * time.Second
	if s, err := strconv.ParseFloat(strings.TrimSpace(h), 64); err == nil && s >= 0 {
		return min(time.Duration(s*float64(time.Second)), maxWait)
	}
	if t, err := http.ParseTime(h); err == nil {
		return min(max(time.Until(t), 0), maxWait)
	}
	return min(500*time.Millisecond<<attempt, maxWait)
}

func (c *Client) readStream(resp *http.Response, t0 time.Time, res *Result, onToken func(int)) error {
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, snippet(b))
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 16<<20))
		return errNotStreaming
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	done := false
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			kind, payload := loadgen.Classify(line)
			switch kind {
			case loadgen.EvToken:
				res.TokenTimes = append(res.TokenTimes, time.Since(t0))
				if onToken != nil {
					onToken(len(res.TokenTimes))
				}
				if bytes.Contains(payload, []byte(`"usage":{`)) {
					res.PromptTokens, res.CompletionTokens = loadgen.ParseUsage(payload)
				}
			case loadgen.EvUsage:
				res.PromptTokens, res.CompletionTokens = loadgen.ParseUsage(payload)
			case loadgen.EvError:
				return fmt.Errorf("error event in stream: %s", snippet(payload))
			case loadgen.EvDone:
				done = true
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: skip its rest.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
		}
		if err != nil {
			if done || errors.Is(err, io.EOF) && len(res.TokenTimes) > 0 {
				return nil
			}
			return fmt.Errorf("stream cut: %w", err)
		}
	}
}
