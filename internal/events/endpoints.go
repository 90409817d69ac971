package events

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// KV publisher defaults: vLLM's KVEventsConfig defaults (also
// config.DefaultKVEventsConfig's), used by Dynamo-style ports and for
// unset sizes of a vLLM-style configuration.
const (
	DefaultBufferSteps  = 10000
	DefaultHWM          = 10000
	DefaultMaxQueueSize = 100000
)

// FPM publisher settings.
const (
	// FPMTopic is the first frame of every FPM message.
	FPMTopic = "forward-pass-metrics"
	// FPMHWM is the FPM PUB socket's send high-water mark.
	FPMHWM = 10000
	// FPMQueueSize bounds the snapshots queued between an engine and its
	// FPM publisher goroutine.
	FPMQueueSize = 10000
)

// LookupIP resolves a host name to its addresses (net.LookupIP in
// production, a table in tests).
type LookupIP func(host string) ([]net.IP, error)

// KVSettings is everything one DP rank's KV event publisher needs.
type KVSettings struct {
	Rank int
	// Endpoint is the PUB endpoint; Bind says whether it is bound or
	// connected (ShouldBind).
	Endpoint string
	Bind     bool
	// ReplayEndpoint is the ROUTER endpoint (always bound); "" = no replay.
	ReplayEndpoint string
	Topic          string
	BufferSteps    int
	HWM            int
	MaxQueueSize   int
	Encoding       Encoding
	// ReplayTopicFrame selects the replay reply form: with a topic frame, or
	// without it as older consumers expect.
	ReplayTopicFrame bool
	// Publish is false when the sockets exist but nothing may be sent
	// (prefix caching disabled, decode worker: no event can happen, but the
	// configured sockets still exist so consumers can connect).
	Publish bool
}

// FPMSettings is everything one DP rank's FPM publisher needs.
type FPMSettings struct {
	Rank     int
	Endpoint string
	Bind     bool
	WorkerID string
}

// ShouldBind applies vLLM's bind-or-connect rule: bind
// when the endpoint contains "*" or "::", or is ipc:// or inproc://;
// otherwise connect.
func ShouldBind(endpoint string) bool {
	return strings.Contains(endpoint, "*") || strings.Contains(endpoint, "::") ||
		strings.HasPrefix(endpoint, "ipc://") || strings.HasPrefix(endpoint, "inproc://")
}

// OffsetEndpoint returns DP rank's endpoint, so ranks never share a socket:
// rank 0 unchanged; tcp://host:port → port + rank; inproc://name →
// inproc://name_dp<rank>; any other scheme is an error for rank > 0.
func OffsetEndpoint(endpoint string, rank int) (string, error) {
	if rank == 0 {
		return endpoint, nil
	}
	switch {
	case strings.HasPrefix(endpoint, "inproc://"):
		return endpoint + "_dp" + strconv.Itoa(rank), nil
	case strings.HasPrefix(endpoint, "tcp://"):
		i := strings.LastIndexByte(endpoint, ':')
		if i < len("tcp://") {
			return "", fmt.Errorf("endpoint %q: no port to offset for dp rank %d", endpoint, rank)
		}
		port, err := strconv.Atoi(endpoint[i+1:])
		if err != nil || port < 0 || port+rank > 65535 {
			return "", fmt.Errorf("endpoint %q: invalid port to offset for dp rank %d", endpoint, rank)
		}
		return endpoint[:i+1] + strconv.Itoa(port+rank), nil
	default:
		return "", fmt.Errorf("endpoint %q: only tcp:// and inproc:// endpoints can be offset per dp rank", endpoint)
	}
}

// HostEndpoint returns tcp://<ip>:<port> for an HTTP --host value
// (Dynamo's port style): an IP literal is used as is, a host name is resolved
// (first IPv4 address, else the first address), IPv6 addresses are
// bracketed, and an empty host means every interface ("*").
func HostEndpoint(host string, port int, lookup LookupIP) (string, error) {
	h := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	var ip net.IP
	switch {
	case h == "" || h == "*":
		return "tcp://*:" + strconv.Itoa(port), nil
	case net.ParseIP(h) != nil:
		ip = net.ParseIP(h)
	default:
		if lookup == nil {
			lookup = net.LookupIP
		}
		ips, err := lookup(h)
		if err != nil {
			return "", fmt.Errorf("resolve host %q: %w", host, err)
		}
		if len(ips) == 0 {
			return "", fmt.Errorf("resolve host %q: no addresses", host)
		}
		ip = ips[0]
		for _, a := range ips {
			if a.To4() != nil {
				ip = a
				break
			}
		}
	}
	return "tcp://" + net.JoinHostPort(ip.String(), strconv.Itoa(port)), nil
}

