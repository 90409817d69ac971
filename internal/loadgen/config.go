// Package loadgen is a load generator for OpenAI-compatible inference
// endpoints (chat and completions, streaming or not). It drives a fixed
// number of concurrent requests (closed loop) or Poisson arrivals (open
// loop) over its own minimal HTTP/1.1 client: connections are opened before
// the measurement starts, arrivals are ramped, and SSE streams are scanned
// for `data:` lines without decoding JSON (one token per content chunk; only
// the usage chunk is read, by a byte scan). That keeps one core able to
// follow ten thousand streams, so the numbers measure the server.
package loadgen

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Config describes a run. Zero fields get defaults (see Defaults).
type Config struct {
	// URL is the server base URL, e.g. http://127.0.0.1:8000 (http only).
	URL string `json:"url"`
	// Path overrides the endpoint path (default /v1/chat/completions or
	// /v1/completions).
	Path string `json:"path,omitempty"`
	// Chat selects /v1/chat/completions (true) or /v1/completions.
	Chat   bool   `json:"chat"`
	Model  string `json:"model"`
	APIKey string `json:"-"`
	// NoStream sends non-streaming requests (TTFT = E2E, no ITL).
	NoStream bool `json:"no_stream,omitempty"`

	// Concurrency is the number of connections: the fixed number of
	// requests in flight (closed loop) or the cap on them (open loop).
	Concurrency int `json:"concurrency"`
	// Rate > 0 selects open-loop Poisson arrivals at Rate requests/s.
	Rate float64 `json:"rate,omitempty"`
	// Duration bounds the time during which requests are started (requests
	// in flight then finish); Requests bounds their number. At least one
	// must be set.
	Duration time.Duration `json:"duration_ns,omitempty"`
	Requests int           `json:"requests,omitempty"`
	// Ramp spreads the closed-loop workers' first requests evenly over this
	// time (default 100 µs per connection, at most 2 s).
	Ramp time.Duration `json:"ramp_ns"`
	// Timeout bounds each request (default 5 min).
	Timeout time.Duration `json:"timeout_ns"`

	// PromptTokens is the prompt length in words (roughly tokens);
	// SharedPrefix of them are a prefix shared by the requests of one of
	// NumPrefixes groups (0 = no shared prefix).
	PromptTokens int `json:"prompt_tokens"`
	SharedPrefix int `json:"shared_prefix,omitempty"`
	NumPrefixes  int `json:"num_prefixes,omitempty"`
	// MaxTokens is the output length; IgnoreEOS asks the server for exactly
	// MaxTokens tokens.
	MaxTokens int   `json:"max_tokens"`
	IgnoreEOS bool  `json:"ignore_eos"`
	Seed      int64 `json:"seed"`
}

// Defaults returns a Config with every default filled in.
func Defaults() Config {
	return Config{URL: "http://127.0.0.1:8000", Chat: true, Model: "mocker-model", Concurrency: 10,
		Timeout: 5 * time.Minute, PromptTokens: 64, MaxTokens: 64, IgnoreEOS: true, Seed: 1, Ramp: -1}
}

// normalize validates c and fills derived defaults.
func (c *Config) normalize() error {
	if c.Concurrency <= 0 {
		return errors.New("concurrency must be > 0")
	}
	if c.Duration <= 0 && c.Requests <= 0 {
		return errors.New("set a duration or a request count (or both)")
	}
	if c.MaxTokens <= 0 {
		return errors.New("max_tokens must be > 0")
	}
	if c.PromptTokens <= 0 {
		c.PromptTokens = 1
	}
	if c.SharedPrefix < 0 || c.SharedPrefix > c.PromptTokens {
		return fmt.Errorf("shared prefix %d must be within [0, prompt tokens %d]", c.SharedPrefix, c.PromptTokens)
	}
	if c.SharedPrefix > 0 && c.NumPrefixes <= 0 {
		c.NumPrefixes = 1
	}
	if c.Timeout <= 0 {
		c.Timeout = 5 * time.Minute
	}
	if c.Ramp < 0 {
		c.Ramp = min(time.Duration(c.Concurrency)*100*time.Microsecond, 2*time.Second)
	}
	if c.Model == "" {
		c.Model = "mocker-model"
	}
	u, err := url.Parse(c.URL)
	if err != nil {
		return fmt.Errorf("url: %w", err)
	}
	if u.Scheme != "http" {
		return fmt.Errorf("url %q: only http:// is supported", c.URL)
	}
	if u.Host == "" {
		return fmt.Errorf("url %q has no host", c.URL)
	}
	return nil
}

func (c *Config) endpointPath() string {
	if c.Path != "" {
		return c.Path
	}
	base := ""
	if u, err := url.Parse(c.URL); err == nil {
		base = strings.TrimSuffix(u.Path, "/")
	}
	if !strings.HasSuffix(base, "/v1") {
		base += "/v1"
	}
	if c.Chat {
		return base + "/chat/completions"
	}
	return base + "/completions"
}

func (c *Config) hostPort() string {
	u, _ := url.Parse(c.URL)
	if u.Port() == "" {
		return u.Hostname() + ":80"
	}
	return u.Host
}
