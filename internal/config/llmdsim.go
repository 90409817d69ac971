package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// llm-d-inference-sim (github.com/llm-d/llm-d-inference-sim, read at
// commit eec055a39e6bbc1adbcb54f88f24f36b7f94e781, pkg/common/parser.go and
// config.go) is the other mock vLLM that llm-d's guides and charts run.
// Its flags are accepted here so that its users can switch by changing the
// binary: each is either mapped onto the project's own keys (simOverlay) or
// accepted with no effect and named once at startup, as vLLM's flags
// without meaning here are. A flag whose name the mock or vLLM already has
// keeps the mock's (vLLM's) meaning; docs/migrating-from-llm-d-inference-sim.md
// lists every flag, what it becomes, and how to reach the other meaning of
// a clashing name. Its YAML --config file (keys are the flag names) is
// read like a vLLM config file: each key as the flag it names.

// simKind says how llm-d-inference-sim reads a flag's value.
type simKind int

const (
	simDuration simKind = iota // Go duration with a unit: 100ms, 2s
	simInt                     // integer
	simFloat                   // number
	simBool                    // --x, --x=true|false, --x true|false
	simToggle                  // --x / --no-x, no value
	simString                  // any text
	simJSON                    // JSON text (an object from a YAML file)
)

// simFlag is one llm-d-inference-sim flag the mock does not define itself.
type simFlag struct {
	name string
	kind simKind
	// maps names the project keys the flag sets (simOverlay); "" means
	// accepted, no effect, and why says why.
	maps string
	why  string
	// notYet names the capability the flag needs when the mock does not
	// have it: starting with it set fails with "not supported yet".
	notYet string
	// choices are the values a simString flag accepts (any when empty).
	choices []string
}

