package worker

import (
	"errors"
	"net"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/events"
	"github.com/mocker-server/mocker-server/internal/kv"
	"github.com/mocker-server/mocker-server/internal/metrics"
)

// The publishers' settings of DP rank r from a configuration, through
// EventsOptions and the events package's resolution (the path Production
// and the fleet's port plan take).

func fakeLookup(table map[string][]string) events.LookupIP {
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

func fpmSettingsFor(t *testing.T, cfg *config.Config, rank int) (events.FPMSettings, bool, error) {
	t.Helper()
	o, err := EventsOptions(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return events.FPMSettingsFor(o, rank)
}

func ptr[T any](v T) *T { return &v }

func TestEventsOptionsKVSettings(t *testing.T) {
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
		want   events.KVSettings
		errSub string
	}{
		{name: "none", mutate: nil, ok: false},
		{name: "disabled", mutate: func(c *config.Config) {
			k := config.DefaultKVEventsConfig()
			k.Publisher = "null"
			c.KVEventsConfig = &k
		}, ok: false},
		{name: "null publisher", mutate: vllm(func(k *config.KVEventsConfig) { k.Publisher = "null" }), ok: false},
		{name: "vllm defaults", mutate: vllm(nil), ok: true, want: events.KVSettings{
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
		}, ok: true, want: events.KVSettings{Rank: 2, Endpoint: "tcp://indexer:6002", Bind: false,
			ReplayEndpoint: "tcp://*:6102", Topic: "kv@pod-a@m", BufferSteps: 5, HWM: 7, MaxQueueSize: 9,
			Encoding: events.EncodingArray, Publish: true}},
		{name: "vllm inproc rank 1", rank: 1, mutate: vllm(func(k *config.KVEventsConfig) {
			k.Endpoint = "inproc://kv"
			k.ReplayEndpoint = ptr("inproc://replay")
		}), ok: true, want: events.KVSettings{Rank: 1, Endpoint: "inproc://kv_dp1", Bind: true,
			ReplayEndpoint: "inproc://replay_dp1", BufferSteps: 10000, HWM: 10000, MaxQueueSize: 100000,
			ReplayTopicFrame: true, Publish: true}},
		{name: "vllm ipc rank 1", rank: 1, mutate: vllm(func(k *config.KVEventsConfig) {
			k.Endpoint = "ipc:///tmp/kv"
		}), errSub: "kv_events_config.endpoint"},
		{name: "prefix caching off", mutate: func(c *config.Config) {
			vllm(nil)(c)
			c.EnablePrefixCaching = false
		}, ok: true, want: events.KVSettings{Endpoint: "tcp://*:5557", Bind: true, BufferSteps: 10000,
			HWM: 10000, MaxQueueSize: 100000, ReplayTopicFrame: true, Publish: false}},
		{name: "decode worker", mutate: func(c *config.Config) {
			vllm(nil)(c)
			c.WorkerType = config.WorkerDecode
		}, ok: true, want: events.KVSettings{Endpoint: "tcp://*:5557", Bind: true, BufferSteps: 10000,
			HWM: 10000, MaxQueueSize: 100000, ReplayTopicFrame: true, Publish: false}},
		{name: "dynamo ports rank 1", rank: 1, mutate: func(c *config.Config) {
			c.ZMQKVEventsPort, c.ZMQReplayPort, c.DPSize = 20080, 20090, 2
		}, ok: true, want: events.KVSettings{Rank: 1, Endpoint: "tcp://127.0.0.1:20081", Bind: true,
			ReplayEndpoint: "tcp://127.0.0.1:20091", BufferSteps: 10000, HWM: 10000, MaxQueueSize: 100000,
			ReplayTopicFrame: true, Publish: true}},
		{name: "dynamo host name and topic ignored", mutate: func(c *config.Config) {
			vllm(func(k *config.KVEventsConfig) { k.EnableKVCacheEvents = false; k.Topic = "x" })(c)
			c.ZMQKVEventsPort, c.Host = 20080, "mocker"
		}, ok: true, want: events.KVSettings{Endpoint: "tcp://10.0.0.7:20080", Bind: true, BufferSteps: 10000,
			HWM: 10000, MaxQueueSize: 100000, ReplayTopicFrame: true, Publish: true}},
		{name: "dynamo port with a disabled kv_events_config's tuning", mutate: func(c *config.Config) {
			vllm(func(k *config.KVEventsConfig) {
				k.EnableKVCacheEvents = false
				k.BufferSteps, k.HWM, k.MaxQueueSize = 77, 55, 33
			})(c)
			c.ZMQKVEventsPort = 20080
		}, ok: true, want: events.KVSettings{Endpoint: "tcp://127.0.0.1:20080", Bind: true, BufferSteps: 77,
			HWM: 55, MaxQueueSize: 33, ReplayTopicFrame: true, Publish: true}},
		{name: "dynamo ipv6 any", mutate: func(c *config.Config) {
			c.ZMQKVEventsPort, c.Host = 20080, "::"
		}, ok: true, want: events.KVSettings{Endpoint: "tcp://[::]:20080", Bind: true, BufferSteps: 10000,
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
			o, err := EventsOptions(&cfg)
			var got events.KVSettings
			var ok bool
			if err == nil {
				got, ok, err = events.KVSettingsFor(o, c.rank, lookup)
			}
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

func TestEventsOptionsFPMSettings(t *testing.T) {
	cfg := config.Default()
	cfg.WorkerID = "w0"
	if _, ok, err := fpmSettingsFor(t, &cfg, 0); ok || err != nil {
		t.Fatalf("empty endpoint: ok %v err %v", ok, err)
	}
	cfg.FPMEndpoint = "tcp://*:5560"
	s, ok, err := fpmSettingsFor(t, &cfg, 1)
	if !ok || err != nil || s != (events.FPMSettings{Rank: 1, Endpoint: "tcp://*:5561", Bind: true, WorkerID: "w0"}) {
		t.Errorf("got %+v %v %v", s, ok, err)
	}
	cfg.FPMEndpoint = "tcp://collector:5560"
	if s, _, _ := fpmSettingsFor(t, &cfg, 0); s.Bind || s.Endpoint != "tcp://collector:5560" {
		t.Errorf("connect: %+v", s)
	}
	cfg.FPMEndpoint = "ipc:///tmp/fpm"
	if _, _, err := fpmSettingsFor(t, &cfg, 1); err == nil || !strings.Contains(err.Error(), "fpm_endpoint") {
		t.Errorf("ipc rank 1: %v", err)
	}
}

// loadFlags loads a configuration from serve's command-line flags.
func loadFlags(t *testing.T, args ...string) *config.Config {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	config.RegisterFlags(fs)
	if err := fs.Parse(config.RewriteArgs(args)); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	opts := config.OptionsFromFlags(fs)
	opts.LookupEnv = func(string) (string, bool) { return "", false }
	opts.Hostname = func() (string, error) { return "testhost", nil }
	cfg, _, err := config.Load(opts)
	if err != nil {
		t.Fatalf("Load %q: %v", args, err)
	}
	return cfg
}

// TestMetricsOptions checks what the registry is told of a configuration:
// the resolutions that happen here (served name, auto family, per-engine
// block size, LoRA only when enabled, draft positions, offload media,
// disaggregation) and the labels passed through.
func TestMetricsOptions(t *testing.T) {
	base := metrics.Options{Model: "mocker-model", Family: metrics.FamilyVLLM, DPSize: 1,
		EngineType: engine.EngineVLLM, WorkerType: "aggregated", TimingModel: engine.TimingPolynomial,
		BlockSize: 64, NumGPUBlocks: 16384, MaxModelLen: 32768, EnablePrefixCaching: true, HashAlgo: "xxh3",
		KVCacheDtype: "auto", GPUMemoryUtilization: 0.9}
	for _, tc := range []struct {
		args []string
		want func(o *metrics.Options)
	}{
		{nil, func(*metrics.Options) {}},
		{[]string{"--served-model-name", "a", "b", "--dp-size", "2", "--num-gpu-blocks", "100", "--no-deprecated-metrics"},
			func(o *metrics.Options) {
				o.Model, o.DPSize, o.NumGPUBlocks, o.NumGPUBlocksOverridden, o.HideDeprecated = "a", 2, 100, true, true
			}},
		{[]string{"--engine-type", "trtllm"}, func(o *metrics.Options) { o.EngineType, o.BlockSize = engine.EngineTRTLLM, 32 }},
		{[]string{"--engine-type", "sglang", "--max-model-len", "8192"}, func(o *metrics.Options) {
			// sglang's default pool holds vllm's default tokens: 262,144 pages of 1.
			o.EngineType, o.Family, o.BlockSize, o.MaxModelLen, o.NumGPUBlocks = engine.EngineSGLang, metrics.FamilySGLang, 1, 8192, 262144
		}},
		{[]string{"--metrics-family", "both", "--timing-model", "fixed", "--prefix-caching-hash-algo", "sha256_cbor"},
			func(o *metrics.Options) {
				o.Family, o.TimingModel, o.HashAlgo = metrics.FamilyBoth, engine.TimingFixed, "sha256_cbor"
			}},
		{[]string{"--max-loras", "3"}, func(*metrics.Options) {}}, // LoRA off: no LoRA families
		{[]string{"--enable-lora", "--max-loras", "3"}, func(o *metrics.Options) { o.MaxLoRAs = 3 }},
		{[]string{"--speculative-config", `{"method":"ngram","num_speculative_tokens":3}`},
			func(o *metrics.Options) { o.SpeculativeTokens = 3 }},
		{[]string{"--kv-offloading-size", "1", "--kv-offloading-disk-size", "1"},
			func(o *metrics.Options) { o.OffloadTiers = []kv.Medium{kv.MediumCPU, kv.MediumDisk} }},
		{[]string{"--disaggregation-mode", "decode"}, func(o *metrics.Options) { o.WorkerType, o.Disaggregated = "decode", true }},
		// The hardware model sizes the pool; its settings are labels.
		{[]string{"--hardware", "h100_sxm", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--kv-cache-dtype", "fp8",
			"--gpu-memory-utilization", "0.8", "--max-model-len", "8192"}, func(o *metrics.Options) {
			o.Model, o.Hardware, o.KVCacheDtype, o.GPUMemoryUtilization, o.MaxModelLen = "meta-llama/Llama-3.1-8B-Instruct", "h100_sxm", "fp8", 0.8, 8192
			o.NumGPUBlocks = -1 // the pool the configuration computed (internal/config's hardware tests)
		}},
	} {
		want := base
		tc.want(&want)
		cfg := loadFlags(t, tc.args...)
		if want.NumGPUBlocks == -1 {
			want.NumGPUBlocks = cfg.NumGPUBlocks
		}
		if got := MetricsOptions(cfg); !reflect.DeepEqual(got, want) {
			t.Errorf("%q:\n got %+v\nwant %+v", tc.args, got, want)
		}
	}
}

// TestEventsDefaultsAreConfigs: the publishers' fallback sizes are vLLM's
// kv_events_config defaults, as config spells them.
func TestEventsDefaultsAreConfigs(t *testing.T) {
	d := config.DefaultKVEventsConfig()
	if d.BufferSteps != events.DefaultBufferSteps || d.HWM != events.DefaultHWM || d.MaxQueueSize != events.DefaultMaxQueueSize {
		t.Errorf("config %+v, events %d %d %d", d, events.DefaultBufferSteps, events.DefaultHWM, events.DefaultMaxQueueSize)
	}
}
