package config

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// simCase is one llm-d-inference-sim command line and what it must make
// of the configuration.
type simCase struct {
	args  []string
	check func(t *testing.T, c *Config)
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// simMapped holds, per mapped flag of simFlagTable, a command line that
// sets it and the keys it must set. TestSimFlags_EveryMappedFlagMapsOntoItsKeys
// fails when a mapped flag has no case.
var simMapped = map[string]simCase{
	"max-request-body-size-mb": {[]string{"--max-request-body-size-mb", "8"}, func(t *testing.T, c *Config) {
		if c.MaxRequestBodyBytes != 8<<20 {
			t.Errorf("max_request_body_bytes = %d, want %d", c.MaxRequestBodyBytes, 8<<20)
		}
	}},
	"mode": {[]string{"--mode", "echo"}, func(t *testing.T, c *Config) {
		if c.ResponseMode != ResponseEcho {
			t.Errorf("response_mode = %q, want echo", c.ResponseMode)
		}
	}},
	"inter-token-latency": {[]string{"--inter-token-latency", "12ms"}, func(t *testing.T, c *Config) {
		if c.TimingModel != engine.TimingFixed || c.FixedDecodeMs != 12 || c.FixedPrefillMs != 0 {
			t.Errorf("timing = %s decode %v prefill %v, want fixed 12 and 0", c.TimingModel, c.FixedDecodeMs, c.FixedPrefillMs)
		}
	}},
	"time-to-first-token": {[]string{"--time-to-first-token", "1.5s"}, func(t *testing.T, c *Config) {
		if c.TimingModel != engine.TimingFixed || c.FixedPrefillMs != 1500 || c.FixedDecodeMs != 0 {
			t.Errorf("timing = %s prefill %v decode %v, want fixed 1500 and 0", c.TimingModel, c.FixedPrefillMs, c.FixedDecodeMs)
		}
	}},
	"prefill-overhead": {[]string{"--prefill-overhead", "30ms"}, func(t *testing.T, c *Config) {
		if c.TimingModel != engine.TimingFixed || c.FixedPrefillMs != 30 {
			t.Errorf("timing = %s prefill %v, want fixed 30", c.TimingModel, c.FixedPrefillMs)
		}
	}},
	"prefill-time-per-token": {[]string{"--prefill-time-per-token", "250us"}, func(t *testing.T, c *Config) {
		if c.TimingModel != engine.TimingFixed || c.FixedPrefillMsPerToken != 0.25 {
			t.Errorf("timing = %s per token %v, want fixed 0.25", c.TimingModel, c.FixedPrefillMsPerToken)
		}
	}},
	"prefill-time-std-dev": {[]string{"--prefill-overhead", "30ms", "--prefill-time-std-dev", "5ms"}, func(t *testing.T, c *Config) {
		if c.FixedPrefillStdMs != 5 {
			t.Errorf("fixed_prefill_std_ms = %v, want 5", c.FixedPrefillStdMs)
		}
	}},
	"kv-cache-transfer-time-per-token": {[]string{"--kv-cache-transfer-time-per-token", "3us"}, func(t *testing.T, c *Config) {
		// 1000 prompt tokens at 3 µs each.
		if d := c.TransferDelay(1000); d.Microseconds() != 3000 {
			t.Errorf("transfer delay of 1000 tokens = %v, want 3ms", d)
		}
	}},
	"kv-cache-transfer-latency": {[]string{"--kv-cache-transfer-latency", "100ms", "--kv-cache-transfer-time-per-token", "3us"}, func(t *testing.T, c *Config) {
		// The simulator's default calculator takes the latency when it is
		// set and then ignores the per-token cost.
		if c.KVTransferLatencyMs != 100 || c.TransferDelay(1000) != 100*time.Millisecond ||
			c.EngineConfig(nil).Transfer.Latency != 100*time.Millisecond {
			t.Errorf("latency %v ms, bytes per token %v, delay %v; want 100 ms alone", c.KVTransferLatencyMs, c.KVBytesPerToken, c.TransferDelay(1000))
		}
	}},
	"inter-token-latency-std-dev": {[]string{"--inter-token-latency", "10ms", "--inter-token-latency-std-dev", "2ms"}, func(t *testing.T, c *Config) {
		if c.FixedDecodeStdMs != 2 {
			t.Errorf("fixed_decode_std_ms = %v, want 2", c.FixedDecodeStdMs)
		}
	}},
	"time-to-first-token-std-dev": {[]string{"--time-to-first-token", "100ms", "--time-to-first-token-std-dev", "20ms"}, func(t *testing.T, c *Config) {
		if c.FixedPrefillMs != 100 || c.FixedPrefillStdMs != 20 {
			t.Errorf("prefill %v std %v, want 100 and 20", c.FixedPrefillMs, c.FixedPrefillStdMs)
		}
	}},
	"time-factor-under-load": {[]string{"--inter-token-latency", "10ms", "--time-factor-under-load", "2.5"}, func(t *testing.T, c *Config) {
		if c.FixedLoadFactor != 2.5 {
			t.Errorf("fixed_load_factor = %v, want 2.5", c.FixedLoadFactor)
		}
	}},
	"enable-kvcache": {[]string{"--enable-kvcache", "true"}, func(t *testing.T, c *Config) {
		ev := c.KVEventsConfig
		if ev == nil || !ev.EnableKVCacheEvents || ev.Endpoint != "tcp://localhost:5557" || ev.Publisher != PublisherZMQ {
			t.Errorf("kv_events_config = %+v, want enabled zmq to the simulator's tcp://localhost:5557", ev)
		}
	}},
	"kv-cache-size": {[]string{"--kv-cache-size", "2048"}, func(t *testing.T, c *Config) {
		if c.NumGPUBlocks != 2048 {
			t.Errorf("num_gpu_blocks = %d, want 2048", c.NumGPUBlocks)
		}
	}},
	"zmq-endpoint": {[]string{"--enable-kvcache", "--zmq-endpoint", "tcp://127.0.0.1:6001"}, func(t *testing.T, c *Config) {
		if ev := c.KVEventsConfig; ev == nil || ev.Endpoint != "tcp://127.0.0.1:6001" || !ev.EnableKVCacheEvents {
			t.Errorf("kv_events_config = %+v, want tcp://127.0.0.1:6001 enabled", ev)
		}
	}},
	"kv-events-replay-endpoint": {[]string{"--enable-kvcache", "--kv-events-replay-endpoint", "tcp://*:5558"}, func(t *testing.T, c *Config) {
		if ev := c.KVEventsConfig; ev == nil || ev.ReplayEndpoint == nil || *ev.ReplayEndpoint != "tcp://*:5558" {
			t.Errorf("kv_events_config = %+v, want replay endpoint tcp://*:5558", ev)
		}
	}},
	"kv-events-replay-queue-size": {[]string{"--enable-kvcache", "--kv-events-replay-queue-size", "64"}, func(t *testing.T, c *Config) {
		if ev := c.KVEventsConfig; ev == nil || ev.BufferSteps != 64 {
			t.Errorf("kv_events_config = %+v, want buffer_steps 64", ev)
		}
	}},
	"use-vllm-map-event-format": {[]string{"--use-vllm-map-event-format=false"}, func(t *testing.T, c *Config) {
		if c.KVEventsEncoding != KVEventsArray {
			t.Errorf("kv_events_encoding = %q, want array", c.KVEventsEncoding)
		}
	}},
	"startup-duration": {[]string{"--startup-duration", "1500ms"}, func(t *testing.T, c *Config) {
		if c.StartupTime != 1.5 {
			t.Errorf("startup_time = %v, want 1.5", c.StartupTime)
		}
	}},
	"failure-injection-rate": {[]string{"--failure-injection-rate", "25"}, func(t *testing.T, c *Config) {
		want := []string{"rate_limit", "invalid_api_key", "context_length", "server_error", "invalid_request", "model_not_found"}
		if !near(c.FailureRate, 0.25) || !slices.Equal(c.FailureTypes, want) {
			t.Errorf("failure_rate %v types %q, want 0.25 and %q", c.FailureRate, c.FailureTypes, want)
		}
	}},
	"latency-calculator": {[]string{"--latency-calculator", "per-token", "--time-to-first-token", "1s",
		"--prefill-overhead", "20ms", "--prefill-time-per-token", "1ms"}, func(t *testing.T, c *Config) {
		if c.FixedPrefillMs != 20 || c.FixedPrefillMsPerToken != 1 {
			t.Errorf("prefill %v per token %v, want the per-token calculator's 20 and 1 (time-to-first-token ignored)", c.FixedPrefillMs, c.FixedPrefillMsPerToken)
		}
	}},
	"default-embedding-dimensions": {[]string{"--default-embedding-dimensions", "384"}, func(t *testing.T, c *Config) {
		if c.EmbeddingDim != 384 {
			t.Errorf("embedding_dim = %d, want 384", c.EmbeddingDim)
		}
	}},
}

func loadSimArgs(t *testing.T, args ...string) (*Config, []string) {
	t.Helper()
	fs, err := parseVLLMArgs(args...)
	if err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	cfg, _ := mustLoad(t, OptionsFromFlags(fs))
	return cfg, NoEffectFlags(fs)
}

// Every flag the simulator has and the mock maps is tested here: its
// command line loads and sets the project's keys it names.
func TestSimFlags_EveryMappedFlagMapsOntoItsKeys(t *testing.T) {
	for _, f := range simFlagTable {
		if f.maps == "" {
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			c, ok := simMapped[f.name]
			if !ok {
				t.Fatalf("no test case for the mapped flag --%s", f.name)
			}
			cfg, noEffect := loadSimArgs(t, c.args...)
			if len(noEffect) > 0 {
				t.Errorf("a mapped flag is reported as no effect: %q", noEffect)
			}
			c.check(t, cfg)
		})
	}
}