// simFlagTable lists llm-d-inference-sim's flags in the order of its
// parser.go, skipping those whose names the mock or vLLM define
// (simClashes). Its klog flags come last.
var simFlagTable = []simFlag{
	{name: "max-request-body-size-mb", kind: simInt, maps: "max_request_body_bytes"},
	{name: "max-waiting-queue-length", kind: simInt, why: "the waiting queue is bounded by the KV cache and --max-concurrent-requests"},
	{name: "mode", kind: simString, maps: "response_mode", choices: []string{"echo", "random"}},
	{name: "inter-token-latency", kind: simDuration, maps: "timing_model, fixed_decode_ms"},
	{name: "time-to-first-token", kind: simDuration, maps: "timing_model, fixed_prefill_ms"},
	{name: "prefill-overhead", kind: simDuration, maps: "timing_model, fixed_prefill_ms"},
	{name: "prefill-time-per-token", kind: simDuration, maps: "timing_model, fixed_prefill_ms_per_token"},
	{name: "prefill-time-std-dev", kind: simDuration, maps: "fixed_prefill_std_ms"},
	{name: "kv-cache-transfer-time-per-token", kind: simDuration, maps: "kv_bytes_per_token, kv_transfer_bandwidth"},
	{name: "kv-cache-transfer-time-std-dev", kind: simDuration, why: "the KV transfer time has no jitter"},
	{name: "kv-cache-transfer-latency", kind: simDuration, maps: "kv_transfer_latency_ms"},
	{name: "inter-token-latency-std-dev", kind: simDuration, maps: "fixed_decode_std_ms"},
	{name: "time-to-first-token-std-dev", kind: simDuration, maps: "fixed_prefill_std_ms"},
	{name: "kv-cache-transfer-latency-std-dev", kind: simDuration, why: "the KV transfer time has no jitter"},
	{name: "time-factor-under-load", kind: simFloat, maps: "fixed_load_factor"},
	{name: "max-tool-call-integer-param", kind: simInt, why: "tool arguments are generated from the tool's JSON schema"},
	{name: "min-tool-call-integer-param", kind: simInt, why: "tool arguments are generated from the tool's JSON schema"},
	{name: "max-tool-call-number-param", kind: simFloat, why: "tool arguments are generated from the tool's JSON schema"},
	{name: "min-tool-call-number-param", kind: simFloat, why: "tool arguments are generated from the tool's JSON schema"},
	{name: "max-tool-call-array-param-length", kind: simInt, why: "tool arguments are generated from the tool's JSON schema"},
	{name: "min-tool-call-array-param-length", kind: simInt, why: "tool arguments are generated from the tool's JSON schema"},
	{name: "tool-call-not-required-param-probability", kind: simInt, why: "tool arguments are generated from the tool's JSON schema"},
	{name: "object-tool-call-not-required-field-probability", kind: simInt, why: "tool arguments are generated from the tool's JSON schema"},
	{name: "tool-call-extra-call-probability", kind: simInt, why: "the number of calls follows tool_choice and --tool-call-probability"},
	{name: "enable-kvcache", kind: simBool, maps: "kv_events_config.enable_kv_cache_events, kv_events_config.endpoint"},
	{name: "kv-cache-size", kind: simInt, maps: "num_gpu_blocks"},
	{name: "global-cache-hit-threshold", kind: simFloat, why: "there is no cache_threshold finish reason"},
	{name: "zmq-endpoint", kind: simString, maps: "kv_events_config.endpoint"},
	{name: "kv-events-replay-endpoint", kind: simString, maps: "kv_events_config.replay_endpoint"},
	{name: "kv-events-replay-queue-size", kind: simInt, maps: "kv_events_config.buffer_steps"},
	{name: "event-batch-size", kind: simInt, why: "a batch holds one engine pass's events, as vLLM's do"},
	{name: "use-vllm-map-event-format", kind: simBool, maps: "kv_events_encoding"},
	{name: "dataset-path", kind: simString, why: "answers are planned from the seed, not read from a dataset"},
	{name: "dataset-url", kind: simString, why: "answers are planned from the seed, not read from a dataset"},
	{name: "dataset-in-memory", kind: simBool, why: "answers are planned from the seed, not read from a dataset"},
	{name: "dataset-table-name", kind: simString, why: "answers are planned from the seed, not read from a dataset"},
	{name: "render-url", kind: simString, why: "prompts are tokenized in process (--tokenizer)"},
	{name: "render-timeout", kind: simDuration, why: "prompts are tokenized in process (--tokenizer)"},
	{name: "mm-render-timeout", kind: simDuration, why: "prompts are tokenized in process (--tokenizer)"},
	{name: "force-dummy-tokenizer", kind: simBool, why: "the built-in tokenizer is used unless --tokenizer (or --model) is a tokenizer directory"},
	{name: "startup-duration", kind: simDuration, maps: "startup_time"},
	{name: "log-http", kind: simBool, why: "requests are logged at --log-level debug"},
	{name: "skip-tool-validation", kind: simBool, why: "tool schemas are not meta-validated, as in vLLM"},
	{name: "failure-injection-rate", kind: simInt, maps: "failure_rate (and failure_types when not given)"},
	{name: "self-signed-certs", kind: simBool, notYet: capTLS},
	{name: "latency-calculator", kind: simString, maps: "chooses the latency flags that apply", choices: []string{"", "constant", "per-token"}},
	{name: "default-embedding-dimensions", kind: simInt, maps: "embedding_dim"},
	{name: "fake-metrics-refresh-interval", kind: simDuration, why: "metrics report the simulated engine's own state"},
	{name: "fake-metrics", kind: simJSON, why: "metrics report the simulated engine's own state"},
	{name: "omni", kind: simToggle, why: "answers carry no generated images"},
	{name: "image-emission-rate", kind: simInt, why: "answers carry no generated images"},
	{name: "time-to-generate-image", kind: simDuration, why: "answers carry no generated images"},
	{name: "time-to-generate-image-std-dev", kind: simDuration, why: "answers carry no generated images"},

	// klog's flags (logging goes to stderr at --log-level).
	{name: "add-dir-header", kind: simBool, why: "klog flag; logs go to stderr at --log-level"},
	{name: "alsologtostderr", kind: simBool, why: "klog flag; logs go to stderr at --log-level"},
	{name: "log-backtrace-at", kind: simString, why: "klog flag; logs go to stderr at --log-level"},
	{name: "log-dir", kind: simString, why: "klog flag; logs go to stderr at --log-level"},
	{name: "log-file", kind: simString, why: "klog flag; logs go to stderr at --log-level"},
	{name: "log-file-max-size", kind: simInt, why: "klog flag; logs go to stderr at --log-level"},
	{name: "logtostderr", kind: simBool, why: "klog flag; logs go to stderr at --log-level"},
	{name: "one-output", kind: simBool, why: "klog flag; logs go to stderr at --log-level"},
	{name: "skip-headers", kind: simBool, why: "klog flag; logs go to stderr at --log-level"},
	{name: "skip-log-headers", kind: simBool, why: "klog flag; logs go to stderr at --log-level"},
	{name: "stderrthreshold", kind: simString, why: "klog flag; logs go to stderr at --log-level"},
	{name: "v", kind: simInt, why: "klog verbosity; use --log-level"},
	{name: "vmodule", kind: simString, why: "klog flag; logs go to stderr at --log-level"},
}