// needsIPv6 reports whether a tcp endpoint names an IPv6 address, for
// which libzmq needs ZMQ_IPV6 set on the socket.
func needsIPv6(endpoint string) bool {
	rest, ok := strings.CutPrefix(endpoint, "tcp://")
	return ok && (strings.HasPrefix(rest, "[") || strings.Count(rest, ":") > 1)
}

// KVSettingsFor resolves DP rank's KV event publisher from o. ok is false
// when KV events are not configured (no sockets at all): neither o.KVPort
// nor o.VLLM.
func KVSettingsFor(o Options, rank int, lookup LookupIP) (s KVSettings, ok bool, err error) {
	s = KVSettings{
		Rank:             rank,
		Encoding:         o.Encoding,
		ReplayTopicFrame: !o.NoReplayTopicFrame,
		Publish:          !o.Silent,
	}
	if o.KVPort > 0 {
		// Dynamo style: always bind.
		if s.Endpoint, err = HostEndpoint(o.Host, o.KVPort+rank, lookup); err != nil {
			return s, false, fmt.Errorf("zmq_kv_events_port: %w", err)
		}
		s.Bind = true
		if o.ReplayPort > 0 {
			if s.ReplayEndpoint, err = HostEndpoint(o.Host, o.ReplayPort+rank, lookup); err != nil {
				return s, false, fmt.Errorf("zmq_replay_port: %w", err)
			}
		}
		// The sizes come from PortTuning (a kv_events_config given beside
		// the port), else the defaults: buffer_steps and hwm are never
		// silently ignored.
		s.BufferSteps, s.HWM, s.MaxQueueSize = DefaultBufferSteps, DefaultHWM, DefaultMaxQueueSize
		if k := o.PortTuning; k != nil {
			s.BufferSteps, s.HWM, s.MaxQueueSize = positiveOr(k.BufferSteps, DefaultBufferSteps),
				positiveOr(k.HWM, DefaultHWM), positiveOr(k.MaxQueueSize, DefaultMaxQueueSize)
		}
		return s, true, nil
	}
	k := o.VLLM
	if k == nil {
		return KVSettings{}, false, nil
	}
	if s.Endpoint, err = OffsetEndpoint(k.Endpoint, rank); err != nil {
		return s, false, fmt.Errorf("kv_events_config.endpoint: %w", err)
	}
	s.Bind = ShouldBind(s.Endpoint)
	if k.ReplayEndpoint != "" {
		if s.ReplayEndpoint, err = OffsetEndpoint(k.ReplayEndpoint, rank); err != nil {
			return s, false, fmt.Errorf("kv_events_config.replay_endpoint: %w", err)
		}
	}
	s.Topic = k.Topic
	s.BufferSteps, s.HWM, s.MaxQueueSize = k.BufferSteps, k.HWM, k.MaxQueueSize
	if s.BufferSteps < 1 {
		s.BufferSteps = DefaultBufferSteps
	}
	if s.MaxQueueSize < 1 {
		s.MaxQueueSize = DefaultMaxQueueSize
	}
	if s.HWM < 1 {
		// libzmq reads 0 as "no limit": a subscriber that never reads would
		// grow the publisher without bound. Validation rejects 0; this
		// guards programmatic configurations.
		s.HWM = DefaultHWM
	}
	return s, true, nil
}

// positiveOr returns v when it is positive, else def.
func positiveOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// FPMSettingsFor resolves DP rank's FPM publisher from o.FPMEndpoint; ok
// is false when it is empty.
func FPMSettingsFor(o Options, rank int) (s FPMSettings, ok bool, err error) {
	if o.FPMEndpoint == "" {
		return s, false, nil
	}
	ep, err := OffsetEndpoint(o.FPMEndpoint, rank)
	if err != nil {
		return s, false, fmt.Errorf("fpm_endpoint: %w", err)
	}
	return FPMSettings{Rank: rank, Endpoint: ep, Bind: ShouldBind(ep), WorkerID: o.WorkerID}, true, nil
}