// Every flag without meaning here is accepted, type-checked as the
// simulator checks it, and named on the startup line as written.
func TestSimFlags_NoEffectFlagsAreAcceptedCheckedAndReported(t *testing.T) {
	for _, f := range simFlagTable {
		if f.maps != "" || f.notYet != "" {
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			var args []string
			var want, wrong string
			switch f.kind {
			case simDuration:
				args, want, wrong = []string{"--" + f.name, "250ms"}, "--"+f.name+" 250ms", "250"
			case simInt:
				args, want, wrong = []string{"--" + f.name, "3"}, "--"+f.name+" 3", "x"
			case simFloat:
				args, want, wrong = []string{"--" + f.name, "0.5"}, "--"+f.name+" 0.5", "x"
			case simBool:
				args, want, wrong = []string{"--" + f.name, "true"}, "--"+f.name+" true", "maybe"
			case simToggle:
				args, want = []string{"--no-" + f.name}, "--no-"+f.name
			case simJSON:
				args, want, wrong = []string{"--" + f.name, `{"running-requests":3}`}, "--"+f.name+" <json>", "{"
			default:
				args, want = []string{"--" + f.name, "x"}, "--"+f.name+" x"
			}
			_, noEffect := loadSimArgs(t, args...)
			if !slices.Equal(noEffect, []string{want}) {
				t.Errorf("no-effect flags = %q, want [%q]", noEffect, want)
			}
			if wrong == "" {
				return
			}
			if _, err := parseVLLMArgs("--" + f.name + "=" + wrong); err == nil || !strings.Contains(err.Error(), f.name) {
				t.Errorf("--%s=%s: err = %v, want an error naming the flag", f.name, wrong, err)
			}
		})
	}
}