// simClashes are llm-d-inference-sim's flags whose names the mock or vLLM
// define: they keep that meaning (TestSimFlags_ClashesAreRegisteredByTheMock).
var simClashes = []string{
	"port", "model", "max-num-seqs", "max-loras", "max-cpu-loras", "max-model-len",
	"seed", "block-size", "hash-seed", "data-parallel-size", "data-parallel-rank",
	"enable-sleep-mode", "enable-request-id-headers", "failure-types", "ssl-certfile",
	"ssl-keyfile", "mm-encoder-only", "mm-processor-kwargs", "ec-transfer-config",
	"enforce-eager", "enable-prefix-caching", "tensor-parallel-size", "config",
	"served-model-name", "lora-modules",
}

// simFlagByName indexes simFlagTable.
var simFlagByName = func() map[string]*simFlag {
	m := make(map[string]*simFlag, len(simFlagTable))
	for i := range simFlagTable {
		m[simFlagTable[i].name] = &simFlagTable[i]
	}
	return m
}()

// simFailureTypes are llm-d-inference-sim's failure types, all of which
// are fault kinds here; it draws from all of them when --failure-types is
// not given.
var simFailureTypes = []any{"rate_limit", "invalid_api_key", "context_length", "server_error", "invalid_request", "model_not_found"}

// simValue is the pflag.Value of an llm-d-inference-sim flag: the text,
// checked as the simulator checks it.
type simValue struct {
	flag    *simFlag
	text    string
	negated bool // --no-x (simToggle)
	isSet   bool
	order   int
	counter *int
}

func (v *simValue) Set(text string) error {
	f := v.flag
	switch f.kind {
	case simToggle:
		if text != bareFlag {
			return errors.New("takes no value")
		}
		text = ""
	case simBool:
		if text == bareFlag {
			text = "true"
		}
		if _, err := strconv.ParseBool(text); err != nil {
			return errors.New("expected true or false")
		}
	default:
		if err := checkSimValue(f.kind, text); err != nil {
			return err
		}
		if len(f.choices) > 0 && !slices.Contains(f.choices, text) {
			return fmt.Errorf("expected one of %q", f.choices)
		}
	}
	if !v.isSet {
		*v.counter++
		v.order = *v.counter
	}
	v.text, v.isSet = text, true
	return nil
}

