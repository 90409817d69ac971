package events

import (
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/engine"

	"github.com/mocker-server/mocker-server/internal/config"
)

func TestShouldBind(t *testing.T) {
	cases := map[string]bool{
		"tcp://*:5557":          true,
		"tcp://[::]:5557":       true,
		"tcp://:::5557":         true,
		"ipc:///tmp/kv":         true,
		"inproc://kv":           true,
		"tcp://indexer:5557":    false,
		"tcp://0.0.0.0:5557":    false, // connects under vLLM's rule
		"tcp://127.0.0.1:5557":  false,
		"tcp://[fe80::1]:5557":  true, // contains "::"
		"tcp://[2001:db8:1]:55": false,
	}
	for ep, want := range cases {
		if got := ShouldBind(ep); got != want {
			t.Errorf("ShouldBind(%q) = %v, want %v", ep, got, want)
		}
	}
}

func TestOffsetEndpoint(t *testing.T) {
	cases := []struct {
		ep   string
		rank int
		want string
		err  bool
	}{
		{"tcp://*:5557", 0, "tcp://*:5557", false},
		{"tcp://*:5557", 1, "tcp://*:5558", false},
		{"tcp://indexer:5557", 3, "tcp://indexer:5560", false},
		{"tcp://[::1]:6000", 2, "tcp://[::1]:6002", false},
		{"inproc://kv", 0, "inproc://kv", false},
		{"inproc://kv", 2, "inproc://kv_dp2", false},
		{"ipc:///tmp/kv", 0, "ipc:///tmp/kv", false},
		{"ipc:///tmp/kv", 1, "", true},
		{"tcp://host", 1, "", true},
		{"tcp://host:65535", 1, "", true},
		{"tcp://host:abc", 1, "", true},
	}
	for _, c := range cases {
		got, err := OffsetEndpoint(c.ep, c.rank)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("OffsetEndpoint(%q, %d) = %q, %v; want %q (error %v)", c.ep, c.rank, got, err, c.want, c.err)
		}
	}
}

func fakeLookup(table map[string][]string) LookupIP {
	return func(host string) ([]net.IP, error) {
		addrs, ok := table[host]
		if !ok {
			return nil, errors.New("no such host")
		}
		var ips []net.IP
		for _, a := range addrs {
			ips = append(ips, net.ParseIP(a))
		}
		return ips, nil
	}
}

func TestHostEndpoint(t *testing.T) {
	lookup := fakeLookup(map[string][]string{
		"localhost": {"::1", "127.0.0.1"},
		"v6only":    {"fd00::5"},
		"empty":     {},
	})
	cases := []struct {
		host string
		port int
		want string
		err  bool
	}{
		{"127.0.0.1", 5557, "tcp://127.0.0.1:5557", false},
		{"0.0.0.0", 5558, "tcp://0.0.0.0:5558", false},
		{"::", 5557, "tcp://[::]:5557", false},
		{"[::1]", 5557, "tcp://[::1]:5557", false},
		{"fe80::1", 1, "tcp://[fe80::1]:1", false},
		{"localhost", 5557, "tcp://127.0.0.1:5557", false}, // IPv4 preferred
		{"v6only", 5557, "tcp://[fd00::5]:5557", false},
		{"", 5557, "tcp://*:5557", false},
		{"nowhere", 5557, "", true},
		{"empty", 5557, "", true},
	}
	for _, c := range cases {
		got, err := HostEndpoint(c.host, c.port, lookup)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("HostEndpoint(%q, %d) = %q, %v; want %q (error %v)", c.host, c.port, got, err, c.want, c.err)
		}
	}
}