// A name the simulator shares with the mock or vLLM keeps the mock's
// meaning: the simulator's flag is not registered over it.
func TestSimFlags_ClashesKeepTheMocksMeaning(t *testing.T) {
	fs, err := parseVLLMArgs()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range simClashes {
		fl := fs.Lookup(name)
		if fl == nil {
			t.Errorf("--%s: not registered", name)
			continue
		}
		if _, sim := fl.Value.(*simValue); sim {
			t.Errorf("--%s: registered as the simulator's flag over the mock's", name)
		}
		if simFlagByName[name] != nil {
			t.Errorf("--%s is both in simFlagTable and simClashes", name)
		}
	}
	for _, f := range simFlagTable {
		if _, sim := fs.Lookup(f.name).Value.(*simValue); !sim {
			t.Errorf("--%s: the mock or vLLM has this name; move it to simClashes", f.name)
		}
	}
}

// The typo guard has nothing to say about the simulator's flags any more:
// each parses (--time-to-first-token used to be "did you mean").
func TestSimFlags_NoDidYouMean(t *testing.T) {
	for _, args := range [][]string{
		{"--time-to-first-token", "10ms"}, {"--inter-token-latency", "10ms"}, {"--kv-cache-size", "10"},
		{"--failure-injection-rate", "0"}, {"--mode", "random"}, {"--zmq-endpoint", "tcp://localhost:1"},
	} {
		if _, err := parseVLLMArgs(args...); err != nil {
			t.Errorf("%q: %v", args, err)
		}
	}
}

