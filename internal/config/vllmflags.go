package config

// This file lists every flag of `vllm serve` as vLLM 0.17.1 registers it
// (its argparse parser: the frontend arguments of
// vllm/entrypoints/openai/cli_args.py, the engine arguments of
// vllm/engine/arg_utils.py EngineArgs.add_cli_args with their types taken
// from the config dataclasses in vllm/config/*.py, and the serve options
// --headless, --api-server-count, --config). docs/vllm-flags.md explains
// how the list was taken and what the mock does with each flag.
//
// The table is hand-written from that parser. Flags that flagTable also
// defines are the mock's own: they keep their meaning and this table only
// records vLLM's spelling of them. Every other flag is registered as
// "accepted, no effect": its value is checked the way vLLM's argparse would
// check it, and the server names it once at startup. A flag with notYet set
// belongs to a capability the mock will build; it is refused at startup.

// vllmKind says how vLLM's argparse reads a flag's value.
type vllmKind int

const (
	vllmStoreTrue     vllmKind = iota // action="store_true": --x, no value
	vllmBoolOptional                  // BooleanOptionalAction: --x or --no-x, no value
	vllmString                        // any text
	vllmInt                           // Python int()
	vllmFloat                         // Python float()
	vllmHumanInt                      // human_readable_int: 25.6k, 1K, 2M or a plain int
	vllmChoice                        // one of choices
	vllmIntChoice                     // an int that must be one of choices
	vllmJSON                          // json.loads: any JSON text
	vllmJSONObject                    // a config dataclass read from JSON: a JSON object
	vllmJSONOrString                  // JSON when the text looks like {...}, any text otherwise
	vllmList                          // nargs="+": one or more values of kind elem
	vllmAppend                        // action="append": repeatable text
	vllmOptionalValue                 // nargs="?": --x alone, or --x VALUE
)

// takesValue reports whether the flag reads a value from the command line.
func (k vllmKind) takesValue() bool {
	return k != vllmStoreTrue && k != vllmBoolOptional
}

// vllmFlag is one `vllm serve` flag.
type vllmFlag struct {
	name    string   // long name without "--"
	kind    vllmKind // how the value is read
	elem    vllmKind // element kind of a vllmList (vllmString when zero)
	choices []string // allowed values of vllmChoice, vllmIntChoice and list elements
	// shortNames are vLLM's single-dash spellings without the "-" ("tp" for -tp).
	shortNames []string
	// nullable: the value "None" (or an empty value) means unset, as with
	// vLLM's optional_type.
	nullable bool
	// notYet names the capability the flag needs when the mock does not
	// have it yet: starting with the flag set fails with "not supported yet".
	notYet string
	// secret: the value is a credential and never printed.
	secret bool
}

// Capabilities that vLLM flags ask for and the mock does not have yet.
const (
	capTLS = "TLS (HTTPS serving)"
	capUDS = "serving on a Unix domain socket"
)

// Shorthands that keep the table one entry per line.
func vStoreTrue(name string) vllmFlag { return vllmFlag{name: name, kind: vllmStoreTrue} }
func vBool(name string) vllmFlag      { return vllmFlag{name: name, kind: vllmBoolOptional} }
func vString(name string) vllmFlag    { return vllmFlag{name: name, kind: vllmString} }
func vInt(name string) vllmFlag       { return vllmFlag{name: name, kind: vllmInt} }
func vFloat(name string) vllmFlag     { return vllmFlag{name: name, kind: vllmFloat} }
func vJSON(name string) vllmFlag      { return vllmFlag{name: name, kind: vllmJSON} }
func vObject(name string) vllmFlag    { return vllmFlag{name: name, kind: vllmJSONObject} }
func vList(name string) vllmFlag      { return vllmFlag{name: name, kind: vllmList, elem: vllmString} }
func vChoice(name string, choices ...string) vllmFlag {
	return vllmFlag{name: name, kind: vllmChoice, choices: choices}
}

func (f vllmFlag) short(names ...string) vllmFlag { f.shortNames = names; return f }
func (f vllmFlag) orNone() vllmFlag               { f.nullable = true; return f }
func (f vllmFlag) needs(capability string) vllmFlag {
	f.notYet = capability
	return f
}