func (v *simValue) String() string { return v.text }
func (v *simValue) Type() string {
	switch v.flag.kind {
	case simDuration:
		return "duration"
	case simInt:
		return "int"
	case simFloat:
		return "float"
	case simBool, simToggle:
		return "bool"
	case simJSON:
		return "json"
	}
	return "string"
}

// checkSimValue checks text as llm-d-inference-sim parses a value of kind.
func checkSimValue(kind simKind, text string) error {
	switch kind {
	case simDuration:
		_, err := parseSimDuration(text)
		return err
	case simInt:
		if _, err := strconv.ParseInt(text, 10, 64); err != nil {
			return errors.New("expected an integer")
		}
	case simFloat:
		if f, err := strconv.ParseFloat(text, 64); err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return errors.New("expected a finite number")
		}
	case simJSON:
		if !json.Valid([]byte(text)) {
			return errors.New("expected JSON")
		}
	}
	return nil
}

// parseSimDuration reads a Go duration. llm-d-inference-sim's integer
// latencies are deprecated (its YAML reads a number as nanoseconds, older
// versions as milliseconds), so a number other than 0 is refused rather
// than guessed.
func parseSimDuration(text string) (time.Duration, error) {
	if text == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(text)
	if err != nil {
		return 0, fmt.Errorf("expected a duration with a unit, e.g. 100ms (llm-d-inference-sim's integer latencies are deprecated)")
	}
	if d < 0 {
		return 0, errors.New("must not be negative")
	}
	return d, nil
}

// registerSimFlags registers, hidden from --help, every llm-d-inference-sim
// flag that fs does not have yet.
func registerSimFlags(fs *pflag.FlagSet) {
	counter := new(int)
	for i := range simFlagTable {
		f := &simFlagTable[i]
		if fs.Lookup(f.name) != nil {
			continue
		}
		usage := "llm-d-inference-sim flag: " + f.maps
		if f.maps == "" {
			usage = "llm-d-inference-sim flag: accepted, no effect (" + f.why + ")"
		}
		v := &simValue{flag: f, counter: counter}
		fs.Var(v, f.name, usage)
		fl := fs.Lookup(f.name)
		fl.Hidden = true
		switch f.kind {
		case simBool:
			fl.NoOptDefVal = bareFlag
		case simToggle:
			fl.NoOptDefVal = bareFlag
			fs.Var(&simNegValue{v}, "no-"+f.name, usage)
			neg := fs.Lookup("no-" + f.name)
			neg.Hidden, neg.NoOptDefVal = true, bareFlag
		}
	}
}

// simNegValue is the --no-x form of a simToggle flag.
type simNegValue struct{ v *simValue }

func (n *simNegValue) Set(text string) error {
	if err := n.v.Set(text); err != nil {
		return err
	}
	n.v.negated = true
	return nil
}
func (n *simNegValue) String() string { return "" }
func (n *simNegValue) Type() string   { return "bool" }

// simSet returns the llm-d-inference-sim flags set on fs by name.
func simSet(fs *pflag.FlagSet) map[string]*simValue {
	set := map[string]*simValue{}
	fs.VisitAll(func(fl *pflag.Flag) {
		if v, ok := fl.Value.(*simValue); ok && v.isSet {
			set[v.flag.name] = v
		}
	})
	return set
}

// simNoEffect returns the no-effect llm-d-inference-sim flags set on fs,
// each as it was written, in command-line order.
func simNoEffect(fs *pflag.FlagSet) []*simValue {
	var out []*simValue
	for _, v := range simSet(fs) {
		if v.flag.maps == "" && v.flag.notYet == "" {
			out = append(out, v)
		}
	}
	sortSimValues(out)
	return out
}

func sortSimValues(vs []*simValue) {
	slices.SortFunc(vs, func(a, b *simValue) int { return a.order - b.order })
}