// The simulator's checks: a mode, a calculator, a duration with a unit, a
// deviation of at most 30%, a load factor of at least 1.
func TestSimFlags_BadValues(t *testing.T) {
	for _, args := range [][]string{{"--mode", "loud"}, {"--latency-calculator", "quadratic"}, {"--time-to-first-token", "2000"}} {
		if _, err := parseVLLMArgs(args...); err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("%q: err = %v, want an error naming the flag", args, err)
		}
	}
	for _, args := range [][]string{
		{"--time-to-first-token", "100ms", "--time-to-first-token-std-dev", "40ms"},
		{"--inter-token-latency", "10ms", "--inter-token-latency-std-dev", "4ms"},
		{"--inter-token-latency", "10ms", "--time-factor-under-load", "0.5"},
	} {
		fs, err := parseVLLMArgs(args...)
		if err != nil {
			t.Fatalf("parse %q: %v", args, err)
		}
		if probs := loadProblems(t, OptionsFromFlags(fs)); len(probs) != 1 {
			t.Errorf("%q: problems %q, want one", args, probs)
		}
	}
	fs, err := parseVLLMArgs("--self-signed-certs")
	if err != nil {
		t.Fatal(err)
	}
	if got := refusals(t, OptionsFromFlags(fs)); len(got) != 1 || !strings.Contains(got[0], "not supported yet: --self-signed-certs true") {
		t.Errorf("--self-signed-certs: problems %q, want not supported yet", got)
	}
}

// A YAML file of the simulator's keys is read as its flags: the example
// of its docs/latency-profiles.md (per-token calculator) becomes the
// fixed model with per-token prefill, jitter and load factor.
func TestSimConfigFile_LatencyProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "profile.yaml")
	const file = `port: 8000
model: "meta-llama/Llama-3.1-8B-Instruct"
max-num-seqs: 16
mode: "random"
latency-calculator: per-token
inter-token-latency: 12ms
inter-token-latency-std-dev: 2ms
prefill-overhead: 30ms
prefill-time-per-token: 250us
prefill-time-std-dev: 5ms
kv-cache-transfer-time-per-token: 3us
time-factor-under-load: 2.0
`
	if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _ := mustLoad(t, LoadOptions{ConfigPath: path})
	ec := cfg.EngineConfig(nil)
	want := engine.TimingConfig{Model: engine.TimingFixed, FixedPrefillMs: 30, FixedDecodeMs: 12,
		Jitter: engine.FixedJitter{PrefillPerTokenMs: 0.25, PrefillStdMs: 5, DecodeStdMs: 2, LoadFactor: 2, MaxNumSeqs: 16, Seed: uint64(cfg.Seed)}}
	if ec.Timing != want {
		t.Errorf("timing = %+v\nwant     %+v", ec.Timing, want)
	}
	if cfg.MaxNumSeqs != 16 || cfg.Model != "meta-llama/Llama-3.1-8B-Instruct" || cfg.ResponseMode != ResponseGenerate {
		t.Errorf("max_num_seqs %d model %q response_mode %q", cfg.MaxNumSeqs, cfg.Model, cfg.ResponseMode)
	}
}

// The migration guide names every flag of the simulator.
func TestSimFlags_MigrationDocListsEveryFlag(t *testing.T) {
	doc, err := os.ReadFile("../../docs/migrating-from-llm-d-inference-sim.md")
	if err != nil {
		t.Fatal(err)
	}
	names := slices.Clone(simClashes)
	for _, f := range simFlagTable {
		names = append(names, f.name)
	}
	for _, name := range names {
		if !strings.Contains(string(doc), "`--"+name+"`") && !strings.Contains(string(doc), "`--"+name+" ") {
			t.Errorf("docs/migrating-from-llm-d-inference-sim.md does not name --%s", name)
		}
	}
}