func TestNeedsIPv6(t *testing.T) {
	for ep, want := range map[string]bool{
		"tcp://[::1]:5": true, "tcp://[::]:5": true, "tcp://*:5": false, "tcp://127.0.0.1:5": false,
		"ipc:///a:b:c": false, "tcp://:::5": true,
	} {
		if got := needsIPv6(ep); got != want {
			t.Errorf("needsIPv6(%q) = %v", ep, got)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestKVSettingsFor(t *testing.T) {
	lookup := fakeLookup(map[string][]string{"mocker": {"10.0.0.7"}})
	vllm := func(mut func(k *config.KVEventsConfig)) func(c *config.Config) {
		return func(c *config.Config) {
			k := config.DefaultKVEventsConfig()
			k.EnableKVCacheEvents = true
			k.Publisher = "zmq"
			if mut != nil {
				mut(&k)
			}
			c.KVEventsConfig = &k
		}
	}
	cases := []struct {
		name   string
		mutate func(c *config.Config)
		rank   int
		ok     bool
		want   KVSettings
		errSub string
	}{
		{name: "none", mutate: nil, ok: false},
		{name: "disabled", mutate: func(c *config.Config) {
			k := config.DefaultKVEventsConfig()
			k.Publisher = "null"
			c.KVEventsConfig = &k
		}, ok: false},
		{name: "null publisher", mutate: vllm(func(k *config.KVEventsConfig) { k.Publisher = "null" }), ok: false},
		{name: "vllm defaults", mutate: vllm(nil), ok: true, want: KVSettings{
			Endpoint: "tcp://*:5557", Bind: true, BufferSteps: 10000, HWM: 10000, MaxQueueSize: 100000,
			ReplayTopicFrame: true, Publish: true}},
		{name: "vllm connect rank 2 with replay", rank: 2, mutate: func(c *config.Config) {
			vllm(func(k *config.KVEventsConfig) {
				k.Endpoint = "tcp://indexer:6000"
				k.ReplayEndpoint = ptr("tcp://*:6100")
				k.Topic = "kv@pod-a@m"
				k.BufferSteps, k.HWM, k.MaxQueueSize = 5, 7, 9
			})(c)
			c.DPSize = 4
			c.KVEventsEncoding = "array"
			c.KVEventsReplayTopicFrame = false
		}, ok: true, want: KVSettings{Rank: 2, Endpoint: "tcp://indexer:6002", Bind: false,
			ReplayEndpoint: "tcp://*:6102", Topic: "kv@pod-a@m", BufferSteps: 5, HWM: 7, MaxQueueSize: 9,
			Encoding: EncodingArray, Publish: true}},
		{name: "vllm inproc rank 1", rank: 1, mutate: vllm(func(k *config.KVEventsConfig) {
			k.Endpoint = "inproc://kv"
			k.ReplayEndpoint = ptr("inproc://replay")
		}), ok: true, want: KVSettings{Rank: 1, Endpoint: "inproc://kv_dp1", Bind: true,
			ReplayEndpoint: "inproc://replay_dp1", BufferSteps: 10000, HWM: 10000, MaxQueueSize: 100000,
			ReplayTopicFrame: true, Publish: true}},
		{name: "vllm ipc rank 1", rank: 1, mutate: vllm(func(k *config.KVEventsConfig) {
			k.Endpoint = "ipc:///tmp/kv"
		}), errSub: "kv_events_config.endpoint"},
		{name: "prefix caching off", mutate: func(c *config.Config) {
			vllm(nil)(c)
			c.EnablePrefixCaching = false
		}, ok: true, want: KVSettings{Endpoint: "tcp://*:5557", Bind: true, BufferSteps: 10000,
			HWM: 10000, MaxQueueSize: 100000, ReplayTopicFrame: true, Publish: false}},
		{name: "decode worker", mutate: func(c *config.Config) {
			vllm(nil)(c)
			c.WorkerType = engine.WorkerDecode
		}, ok: true, want: KVSettings{Endpoint: "tcp://*:5557", Bind: true, BufferSteps: 10000,
			HWM: 10000, MaxQueueSize: 100000, ReplayTopicFrame: true, Publish: false}},
		{name: "dynamo ports rank 1", rank: 1, mutate: func(c *config.Config) {
			c.ZMQKVEventsPort, c.ZMQReplayPort, c.DPSize = 20080, 20090, 2
		}, ok: true, want: KVSettings{Rank: 1, Endpoint: "tcp://127.0.0.1:20081", Bind: true,
			ReplayEndpoint: "tcp://127.0.0.1:20091", BufferSteps: 10000, HWM: 10000, MaxQueueSize: 100000,
			ReplayTopicFrame: true, Publish: true}},
		{name: "dynamo host name and topic ignored", mutate: func(c *config.Config) {
			vllm(func(k *config.KVEventsConfig) { k.EnableKVCacheEvents = false; k.Topic = "x" })(c)
			c.ZMQKVEventsPort, c.Host = 20080, "mocker"
		}, ok: true, want: KVSettings{Endpoint: "tcp://10.0.0.7:20080", Bind: true, BufferSteps: 10000,
			HWM: 10000, MaxQueueSize: 100000, ReplayTopicFrame: true, Publish: true}},
		{name: "dynamo port with a disabled kv_events_config's tuning", mutate: func(c *config.Config) {
			vllm(func(k *config.KVEventsConfig) {
				k.EnableKVCacheEvents = false
				k.BufferSteps, k.HWM, k.MaxQueueSize = 77, 55, 33
			})(c)
			c.ZMQKVEventsPort = 20080
		}, ok: true, want: KVSettings{Endpoint: "tcp://127.0.0.1:20080", Bind: true, BufferSteps: 77,
			HWM: 55, MaxQueueSize: 33, ReplayTopicFrame: true, Publish: true}},
		{name: "dynamo ipv6 any", mutate: func(c *config.Config) {
			c.ZMQKVEventsPort, c.Host = 20080, "::"
		}, ok: true, want: KVSettings{Endpoint: "tcp://[::]:20080", Bind: true, BufferSteps: 10000,
			HWM: 10000, MaxQueueSize: 100000, ReplayTopicFrame: true, Publish: true}},
		{name: "dynamo unresolvable", mutate: func(c *config.Config) {
			c.ZMQKVEventsPort, c.Host = 20080, "nowhere"
		}, errSub: "nowhere"},
		{name: "bad encoding", mutate: func(c *config.Config) {
			vllm(nil)(c)
			c.KVEventsEncoding = "cbor"
		}, errSub: "cbor"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := config.Default()
			if c.mutate != nil {
				c.mutate(&cfg)
			}
			got, ok, err := KVSettingsFor(&cfg, c.rank, lookup)
			if c.errSub != "" {
				if err == nil || !strings.Contains(err.Error(), c.errSub) {
					t.Fatalf("err = %v, want one containing %q", err, c.errSub)
				}
				return
			}
			if err != nil || ok != c.ok {
				t.Fatalf("ok %v err %v, want ok %v", ok, err, c.ok)
			}
			if ok && got != c.want {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestFPMSettingsFor(t *testing.T) {
	cfg := config.Default()
	cfg.WorkerID = "w0"
	if _, ok, err := FPMSettingsFor(&cfg, 0); ok || err != nil {
		t.Fatalf("empty endpoint: ok %v err %v", ok, err)
	}
	cfg.FPMEndpoint = "tcp://*:5560"
	s, ok, err := FPMSettingsFor(&cfg, 1)
	if !ok || err != nil || s != (FPMSettings{Rank: 1, Endpoint: "tcp://*:5561", Bind: true, WorkerID: "w0"}) {
		t.Errorf("got %+v %v %v", s, ok, err)
	}
	cfg.FPMEndpoint = "tcp://collector:5560"
	if s, _, _ := FPMSettingsFor(&cfg, 0); s.Bind || s.Endpoint != "tcp://collector:5560" {
		t.Errorf("connect: %+v", s)
	}
	cfg.FPMEndpoint = "ipc:///tmp/fpm"
	if _, _, err := FPMSettingsFor(&cfg, 1); err == nil || !strings.Contains(err.Error(), "fpm_endpoint") {
		t.Errorf("ipc rank 1: %v", err)
	}
}