// describe is the flag as written: "--v 5", "--omni", "--no-omni".
func (v *simValue) describe() string {
	switch {
	case v.flag.kind == simToggle && v.negated:
		return "--no-" + v.flag.name
	case v.flag.kind == simToggle:
		return "--" + v.flag.name
	case v.flag.kind == simJSON:
		return "--" + v.flag.name + " <json>"
	}
	return "--" + v.flag.name + " " + v.text
}

// notYetSimFlags returns one "not supported yet" problem per
// llm-d-inference-sim flag set on fs that needs a capability the mock
// does not have.
func notYetSimFlags(fs *pflag.FlagSet) []string {
	var out []string
	for _, v := range simSet(fs) {
		if v.flag.notYet != "" && v.text != "false" {
			out = append(out, fmt.Sprintf("not supported yet: %s (needs %s)", v.describe(), v.flag.notYet))
		}
	}
	return out
}

// simOverlay maps the llm-d-inference-sim flags set on fs onto the
// project's keys, into out (keyed like FlagOverlay). The mock's own flags
// are applied after it, so they win over a sim flag setting the same key.
func simOverlay(fs *pflag.FlagSet, out map[string]any) {
	set := simSet(fs)
	if len(set) == 0 {
		return
	}
	dur := func(name string) (float64, bool) { // milliseconds
		v, ok := set[name]
		if !ok {
			return 0, false
		}
		d, _ := parseSimDuration(v.text)
		return float64(d) / float64(time.Millisecond), true
	}
	num := func(name string) (json.Number, bool) {
		v, ok := set[name]
		if !ok {
			return "", false
		}
		return json.Number(v.text), true
	}
	boolean := func(name string) (bool, bool) {
		v, ok := set[name]
		if !ok {
			return false, false
		}
		b, _ := strconv.ParseBool(v.text)
		return b, true
	}
	msNumber := func(ms float64) json.Number { return json.Number(strconv.FormatFloat(ms, 'g', -1, 64)) }

	if v, ok := set["mode"]; ok {
		mode := v.text
		if strings.EqualFold(mode, "random") {
			mode = string(ResponseGenerate)
		}
		out["response_mode"] = mode
	}
	simLatency(set, dur, msNumber, out)
	if f, ok := num("time-factor-under-load"); ok {
		out["fixed_load_factor"] = f
	}
	// The simulator times a transfer by kv-cache-transfer-latency when it
	// is set (its constant calculator always), else by the per-token cost.
	calc := ""
	if v, ok := set["latency-calculator"]; ok {
		calc = strings.ToLower(v.text)
	}
	latency, latencySet := dur("kv-cache-transfer-latency")
	if latencySet && calc != "per-token" {
		out["kv_transfer_latency_ms"] = msNumber(latency)
	}
	if ms, ok := dur("kv-cache-transfer-time-per-token"); ok && ms > 0 && (calc == "per-token" || calc == "" && latency == 0) {
		// tokens × 1000 B / (bandwidth × 1e9 B/s) = tokens × per-token time.
		out["kv_bytes_per_token"] = json.Number("1000")
		out["kv_transfer_bandwidth"] = msNumber(1000 / (ms / 1000) / 1e9)
	}
	if n, ok := num("max-request-body-size-mb"); ok {
		mb, _ := n.Int64()
		out["max_request_body_bytes"] = json.Number(strconv.FormatInt(mb<<20, 10))
	}
	if n, ok := num("kv-cache-size"); ok {
		out["num_gpu_blocks"] = n
	}
	if n, ok := num("default-embedding-dimensions"); ok {
		out["embedding_dim"] = n
	}
	if ms, ok := dur("startup-duration"); ok {
		out["startup_time"] = msNumber(ms / 1000)
	}
	if n, ok := num("failure-injection-rate"); ok {
		pct, _ := strconv.ParseFloat(n.String(), 64)
		out["failure_rate"] = msNumber(pct / 100)
		if f := fs.Lookup("failure-types"); pct > 0 && (f == nil || !f.Changed) {
			out["failure_types"] = append([]any(nil), simFailureTypes...)
		}
	}
	simKVEvents(set, num, boolean, out)
	// The simulator serves its --lora-modules without an --enable-lora,
	// which vLLM requires: a source that speaks the simulator's flags gets
	// its adapters served.
	if lm, el := fs.Lookup("lora-modules"), fs.Lookup("enable-lora"); lm != nil && lm.Changed && el != nil && !el.Changed {
		out["enable_lora"] = true
	}
}