// vllmFlagTable is the `vllm serve` flag set of vLLM 0.17.1, grouped as
// `vllm serve --help` groups it.
var vllmFlagTable = []vllmFlag{
	// options (the serve command itself).
	vStoreTrue("aggregate-engine-logging"),
	vInt("api-server-count").short("asc"),
	vString("config"),
	vStoreTrue("disable-log-stats"),
	vBool("enable-log-requests"),
	vBool("fail-on-environ-validation"),
	vStoreTrue("headless"),

	// Frontend.
	vBool("allow-credentials"),
	vJSON("allowed-headers"),
	vJSON("allowed-methods"),
	vJSON("allowed-origins"),
	vList("api-key").orNone(),
	vString("chat-template").orNone(),
	vChoice("chat-template-content-format", "auto", "openai", "string"),
	vJSON("default-chat-template-kwargs"),
	vString("disable-access-log-for-endpoints"),
	vBool("disable-fastapi-docs"),
	vBool("disable-frontend-multiprocessing"),
	vBool("disable-uvicorn-access-log"),
	vBool("enable-auto-tool-choice"),
	vBool("enable-force-include-usage"),
	vBool("enable-log-deltas"),
	vBool("enable-log-outputs"),
	vBool("enable-offline-docs"),
	vBool("enable-prompt-tokens-details"),
	vBool("enable-request-id-headers"),
	vBool("enable-server-load-tracking"),
	vBool("enable-ssl-refresh"),
	vBool("enable-tokenizer-info-endpoint"),
	vBool("exclude-tools-when-tool-choice-none"),
	vInt("h11-max-header-count"),
	vInt("h11-max-incomplete-event-size"),
	vString("host").orNone(),
	vString("log-config-file").orNone(),
	vBool("log-error-stack"),
	vList("lora-modules").orNone(),
	vInt("max-log-len").orNone(),
	{name: "middleware", kind: vllmAppend},
	vInt("port"),
	vString("response-role"),
	vBool("return-tokens-as-token-ids"),
	vString("root-path").orNone(),
	vString("ssl-ca-certs").orNone(),
	vInt("ssl-cert-reqs"),
	vString("ssl-certfile").orNone().needs(capTLS),
	vString("ssl-ciphers").orNone(),
	vString("ssl-keyfile").orNone().needs(capTLS),
	vBool("tokens-only"),
	vString("tool-call-parser").orNone(),
	vString("tool-parser-plugin"),
	vString("tool-server").orNone(),
	vBool("trust-request-chat-template"),
	vString("uds").orNone().needs(capUDS),
	vBool("use-gpu-for-pooling-score"),
	vChoice("uvicorn-log-level", "critical", "debug", "error", "info", "trace", "warning"),

	// ModelConfig.
	vBool("allow-deprecated-quantization"),
	vString("allowed-local-media-path"),
	vList("allowed-media-domains").orNone(),
	vString("code-revision").orNone(),
	vString("config-format"),
	vChoice("convert", "auto", "classify", "embed", "none"),
	vBool("disable-cascade-attn"),
	vBool("disable-sliding-window"),
	vChoice("dtype", "auto", "bfloat16", "float", "float16", "float32", "half"),
	vBool("enable-prompt-embeds"),
	vBool("enable-return-routed-experts"),
	vBool("enable-sleep-mode"),
	vBool("enforce-eager"),
	vString("generation-config"),
	vString("hf-config-path").orNone(),
	{name: "hf-overrides", kind: vllmJSONOrString},
	{name: "hf-token", kind: vllmOptionalValue, secret: true},
	vString("io-processor-plugin").orNone(),
	vList("logits-processors").orNone(),
	vChoice("logprobs-mode", "processed_logits", "processed_logprobs", "raw_logits", "raw_logprobs"),
	vInt("max-logprobs"),
	{name: "max-model-len", kind: vllmHumanInt, nullable: true},
	vString("model"),
	vString("model-impl"),
	vString("override-attention-dtype").orNone(),
	vJSON("override-generation-config"),
	vObject("pooler-config").orNone(),
	vString("quantization").short("q").orNone(),
	vString("revision").orNone(),
	vChoice("runner", "auto", "draft", "generate", "pooling"),
	vInt("seed"),
	vList("served-model-name").orNone(),
	vBool("skip-tokenizer-init"),
	vString("tokenizer").orNone(),
	vString("tokenizer-mode"),
	vString("tokenizer-revision").orNone(),
	vBool("trust-remote-code"),

	// LoadConfig.
	vString("download-dir").orNone(),
	vList("ignore-patterns"),
	vString("load-format"),
	vJSON("model-loader-extra-config"),
	{name: "pt-load-map-location", kind: vllmJSONOrString},
	vString("safetensors-load-strategy"),
	vBool("use-tqdm-on-load"),

	// AttentionConfig.
	vString("attention-backend").orNone(),

	// StructuredOutputsConfig.
	vString("reasoning-parser"),
	vString("reasoning-parser-plugin"),

	// ParallelConfig.
	vChoice("all2all-backend", "allgather_reducescatter", "deepep_high_throughput", "deepep_low_latency",
		"flashinfer_all2allv", "mori", "naive", "pplx"),
	vInt("cp-kv-cache-interleave-size"),
	vString("data-parallel-address").short("dpa"),
	vString("data-parallel-backend").short("dpb"),
	vBool("data-parallel-external-lb").short("dpe"),
	vBool("data-parallel-hybrid-lb").short("dph"),
	vInt("data-parallel-rank").short("dpn"),
	vInt("data-parallel-rpc-port").short("dpp"),
	vInt("data-parallel-size").short("dp"),
	vInt("data-parallel-size-local").short("dpl"),
	vInt("data-parallel-start-rank").short("dpr"),
	vInt("dbo-decode-token-threshold"),
	vInt("dbo-prefill-token-threshold"),
	vInt("dcp-kv-cache-interleave-size"),
	vInt("decode-context-parallel-size").short("dcp"),
	vBool("disable-custom-all-reduce"),
	vBool("disable-nccl-for-dp-synchronization"),
	vString("distributed-executor-backend").orNone(),
	vBool("enable-dbo"),
	vBool("enable-elastic-ep"),
	vBool("enable-eplb"),
	vBool("enable-expert-parallel").short("ep"),
	vObject("eplb-config"),
	vChoice("expert-placement-strategy", "linear", "round_robin"),
	vString("master-addr"),
	vInt("master-port"),
	vInt("max-parallel-loading-workers").orNone(),
	vInt("nnodes").short("n"),
	vInt("node-rank").short("r"),
	vInt("pipeline-parallel-size").short("pp"),
	vInt("prefill-context-parallel-size").short("pcp"),
	vBool("ray-workers-use-nsight"),
	vInt("tensor-parallel-size").short("tp"),
	vInt("ubatch-size"),
	vString("worker-cls"),
	vString("worker-extension-cls"),

	// CacheConfig.
	{name: "block-size", kind: vllmIntChoice, choices: []string{"1", "8", "16", "32", "64", "128", "256"}},
	vBool("calculate-kv-scales"),
	vBool("enable-prefix-caching"),
	vFloat("gpu-memory-utilization"),
	vChoice("kv-cache-dtype", "auto", "bfloat16", "fp8", "fp8_ds_mla", "fp8_e4m3", "fp8_e5m2", "fp8_inc"),
	{name: "kv-cache-memory-bytes", kind: vllmHumanInt, nullable: true},
	vChoice("kv-offloading-backend", "lmcache", "native"),
	vFloat("kv-offloading-size").orNone(),
	vBool("kv-sharing-fast-prefill"),
	vInt("mamba-block-size").orNone(),
	vChoice("mamba-cache-dtype", "auto", "float16", "float32"),
	vChoice("mamba-cache-mode", "align", "all", "none"),
	vChoice("mamba-ssm-cache-dtype", "auto", "float16", "float32"),
	vInt("num-gpu-blocks-override").orNone(),
	vChoice("prefix-caching-hash-algo", "sha256", "sha256_cbor", "xxhash", "xxhash_cbor"),
	vFloat("swap-space"),

	// OffloadConfig.
	vFloat("cpu-offload-gb"),
	vList("cpu-offload-params"),
	vChoice("offload-backend", "auto", "prefetch", "uva"),
	vInt("offload-group-size"),
	vInt("offload-num-in-group"),
	vList("offload-params"),
	vInt("offload-prefetch-step"),

	// MultiModalConfig.
	vBool("enable-mm-embeds"),
	vBool("interleave-mm-strings"),
	vBool("language-model-only"),
	vJSON("limit-mm-per-prompt"),
	vJSON("media-io-kwargs"),
	vString("mm-encoder-attn-backend").orNone(),
	vBool("mm-encoder-only"),
	vChoice("mm-encoder-tp-mode", "data", "weights"),
	vFloat("mm-processor-cache-gb"),
	vChoice("mm-processor-cache-type", "lru", "shm"),
	vJSON("mm-processor-kwargs").orNone(),
	vInt("mm-shm-cache-max-object-size-mb"),
	vBool("skip-mm-profiling"),
	vFloat("video-pruning-rate").orNone(),

	// LoRAConfig.
	vJSON("default-mm-loras").orNone(),
	vBool("enable-lora"),
	vBool("enable-tower-connector-lora"),
	vBool("fully-sharded-loras"),
	vChoice("lora-dtype", "auto", "bfloat16", "float16"),
	vInt("max-cpu-loras").orNone(),
	{name: "max-lora-rank", kind: vllmIntChoice, choices: []string{"1", "8", "16", "32", "64", "128", "256", "320", "512"}},
	vInt("max-loras"),
	vBool("specialize-active-lora"),

	// ObservabilityConfig. --collect-detailed-traces also takes two
	// modules joined by a comma.
	{name: "collect-detailed-traces", kind: vllmList, elem: vllmChoice, choices: []string{
		"all", "model", "worker", "None",
		"model,worker", "model,all", "worker,model", "worker,all", "all,model", "all,worker"}},
	vBool("cudagraph-metrics"),
	vBool("enable-layerwise-nvtx-tracing"),
	vBool("enable-logging-iteration-details"),
	vBool("enable-mfu-metrics"),
	vBool("kv-cache-metrics"),
	vFloat("kv-cache-metrics-sample"),
	vString("otlp-traces-endpoint").orNone(),
	vString("show-hidden-metrics-for-version").orNone(),

	// SchedulerConfig.
	vBool("async-scheduling"),
	vBool("disable-chunked-mm-input"),
	vBool("disable-hybrid-kv-cache-manager"),
	vBool("enable-chunked-prefill"),
	vInt("long-prefill-token-threshold"),
	vInt("max-long-partial-prefills"),
	{name: "max-num-batched-tokens", kind: vllmHumanInt, nullable: true},
	vInt("max-num-partial-prefills"),
	vInt("max-num-seqs"),
	vString("scheduler-cls").orNone(),
	vChoice("scheduling-policy", "fcfs", "priority"),
	vInt("stream-interval"),

	// CompilationConfig.
	{name: "cudagraph-capture-sizes", kind: vllmList, elem: vllmInt, nullable: true},
	vInt("max-cudagraph-capture-size"),

	// KernelConfig.
	vBool("enable-flashinfer-autotune"),
	vChoice("moe-backend", "aiter", "auto", "cutlass", "deep_gemm", "flashinfer_cutedsl",
		"flashinfer_cutlass", "flashinfer_trtllm", "marlin", "triton"),

	// VllmConfig. -O3, -O=3 and -O 3 mean --optimization-level 3 (RewriteArgs).
	vJSON("additional-config"),
	vObject("attention-config").short("ac"),
	vObject("compilation-config").short("cc"),
	vObject("ec-transfer-config").orNone(),
	vObject("kernel-config"),
	vObject("kv-events-config").orNone(),
	vObject("kv-transfer-config").orNone(),
	vChoice("optimization-level", "0", "1", "2", "3"),
	vChoice("performance-mode", "balanced", "interactivity", "throughput"),
	vObject("profiler-config"),
	vJSON("speculative-config").orNone(),
	vObject("structured-outputs-config"),
	vObject("weight-transfer-config").orNone(),
}

// vllmFlagByName indexes vllmFlagTable by long name.
var vllmFlagByName = func() map[string]*vllmFlag {
	m := make(map[string]*vllmFlag, len(vllmFlagTable))
	for i := range vllmFlagTable {
		m[vllmFlagTable[i].name] = &vllmFlagTable[i]
	}
	return m
}()

// vllmShortNames maps vLLM's single-dash spellings ("tp") to long names.
var vllmShortNames = func() map[string]string {
	m := map[string]string{}
	for _, f := range vllmFlagTable {
		for _, s := range f.shortNames {
			m[s] = f.name
		}
	}
	return m
}()
