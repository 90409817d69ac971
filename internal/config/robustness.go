package config

import (
	"fmt"
	"net"
	"strings"

	"github.com/mocker-server/mocker-server/internal/faults"
)

// validateRobustness checks the robustness, rate-limit and fault-injection
// keys (docs/FAULTS.md) and warns about ZMQ endpoints that listen on every
// interface while the HTTP server is loopback-only.
func (v *validator) validateRobustness(c *Config) {
	v.nonNegFinite("shutdown_grace", c.ShutdownGrace)
	if t := c.RequestBodyTimeout; !(t > 0) || t > 3600 {
		v.errorf([]string{"request_body_timeout"}, "request_body_timeout must be > 0 and <= 3600 seconds, got %s", fmtFloat(t))
	}
	v.intMin("max_unflushed_tokens", int64(c.MaxUnflushedTokens), 0)
	v.intMin("max_concurrent_requests", int64(c.MaxConcurrentRequests), 0)
	v.intMin("rpm", int64(c.RPM), 0)
	v.intMin("tpm", int64(c.TPM), 0)
	v.validateBudgets(c)
	if err := faults.Check(c.FaultSettings()); err != nil {
		keys := []string{"failure_rate", "failure_types", "failure_script"}
		for _, line := range strings.Split(err.Error(), "\n") {
			v.errorf(keys, "%s", line)
		}
	} else if len(c.FailureTypes) > 0 && c.FailureRate == 0 {
		v.warns = append(v.warns, "failure_types has no effect while failure_rate is 0")
	}
	if isLoopbackHost(c.Host) {
		for _, ep := range c.boundZMQEndpoints() {
			v.warns = append(v.warns, fmt.Sprintf(
				"%s binds %s on every interface although host %s is loopback-only; bind a loopback address (or ipc://) to keep it local",
				ep.key, ep.endpoint, c.Host))
		}
	}
}

// FaultSettings returns the fault-injection settings of the configuration.
func (c *Config) FaultSettings() faults.Settings {
	return faults.Settings{
		FailureRate:  c.FailureRate,
		FailureTypes: c.FailureTypes,
		Script:       c.FailureScript,
		AllowHeaders: c.AllowFaultHeaders,
	}
}

type zmqEndpoint struct{ key, endpoint string }

// boundZMQEndpoints lists the configured ZMQ endpoints that bind every
// interface: tcp endpoints with a "*" or "::" host (vLLM's bind rule makes
// exactly these bind), and the Dynamo-style ports when host is a wildcard.
func (c *Config) boundZMQEndpoints() []zmqEndpoint {
	var out []zmqEndpoint
	add := func(key, ep string) {
		rest, ok := strings.CutPrefix(ep, "tcp://")
		if !ok {
			return
		}
		if i := strings.LastIndexByte(rest, ':'); i >= 0 {
			rest = rest[:i]
		}
		if rest == "*" || rest == "[::]" || rest == "::" || rest == "0.0.0.0" {
			out = append(out, zmqEndpoint{key, ep})
		}
	}
	if c.KVEventsEnabled() && c.ZMQKVEventsPort == 0 {
		add("kv_events_config.endpoint", c.KVEventsConfig.Endpoint)
		if r := c.KVEventsConfig.ReplayEndpoint; r != nil {
			add("kv_events_config.replay_endpoint", *r)
		}
	}
	add("fpm_endpoint", c.FPMEndpoint)
	return out
}

// isLoopbackHost reports whether an HTTP bind host accepts only local
// connections.
func isLoopbackHost(host string) bool {
	h := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