// simLatency maps the latency flags as llm-d-inference-sim's calculators
// read them (pkg/llm-d-inference-sim/latencies.go): "constant" uses
// time-to-first-token, "per-token" prefill-overhead + prefill-time-per-token
// × uncached prompt tokens, and the default ("") the constant one when
// time-to-first-token or its deviation is set, else the per-token one.
// inter-token-latency is every calculator's decode time. A sim whose
// latencies are not given answers at once, so the terms not given are 0.
func simLatency(set map[string]*simValue, dur func(string) (float64, bool), ms func(float64) json.Number, out map[string]any) {
	names := []string{"time-to-first-token", "time-to-first-token-std-dev", "prefill-overhead",
		"prefill-time-per-token", "prefill-time-std-dev", "inter-token-latency",
		"inter-token-latency-std-dev", "latency-calculator"}
	given := false
	for _, n := range names {
		if _, ok := set[n]; ok {
			given = true
		}
	}
	if !given {
		return
	}
	ttft, _ := dur("time-to-first-token")
	ttftStd, _ := dur("time-to-first-token-std-dev")
	calc := ""
	if v, ok := set["latency-calculator"]; ok {
		calc = strings.ToLower(v.text)
	}
	perToken := calc == "per-token" || calc == "" && ttft == 0 && ttftStd == 0
	out["timing_model"] = "fixed"
	itl, _ := dur("inter-token-latency")
	itlStd, _ := dur("inter-token-latency-std-dev")
	out["fixed_decode_ms"] = ms(itl)
	out["fixed_decode_std_ms"] = ms(itlStd)
	if perToken {
		overhead, _ := dur("prefill-overhead")
		perTok, _ := dur("prefill-time-per-token")
		std, _ := dur("prefill-time-std-dev")
		out["fixed_prefill_ms"] = ms(overhead)
		out["fixed_prefill_ms_per_token"] = ms(perTok)
		out["fixed_prefill_std_ms"] = ms(std)
		return
	}
	out["fixed_prefill_ms"] = ms(ttft)
	out["fixed_prefill_ms_per_token"] = ms(0)
	out["fixed_prefill_std_ms"] = ms(ttftStd)
}

// simKVEvents maps the KV cache flags: --enable-kvcache publishes KV events
// to --zmq-endpoint (the simulator's default tcp://localhost:5557, which a
// publisher connects to, as vLLM connects to an endpoint without a
// wildcard host).
func simKVEvents(set map[string]*simValue, num func(string) (json.Number, bool), boolean func(string) (bool, bool), out map[string]any) {
	ev := map[string]any{}
	if on, ok := boolean("enable-kvcache"); ok {
		ev["enable_kv_cache_events"] = on
		if on {
			ev["endpoint"] = "tcp://localhost:5557"
		}
	}
	if v, ok := set["zmq-endpoint"]; ok {
		ev["endpoint"] = v.text
	}
	if v, ok := set["kv-events-replay-endpoint"]; ok {
		ev["replay_endpoint"] = v.text
	}
	if n, ok := num("kv-events-replay-queue-size"); ok {
		ev["buffer_steps"] = n
	}
	if len(ev) > 0 {
		out["kv_events_config"] = ev
	}
	if m, ok := boolean("use-vllm-map-event-format"); ok {
		out["kv_events_encoding"] = string(KVEventsArray)
		if m {
			out["kv_events_encoding"] = string(KVEventsMap)
		}
	}
}
