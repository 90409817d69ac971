package config

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// flagKind says how a flag's text becomes a value of the overlay map. Flags
// never validate by themselves: their values go through the same decoder and
// validation as configuration files.
type flagKind int

const (
	flagString flagKind = iota // string (enums are normalised by the decoder)
	flagInt                    // integer text; HR sizes ("32k") where the key allows them
	flagFloat                  // number text; "inf" where the key allows it
	flagBool                   // --x, --x=true|false (and --no-x when negatable)
	flagList                   // repeatable string list
	flagJSON                   // a JSON object given as text
)

// flagSpec maps one kebab-case CLI flag to its JSON key.
type flagSpec struct {
	name      string // canonical flag name, without "--"
	key       string // JSON path, dotted for nested keys ("sglang.page_size")
	kind      flagKind
	aliases   []string // other accepted names
	negatable bool     // also register --no-<name>
	split     bool     // list values may be comma-separated
	usage     string
	// notYet, when set, names the capability the key belongs to: the key
	// is accepted by the parser (so the user gets a precise message rather
	// than "unknown flag") but starting with it set fails with
	// "not supported yet", and the README does not list it.
	notYet string
	// group is the --help section the flag is listed in; every flag has
	// one (TestFlagTableGroups).
	group FlagGroup
	// scope says which subcommands the flag means something to: replay
	// hides the others from its --help and warns when they are given.
	scope Scope
}

// flagTable lists every configuration flag, grouped like Config's fields.
// The README's flag table is generated from it (TestREADME_FlagTable).
var flagTable = []flagSpec{
	// Server and API.
	{name: "model", key: "model", kind: flagString, usage: "model name reported as root in /v1/models (also: positional serve [MODEL])", group: GroupServer, scope: ScopeAll},
	{name: "served-model-name", key: "served_model_name", kind: flagList, split: true, usage: "served model names: several after the flag, repeated, or comma-separated; responses and metrics use the first (default [model])", group: GroupServer, scope: ScopeServer},
	{name: "tokenizer", key: "tokenizer", kind: flagString, usage: "Hugging Face tokenizer directory (tokenizer.json, tokenizer_config.json); default --model when it is one, else the built-in tokenizer", group: GroupTokenizer, scope: ScopeServer},
	{name: "chat-template", key: "chat_template", kind: flagString, usage: "chat template file or inline Jinja text (default: the tokenizer's own; ChatML with the built-in tokenizer)", group: GroupTokenizer, scope: ScopeServer},
	{name: "host", key: "host", kind: flagString, usage: "HTTP bind address", group: GroupServer, scope: ScopeServer},
	{name: "port", key: "port", kind: flagInt, usage: "HTTP port (0 = OS-assigned)", group: GroupServer, scope: ScopeServer},
	{name: "grpc-port", key: "grpc_port", kind: flagInt, usage: "gRPC port beside HTTP: vLLM's VllmEngine or SGLang's scheduler service by engine type, with reflection (0 = OS-assigned, -1 = none)", group: GroupServer, scope: ScopeServer},
	{name: "api-key", key: "api_key", kind: flagList, usage: "API keys accepted as Bearer token on /v1/*: several after the flag, or repeated (default $VLLM_API_KEY)", group: GroupServer, scope: ScopeServer},
	{name: "seed", key: "seed", kind: flagInt, usage: "server seed for output tokens", group: GroupServer, scope: ScopeAll},
	{name: "output-len-mode", key: "output_len_mode", kind: flagString, usage: "output length mode: natural (answers end at a seeded log-normal length, capped by max_tokens) | max (exactly max_tokens, for load tests) | random (uniform natural length up to 2 × --natural-output-len)", group: GroupServer, scope: ScopeServer},
	{name: "natural-output-len", key: "natural_output_len", kind: flagInt, usage: "median length in tokens of answers that end naturally (mean for --output-len-mode random)", group: GroupServer, scope: ScopeServer},
	{name: "natural-output-len-sigma", key: "natural_output_len_sigma", kind: flagFloat, usage: "log-normal shape σ of natural answer lengths (0-4]; p90 = median × e^(1.2816σ)", group: GroupServer, scope: ScopeServer},
	{name: "response-mode", key: "response_mode", kind: flagString, usage: "answers: generate (planned tokens) | echo (the prompt, or a chat's last message; llm-d-inference-sim's --mode echo)", group: GroupServer, scope: ScopeServer},
	{name: "embedding-dim", key: "embedding_dim", kind: flagInt, usage: "length of /v1/embeddings vectors (requests may ask for fewer with dimensions)", group: GroupServer, scope: ScopeServer},
	{name: "runner", key: "runner", kind: flagString, usage: "model runner: auto (generation endpoints and /v1/embeddings) | generate | pooling (embeddings, /pooling, /score, /rerank, /classify; no generation) (docs/pooling.md)", group: GroupServer, scope: ScopeServer},
	{name: "convert", key: "convert", kind: flagString, usage: "pooling task of --runner pooling: auto (= embed) | embed (bi-encoder) | classify (classifier; a cross-encoder with --num-labels 1) | none", group: GroupServer, scope: ScopeServer},
	{name: "num-labels", key: "num_labels", kind: flagInt, usage: "classifier labels of a --convert classify model (its config's num_labels; 1 = a cross-encoder, which also serves /score and /rerank)", group: GroupServer, scope: ScopeServer},
	{name: "reasoning-field", key: "reasoning_field", kind: flagString, usage: "reasoning text field: reasoning | reasoning_content", group: GroupServer, scope: ScopeServer},
	{name: "enable-request-id-headers", key: "enable_request_id_headers", kind: flagBool, negatable: true, usage: "echo X-Request-Id in responses", group: GroupVLLM, scope: ScopeServer},
	{name: "enable-prompt-tokens-details", key: "enable_prompt_tokens_details", kind: flagBool, negatable: true, usage: "add usage.prompt_tokens_details.cached_tokens", group: GroupVLLM, scope: ScopeServer},
	{name: "trust-request-chat-template", key: "trust_request_chat_template", kind: flagBool, negatable: true, usage: "render a chat request's own chat_template (vLLM's flag; without it such a request is refused)", group: GroupVLLM, scope: ScopeServer},
	{name: "enable-force-include-usage", key: "enable_force_include_usage", kind: flagBool, negatable: true, usage: "streaming responses always end with a usage chunk", group: GroupVLLM, scope: ScopeServer},
	{name: "max-request-body-bytes", key: "max_request_body_bytes", kind: flagInt, usage: "maximum request body size (accepts 32M etc.)", group: GroupServer, scope: ScopeServer},
	{name: "worker-id", key: "worker_id", kind: flagString, usage: "worker identity in FPM and kv_transfer_params (default <hostname>:<port>)", group: GroupServer, scope: ScopeServer},
	{name: "startup-time", key: "startup_time", kind: flagFloat, usage: "seconds before the engine serves", group: GroupServer, scope: ScopeServer},
	{name: "metrics-family", key: "metrics_family", kind: flagString, usage: "metrics family: auto | vllm | sglang | both", group: GroupObservability, scope: ScopeServer},
	{name: "deprecated-metrics", key: "deprecated_metrics", kind: flagBool, negatable: true, usage: "export deprecated vLLM metric names", group: GroupObservability, scope: ScopeServer},
	{name: "log-level", key: "log_level", kind: flagString, usage: "log level: debug | info | warn | error", group: GroupObservability, scope: ScopeServer},
	{name: "enable-auto-tool-choice", key: "enable_auto_tool_choice", kind: flagBool, negatable: true, usage: `allow tool_choice "auto" (needs --tool-call-parser), as vLLM`, group: GroupTools, scope: ScopeServer},
	{name: "tool-call-parser", key: "tool_call_parser", kind: flagString, usage: "vLLM tool call parser name (hermes, llama3_json, mistral, ...): the text format of generated calls", group: GroupTools, scope: ScopeServer},
	{name: "tool-call-probability", key: "tool_call_probability", kind: flagFloat, usage: `probability (0-1, seeded) that a tool_choice "auto" answer calls tools (a turn that does not follow a tool result)`, group: GroupTools, scope: ScopeServer},
	{name: "tool-call-after-result-probability", key: "tool_call_after_result_probability", kind: flagFloat, usage: `probability (0-1, seeded) that a tool_choice "auto" answer right after a tool result calls tools again; after k consecutive tool rounds, its k-th power`, group: GroupTools, scope: ScopeServer},
	{name: "exclude-tools-when-tool-choice-none", key: "exclude_tools_when_tool_choice_none", kind: flagBool, negatable: true, usage: `leave tools out of the prompt when tool_choice is "none"`, group: GroupTools, scope: ScopeServer},
	{name: "limit-mm-per-prompt", key: "limit_mm_per_prompt", kind: flagJSON, usage: `most multimodal items of a modality per prompt, as vLLM: {"image":2,"video":0} or {"video":{"count":1}} (default 999 each; a modality the model has no encoder for: 0)`, group: GroupServer, scope: ScopeServer},
	{name: "allowed-local-media-path", key: "allowed_local_media_path", kind: flagString, usage: "directory whose files file:// media URLs may name (vLLM's flag; default: none)", group: GroupServer, scope: ScopeServer},
	{name: "allowed-media-domains", key: "allowed_media_domains", kind: flagList, split: true, usage: "hosts http(s) media URLs may name (vLLM's flag; default: any); the mock fetches nothing either way (--mm-unfetched-media)", group: GroupServer, scope: ScopeServer},
	{name: "enable-mm-embeds", key: "enable_mm_embeds", kind: flagBool, negatable: true, usage: "accept image_embeds and audio_embeds content parts (a torch.save tensor; its rows are the placeholder tokens; Qwen-VL's dict form with image_grid_thw), as vLLM; without it they are refused with vLLM's message", group: GroupServer, scope: ScopeServer},
	{name: "interleave-mm-strings", key: "interleave_mm_strings", kind: flagBool, negatable: true, usage: "in a string-content chat template's prompt, put each multimodal item's placeholder where its part stands among the text parts, as vLLM (default: all of a message's placeholders before its text)", group: GroupServer, scope: ScopeServer},
	{name: "mm-processor-cache-gb", key: "mm_processor_cache_gb", kind: flagFloat, usage: "multimodal processor cache in GiB: repeated items skip probing and hashing, counted by vllm:mm_cache_queries/hits (0 = off)", group: GroupServer, scope: ScopeServer},
	{name: "mm-processor-model", key: "mm_processor_model", kind: flagString, usage: `model id whose multimodal processor applies when --model is not a multimodal model the mock knows ("none": text-only, media refused as vLLM refuses them)`, group: GroupServer, scope: ScopeServer},
	{name: "max-media-item-bytes", key: "max_media_item_bytes", kind: flagInt, usage: "largest decoded multimodal item (data URL payload, local file), accepts 20M etc.; larger is a 400", group: GroupServer, scope: ScopeServer},
	{name: "mm-processor-kwargs", key: "mm_processor_kwargs", kind: flagJSON, usage: `the multimodal processor's settings as vLLM's flag: {"max_pixels":401408} (Qwen-VL's min/max_pixels, images_kwargs, size; Qwen3-VL's video fps; InternVL's min/max_dynamic_patch; Gemma 3's do_pan_and_scan and pan_and_scan_*); a request's mm_processor_kwargs merge over them; a value the processor refuses fails at startup ("None": unset)`, group: GroupServer, scope: ScopeServer},
	{name: "mm-unfetched-media", key: "mm_unfetched_media", kind: flagJSON, usage: `size of an http(s) media item, which the mock does not fetch: {"image_width":1024,"image_height":1024,"audio_seconds":10,"video_frames":16}`, group: GroupServer, scope: ScopeServer},

	// Engine and scheduler.
	{name: "engine-type", key: "engine_type", kind: flagString, usage: "engine type: vllm | sglang | trtllm", group: GroupEngine, scope: ScopeAll},
	{name: "num-gpu-blocks-override", key: "num_gpu_blocks", kind: flagInt, aliases: []string{"num-gpu-blocks"}, usage: "KV blocks per DP rank (alias --num-gpu-blocks)", group: GroupKVCache, scope: ScopeAll},
	{name: "block-size", key: "block_size", kind: flagInt, usage: "tokens per KV block (0 = per engine: vllm 64, sglang 1, trtllm 32)", group: GroupKVCache, scope: ScopeAll},
	{name: "max-model-len", key: "max_model_len", kind: flagInt, usage: "maximum sequence length (accepts 32k = 32000, 32K = 32768)", group: GroupEngine, scope: ScopeAll},
	{name: "max-num-seqs", key: "max_num_seqs", kind: flagInt, usage: "maximum running sequences per DP rank", group: GroupEngine, scope: ScopeAll},
	{name: "max-num-batched-tokens", key: "max_num_batched_tokens", kind: flagInt, usage: "token budget per pass (accepts 8k, 8K)", group: GroupEngine, scope: ScopeAll},
	{name: "disable-chunked-mm-input", key: "disable_chunked_mm_input", kind: flagBool, negatable: true, usage: "never split a multimodal item's placeholder tokens over two prefill chunks (vLLM's flag)", group: GroupEngine, scope: ScopeServer},
	{name: "mm-encoder-tp-mode", key: "mm_encoder_tp_mode", kind: flagString, usage: "multimodal encoder over the TP GPUs: weights (sharded) | data (each GPU encodes its share of the items), as vLLM", group: GroupTiming, scope: ScopeServer},
	{name: "mm-encoder-ms-per-token", key: "mm_encoder_ms_per_token", kind: flagFloat, usage: "encoder time per multimodal placeholder token, added to the pass that encodes an item (with --hardware: the tower priced operator by operator from the measured kernel tables instead)", group: GroupTiming, scope: ScopeServer},
	{name: "enable-prefix-caching", key: "enable_prefix_caching", kind: flagBool, negatable: true, usage: "enable prefix caching", group: GroupKVCache, scope: ScopeAll},
	{name: "enable-chunked-prefill", key: "enable_chunked_prefill", kind: flagBool, negatable: true, usage: "enable chunked prefill", group: GroupEngine, scope: ScopeAll},
	{name: "preemption-mode", key: "preemption_mode", kind: flagString, usage: "preemption victim: lifo | fifo", group: GroupEngine, scope: ScopeAll},
	{name: "scheduling-policy", key: "scheduling_policy", kind: flagString, usage: "scheduling policy: fcfs | priority", group: GroupEngine, scope: ScopeAll},
	{name: "prefix-caching-hash-algo", key: "prefix_caching_hash_algo", kind: flagString, usage: "block hash algorithm: xxh3 | sha256_cbor", group: GroupKVCache, scope: ScopeAll},
	{name: "hash-seed", key: "hash_seed", kind: flagString, usage: "sha256_cbor hash seed (default $PYTHONHASHSEED, else \"0\")", group: GroupKVCache, scope: ScopeAll},

	// SGLang and TensorRT-LLM.
	{name: "sglang-schedule-policy", key: "sglang.schedule_policy", kind: flagString, aliases: []string{"schedule-policy"}, usage: "SGLang schedule policy: fifo | lpm | dfs-weight | lof | random (alias --schedule-policy)", group: GroupEngine, scope: ScopeAll},
	{name: "sglang-page-size", key: "sglang.page_size", kind: flagInt, aliases: []string{"page-size"}, usage: "SGLang page size (default block_size; alias --page-size)", group: GroupKVCache, scope: ScopeAll},
	{name: "sglang-max-prefill-tokens", key: "sglang.max_prefill_tokens", kind: flagInt, aliases: []string{"max-prefill-tokens"}, usage: "SGLang prefill token budget per pass (alias --max-prefill-tokens)", group: GroupEngine, scope: ScopeAll},
	{name: "sglang-chunked-prefill-size", key: "sglang.chunked_prefill_size", kind: flagInt, aliases: []string{"chunked-prefill-size"}, usage: "SGLang chunked prefill size (alias --chunked-prefill-size)", group: GroupEngine, scope: ScopeAll},
	{name: "sglang-max-running-requests", key: "sglang.max_running_requests", kind: flagInt, aliases: []string{"max-running-requests"}, usage: "SGLang running batch limit (0 = max_num_seqs, or with --hardware and no --max-num-seqs SGLang's own limit from the pool; alias --max-running-requests)", group: GroupEngine, scope: ScopeAll},
	{name: "sglang-clip-max-new-tokens", key: "sglang.clip_max_new_tokens", kind: flagInt, usage: "SGLang clip of max_new_tokens for admission", group: GroupEngine, scope: ScopeAll},
	{name: "sglang-schedule-conservativeness", key: "sglang.schedule_conservativeness", kind: flagFloat, aliases: []string{"schedule-conservativeness"}, usage: "SGLang schedule conservativeness (0 < x <= 10; alias --schedule-conservativeness)", group: GroupEngine, scope: ScopeAll},
	{name: "eviction-backend", key: "eviction_backend", kind: flagString, usage: "vllm/trtllm KV pool eviction: lru | lineage | multi_lru", group: GroupKVCache, scope: ScopeAll},
	{name: "trtllm-capacity-scheduler-policy", key: "trtllm.capacity_scheduler_policy", kind: flagString, usage: "TensorRT-LLM capacity scheduler policy (engine-type trtllm): guaranteed_no_evict | max_utilization | static_batch", group: GroupEngine, scope: ScopeAll},

	// Timing.
	{name: "timing-model", key: "timing_model", kind: flagString, usage: "timing model: polynomial | fixed | interpolated", group: GroupTiming, scope: ScopeAll},
	{name: "planner-profile-data", key: "planner_profile_data", kind: flagString, usage: "NPZ or JSON planner profile (implies --timing-model interpolated)", group: GroupTiming, scope: ScopeAll},
	{name: "fixed-prefill-ms", key: "fixed_prefill_ms", kind: flagFloat, usage: "fixed timing model: prefill pass ms", group: GroupTiming, scope: ScopeAll},
	{name: "fixed-decode-ms", key: "fixed_decode_ms", kind: flagFloat, usage: "fixed timing model: decode pass ms", group: GroupTiming, scope: ScopeAll},
	{name: "fixed-prefill-ms-per-token", key: "fixed_prefill_ms_per_token", kind: flagFloat, usage: "fixed timing model: prefill ms added per new prompt token", group: GroupTiming, scope: ScopeAll},
	{name: "fixed-prefill-std-ms", key: "fixed_prefill_std_ms", kind: flagFloat, usage: "fixed timing model: standard deviation of the prefill term (seeded; at most 0.3 × fixed_prefill_ms)", group: GroupTiming, scope: ScopeAll},
	{name: "fixed-decode-std-ms", key: "fixed_decode_std_ms", kind: flagFloat, usage: "fixed timing model: standard deviation of the decode term (seeded; at most 0.3 × fixed_decode_ms)", group: GroupTiming, scope: ScopeAll},
	{name: "fixed-load-factor", key: "fixed_load_factor", kind: flagFloat, usage: "fixed timing model: factor (>= 1) on a pass of max_num_seqs sequences, falling linearly to 1 for one", group: GroupTiming, scope: ScopeAll},
	{name: "speedup-ratio", key: "speedup_ratio", kind: flagFloat, usage: "divisor of modeled durations (0 or inf = no delay)", group: GroupTiming, scope: ScopeAll},
	{name: "decode-speedup-ratio", key: "decode_speedup_ratio", kind: flagFloat, usage: "extra divisor of decode durations (0 or inf = no delay)", group: GroupTiming, scope: ScopeAll},
	{name: "hardware", key: "hardware", kind: flagString, usage: "GPU of the hardware timing model (docs/hardware.md): h100_sxm | h200_sxm | b200_sxm | gb200 | a100_sxm | l40s | gh200 | h100_pcie | a100_pcie | b300_sxm | gb300 | l4; --model gives the shape; sizes the KV pool", group: GroupTiming, scope: ScopeAll},
	{name: "tensor-parallel-size", key: "tensor_parallel_size", kind: flagInt, usage: "with --hardware: GPUs the model is split over (-tp)", group: GroupTiming, scope: ScopeAll},
	{name: "dtype", key: "dtype", kind: flagString, usage: "with --hardware: weight dtype: auto | bfloat16 | float16 | half", group: GroupTiming, scope: ScopeAll},
	{name: "quantization", key: "quantization", kind: flagString, usage: "with --hardware: weight quantization: fp8 (default none, or the checkpoint's; -q)", group: GroupTiming, scope: ScopeAll},
	{name: "kv-cache-dtype", key: "kv_cache_dtype", kind: flagString, usage: "with --hardware: KV cache dtype: auto | bfloat16 | fp8 | fp8_e4m3 | fp8_e5m2", group: GroupTiming, scope: ScopeAll},
	{name: "gpu-interconnect", key: "gpu_interconnect", kind: flagString, usage: "with --hardware and TP > 1: all-reduce pricing: measured (the GPU's measured table) | pcie (NCCL's ring over the GPU's PCIe generation, one switch)", group: GroupTiming, scope: ScopeAll},
	{name: "gpu-memory-utilization", key: "gpu_memory_utilization", kind: flagFloat, usage: "with --hardware: fraction of GPU memory for weights, activations and KV cache", group: GroupTiming, scope: ScopeAll},

	// Reasoning.
	{name: "reasoning", key: "reasoning", kind: flagJSON, usage: `reasoning framing as JSON: {"thinking_ratio":0.5,"start_thinking_token_id":3,"end_thinking_token_id":4}`, group: GroupServer, scope: ScopeServer},

	// Data parallelism. -dp is handled by RewriteArgs.
	{name: "data-parallel-size", key: "dp_size", kind: flagInt, aliases: []string{"dp-size"}, usage: "number of DP ranks (aliases --dp-size, -dp)", group: GroupEngine, scope: ScopeAll},
	{name: "dp-routing", key: "dp_routing", kind: flagString, usage: "DP rank choice: round_robin | least_loaded", group: GroupEngine, scope: ScopeServer},

	// Disaggregated prefill/decode.
	{name: "disaggregation-mode", key: "worker_type", kind: flagString, aliases: []string{"worker-type"}, usage: "Dynamo-style worker type: aggregated | prefill | decode (alias --worker-type; docs/disaggregation.md)", group: GroupDisaggregation, scope: ScopeServer},
	{name: "kv-transfer-config", key: "kv_transfer_config", kind: flagJSON, usage: `vLLM KVTransferConfig as JSON: {"kv_connector":"NixlConnector","kv_role":"kv_both"} serves both P/D roles per request; OffloadingConnector with kv_connector_extra_config.cpu_bytes_to_use adds a CPU offload tier`, group: GroupDisaggregation, scope: ScopeAll},
	{name: "bootstrap-port", key: "bootstrap_port", kind: flagInt, usage: "prefill worker: Dynamo bootstrap rendezvous port (0 = none)", group: GroupDisaggregation, scope: ScopeServer},
	{name: "advertise-host", key: "advertise_host", kind: flagString, usage: "host written into kv_transfer_params.remote_host (default host, or 127.0.0.1 for a wildcard host)", group: GroupDisaggregation, scope: ScopeServer},
	{name: "kv-bytes-per-token", key: "kv_bytes_per_token", kind: flagInt, usage: "KV bytes per token for the transfer time (0 = no delay; default from --kv-num-layers etc. when set)", group: GroupDisaggregation, scope: ScopeAll},
	{name: "kv-num-layers", key: "kv_model_shape.num_layers", kind: flagInt, usage: "model shape for kv_bytes_per_token: hidden layers", group: GroupDisaggregation, scope: ScopeAll},
	{name: "kv-num-heads", key: "kv_model_shape.num_kv_heads", kind: flagInt, usage: "model shape for kv_bytes_per_token: KV heads", group: GroupDisaggregation, scope: ScopeAll},
	{name: "kv-head-dim", key: "kv_model_shape.head_dim", kind: flagInt, usage: "model shape for kv_bytes_per_token: head size", group: GroupDisaggregation, scope: ScopeAll},
	{name: "kv-dtype", key: "kv_model_shape.dtype", kind: flagString, usage: "model shape for kv_bytes_per_token: KV dtype: float16 | bfloat16 | float32 | fp8", group: GroupDisaggregation, scope: ScopeAll},
	{name: "kv-transfer-bandwidth", key: "kv_transfer_bandwidth", kind: flagFloat, usage: "KV transfer bandwidth in GB/s, shared by a decode rank's concurrent transfers (0 = no delay)", group: GroupDisaggregation, scope: ScopeServer},
	{name: "kv-transfer-latency-ms", key: "kv_transfer_latency_ms", kind: flagFloat, usage: "ms every KV transfer takes at least, its bytes aside (connection setup; llm-d-inference-sim's kv-cache-transfer-latency)", group: GroupDisaggregation, scope: ScopeAll},
	{name: "kv-transfer-timing-mode", key: "kv_transfer_timing_mode", kind: flagString, usage: "transfer size: full_prompt | destination_missing (only the blocks the decode rank lacks)", group: GroupDisaggregation, scope: ScopeServer},
	{name: "handoff-session-timeout-ms", key: "handoff_session_timeout_ms", kind: flagInt, usage: "maximum time a prefill holds its blocks for the decode side", group: GroupDisaggregation, scope: ScopeServer},

	// Speculative decoding and KV offload tiers (docs/speculative-and-offload.md).
	{name: "speculative-config", key: "speculative_config", kind: flagJSON, usage: `speculative decoding as JSON: {"method":"eagle","num_speculative_tokens":3,"acceptance_rate":0.7} (or "acceptance_rate_per_position":[...], "draft_cost_ratio")`, group: GroupEngine, scope: ScopeAll},
	{name: "kv-offloading-size", key: "kv_offloading_size", kind: flagFloat, usage: "CPU offload tier size in GiB (0 = none)", group: GroupKVCache, scope: ScopeAll},
	{name: "kv-offloading-backend", key: "kv_offloading_backend", kind: flagString, usage: "KV offloading backend: native (lmcache is not supported yet)", group: GroupKVCache, scope: ScopeAll},
	{name: "kv-offloading-disk-size", key: "kv_offloading_disk_size", kind: flagFloat, usage: "disk offload tier size in GiB below the CPU tier (0 = none)", group: GroupKVCache, scope: ScopeAll},
	{name: "offload-bandwidth", key: "offload_bandwidth", kind: flagJSON, usage: `load-back bandwidth per offload tier in GB/s: {"cpu":25,"disk":3}`, group: GroupKVCache, scope: ScopeAll},

	// LoRA adapters.
	{name: "enable-lora", key: "enable_lora", kind: flagBool, negatable: true, usage: "serve LoRA adapters", group: GroupLoRA, scope: ScopeServer},
	{name: "lora-modules", key: "lora_modules", kind: flagList, usage: `adapters served from startup, one or more after one flag: name=path or {"name":...,"path":...,"base_model_name":...}`, group: GroupLoRA, scope: ScopeServer},
	{name: "max-loras", key: "max_loras", kind: flagInt, usage: "maximum distinct LoRA adapters in one pass (GPU slots)", group: GroupLoRA, scope: ScopeServer},
	{name: "max-cpu-loras", key: "max_cpu_loras", kind: flagInt, usage: "adapters kept in the CPU cache (>= max_loras; 0 = max_loras)", group: GroupLoRA, scope: ScopeServer},
	{name: "max-lora-rank", key: "max_lora_rank", kind: flagInt, usage: "maximum adapter rank: 1 | 8 | 16 | 32 | 64 | 128 | 256 | 320 | 512 (checked with --lora-path-check exists)", group: GroupLoRA, scope: ScopeServer},
	{name: "lora-load-time-ms", key: "lora_load_time_ms", kind: flagFloat, usage: "simulated ms to load an adapter into a GPU slot (twice when read from disk)", group: GroupLoRA, scope: ScopeServer},
	{name: "lora-path-check", key: "lora_path_check", kind: flagString, usage: "adapter path check: none (record any path) | exists (a directory; rank from adapter_config.json)", group: GroupLoRA, scope: ScopeServer},
	{name: "allow-runtime-lora-updating", key: "allow_runtime_lora_updating", kind: flagBool, usage: "enable /v1/load_lora_adapter and /v1/unload_lora_adapter (default $VLLM_ALLOW_RUNTIME_LORA_UPDATING)", group: GroupLoRA, scope: ScopeServer},

	// KV events and FPM.
	{name: "kv-events-config", key: "kv_events_config", kind: flagJSON, usage: `vLLM KVEventsConfig as JSON, e.g. {"enable_kv_cache_events":true}`, group: GroupObservability, scope: ScopeServer},
	{name: "zmq-kv-events-port", key: "zmq_kv_events_port", kind: flagInt, usage: "Dynamo style: bind KV event PUB at tcp://<host>:<port+dp_rank>", group: GroupObservability, scope: ScopeServer},
	{name: "zmq-replay-port", key: "zmq_replay_port", kind: flagInt, usage: "Dynamo style: bind replay ROUTER at tcp://<host>:<port+dp_rank>", group: GroupObservability, scope: ScopeServer},
	{name: "kv-events-encoding", key: "kv_events_encoding", kind: flagString, usage: "KV event encoding: map | array", group: GroupObservability, scope: ScopeServer},
	{name: "kv-events-replay-topic-frame", key: "kv_events_replay_topic_frame", kind: flagBool, negatable: true, usage: "replay replies carry a topic frame", group: GroupObservability, scope: ScopeServer},
	{name: "fpm-endpoint", key: "fpm_endpoint", kind: flagString, usage: "ZMQ PUB endpoint for forward-pass metrics (empty = off)", group: GroupObservability, scope: ScopeServer},

	// Robustness, rate limits and fault injection (docs/FAULTS.md).
	{name: "shutdown-grace", key: "shutdown_grace", kind: flagFloat, usage: "seconds in-flight requests may finish after SIGTERM/SIGINT/SIGHUP (a second signal exits at once)", group: GroupServer, scope: ScopeServer},
	{name: "request-body-timeout", key: "request_body_timeout", kind: flagFloat, usage: "seconds to receive a request body before 408 and close", group: GroupServer, scope: ScopeServer},
	{name: "max-unflushed-tokens", key: "max_unflushed_tokens", kind: flagInt, usage: "abort a stream whose client leaves this many tokens unread (0 = never)", group: GroupServer, scope: ScopeServer},
	{name: "dev-mode", key: "dev_mode", kind: flagBool, usage: "serve POST /reset_prefix_cache and, with --enable-sleep-mode, /sleep, /wake_up, /is_sleeping (default $VLLM_SERVER_DEV_MODE=1)", group: GroupVLLM, scope: ScopeServer},
	{name: "enable-sleep-mode", key: "enable_sleep_mode", kind: flagBool, negatable: true, usage: "vLLM's sleep mode: a sleep frees the KV cache and stops passes, a wake-up reloads the weights in modeled time (docs/sleep-mode.md)", group: GroupServer, scope: ScopeServer},
	{name: "sleep-weights-gb", key: "sleep_weights_gb", kind: flagFloat, usage: "GB of weights a wake-up reloads (with --enable-sleep-mode)", group: GroupServer, scope: ScopeServer},
	{name: "sleep-host-bandwidth", key: "sleep_host_bandwidth", kind: flagFloat, usage: "GB/s a wake-up from level 1 reloads weights from host memory at", group: GroupServer, scope: ScopeServer},
	{name: "sleep-disk-bandwidth", key: "sleep_disk_bandwidth", kind: flagFloat, usage: "GB/s a wake-up from level 2 reloads weights from disk at", group: GroupServer, scope: ScopeServer},
	{name: "ui", key: "ui", kind: flagBool, negatable: true, usage: "serve the live browser view at GET /ui, guarded by --api-key (docs/ui.md); --ui=false turns it off", group: GroupServer, scope: ScopeServer},
	{name: "max-concurrent-requests", key: "max_concurrent_requests", kind: flagInt, usage: "429 beyond this many generation requests in flight (0 = no limit)", group: GroupFaults, scope: ScopeServer},
	{name: "rpm", key: "rpm", kind: flagInt, usage: "requests per minute before 429 (0 = no limit)", group: GroupFaults, scope: ScopeServer},
	{name: "tpm", key: "tpm", kind: flagInt, usage: "tokens (prompt + max tokens) per minute before 429 (0 = no limit)", group: GroupFaults, scope: ScopeServer},
	{name: "failure-rate", key: "failure_rate", kind: flagFloat, usage: "probability (0-1, seeded by --seed) that a request gets one of --failure-types", group: GroupFaults, scope: ScopeServer},
	{name: "failure-types", key: "failure_types", kind: flagList, split: true, usage: "faults drawn by --failure-rate, e.g. rate_limit,truncate;after=5 (default all but timeout, invalid_api_key, invalid_request, model_not_found)", group: GroupFaults, scope: ScopeServer},
	{name: "failure-script", key: "failure_script", kind: flagString, usage: "failure script, inline or @FILE, e.g. 'first 3: rate_limit; then ok'", group: GroupFaults, scope: ScopeServer},
	{name: "allow-fault-headers", key: "allow_fault_headers", kind: flagBool, usage: "let requests pick a fault with X-Mocker-Fault", group: GroupFaults, scope: ScopeServer},

	// Resource budgets (docs/SECURITY.md, "Budgets"): a request over one gets a 400 naming the flag.
	{name: "max-prompts-per-request", key: "max_prompts_per_request", kind: flagInt, usage: "most prompts in one /v1/completions request (a prompt list)", group: GroupServer, scope: ScopeServer},
	{name: "max-sequences-per-request", key: "max_sequences_per_request", kind: flagInt, usage: "most sequences one request makes: prompts × n (× best_of)", group: GroupServer, scope: ScopeServer},
	{name: "max-embedding-inputs", key: "max_embedding_inputs", kind: flagInt, usage: "most inputs in one /v1/embeddings, /classify or /pooling request, and most texts in a score or rerank list (OpenAI: 2048)", group: GroupServer, scope: ScopeServer},
	{name: "max-schema-bytes", key: "max_schema_bytes", kind: flagInt, usage: "largest JSON schema (response_format, structured outputs, one tool's parameters), in bytes", group: GroupServer, scope: ScopeServer},
	{name: "max-schema-enum", key: "max_schema_enum", kind: flagInt, usage: "most enum and const values in one JSON schema (OpenAI: 1000)", group: GroupServer, scope: ScopeServer},
	{name: "max-schema-steps", key: "max_schema_steps", kind: flagInt, usage: "work budget of one schema's compilation, and of each generation or check against it", group: GroupServer, scope: ScopeServer},
	{name: "max-lora-adapters", key: "max_lora_adapters", kind: flagInt, usage: "most LoRA adapters registered at once (startup and /v1/load_lora_adapter)", group: GroupLoRA, scope: ScopeServer},
	{name: "kv-transfer-allowed-hosts", key: "kv_transfer_allowed_hosts", kind: flagList, split: true, usage: "prefill hosts a decode worker may dial besides loopback and --advertise-host: names (not resolved), IPs, CIDRs, or *", group: GroupDisaggregation, scope: ScopeServer},
	{name: "max-responses-store-bytes", key: "max_responses_store_bytes", kind: flagInt, usage: "bytes of stored /v1/responses kept for previous_response_id (oldest dropped first)", group: GroupServer, scope: ScopeServer},
}

// Names of the source flags, which are not configuration keys themselves.
const (
	FlagConfig          = "config"
	FlagExtraEngineArgs = "extra-engine-args"
)

var flagAliases = func() map[string]string {
	m := map[string]string{}
	for _, s := range flagTable {
		for _, a := range s.aliases {
			m[a] = s.name
		}
	}
	return m
}()

// canonicalFlagName maps "_" to "-" (vLLM accepts --max_model_len) and
// aliases to their canonical flag name.
func canonicalFlagName(name string) string {
	name = strings.ReplaceAll(name, "_", "-")
	if c, ok := flagAliases[name]; ok {
		return c
	}
	return name
}

// RegisterFlags registers every configuration flag of flagTable, --config
// and --extra-engine-args, and the other `vllm serve` flags (hidden from
// --help: accepted with no effect, or refused as not supported yet) on fs,
// and installs a flag-name normaliser for aliases (--num-gpu-blocks,
// --dp-size, --worker-type) and underscore spellings. Use OptionsFromFlags
// and NoEffectFlags after parsing.
func RegisterFlags(fs *pflag.FlagSet) {
	fs.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		return pflag.NormalizedName(canonicalFlagName(name))
	})
	def := Default()
	defV := reflect.ValueOf(&def).Elem()
	for _, s := range flagTable {
		switch s.kind {
		case flagBool:
			slot := new(bool)
			if fv, ok := fieldAt(defV, s.key); ok {
				*slot = fv.Bool()
			}
			fs.Var(&boolValue{slot: slot}, s.name, negationUsage(s))
			fs.Lookup(s.name).NoOptDefVal = "true"
			if s.negatable {
				// Shares the slot: the last of --x / --no-x on the command line wins.
				neg := "no-" + s.name
				fs.Var(&boolValue{slot: slot, invert: true}, neg, "disable --"+s.name)
				fs.Lookup(neg).NoOptDefVal = "true"
				_ = fs.MarkHidden(neg)
				SetFlagGroup(fs, neg, s.group.String())
			}
		case flagList:
			fs.Var(&listValue{split: s.split}, s.name, s.usage)
		default:
			fs.Var(&textValue{text: defaultText(defV, s.key), kind: s.kind}, s.name, s.usage)
		}
		SetFlagGroup(fs, s.name, s.group.String())
	}
	fs.String(FlagConfig, "", "YAML or JSON configuration file: the project's keys (configs/), or a vLLM config file (keys are vllm serve argument names; docs/vllm-flags.md), or an llm-d-inference-sim one (docs/migrating-from-llm-d-inference-sim.md)")
	fs.String(FlagExtraEngineArgs, "", "inline JSON object, or a JSON/YAML file, overriding --config")
	SetFlagGroup(fs, FlagConfig, GroupVLLM.String())
	SetFlagGroup(fs, FlagExtraEngineArgs, GroupVLLM.String())
	registerVLLMFlags(fs)
	registerSimFlags(fs)
}

// defaultText formats a default value for --help (zero values print nothing).
func defaultText(def reflect.Value, key string) string {
	fv, ok := fieldAt(def, key)
	if !ok {
		return ""
	}
	switch fv.Kind() {
	case reflect.String:
		return fv.String()
	case reflect.Int, reflect.Int64:
		return strconv.FormatInt(fv.Int(), 10)
	case reflect.Float64:
		return strconv.FormatFloat(fv.Float(), 'g', -1, 64)
	}
	return ""
}

// FlagOverlay returns the explicitly set configuration flags of a parsed fs
// (registered by RegisterFlags) as a generic map keyed by JSON keys, nested
// for dotted keys. Integer and float texts become json.Number when numeric
// and stay strings otherwise ("32k", "inf", "abc"), so Load applies exactly
// the rules it applies to files. Flags not registered on fs are skipped.
func FlagOverlay(fs *pflag.FlagSet) map[string]any {
	out := map[string]any{}
	simOverlay(fs, out)
	for _, s := range flagTable {
		f := fs.Lookup(s.name)
		if f == nil {
			continue
		}
		changed := f.Changed
		if s.negatable {
			if nf := fs.Lookup("no-" + s.name); nf != nil && nf.Changed {
				changed = true
			}
		}
		if !changed {
			continue
		}
		var val any
		switch v := f.Value.(type) {
		case *boolValue:
			val = *v.slot
		case *listValue:
			items := make([]any, len(v.items))
			for i, it := range v.items {
				items[i] = it
			}
			val = items
		case *textValue:
			val = v.text
			if s.kind == flagInt || s.kind == flagFloat {
				val = scalarFromText(v.text)
			}
		default:
			val = f.Value.String()
		}
		setPath(out, s.key, val)
	}
	return out
}

// OptionsFromFlags returns the LoadOptions of a parsed fs: --config,
// --extra-engine-args, the FlagOverlay and the vLLM flags set on fs whose
// capability is not built yet (Load refuses them).
func OptionsFromFlags(fs *pflag.FlagSet) LoadOptions {
	o := LoadOptions{Overlay: FlagOverlay(fs), refusedFlags: notYetVLLMFlags(fs)}
	if f := fs.Lookup(FlagConfig); f != nil {
		o.ConfigPath = f.Value.String()
	}
	if f := fs.Lookup(FlagExtraEngineArgs); f != nil {
		o.ExtraEngineArgs = f.Value.String()
	}
	return o
}

var numericRE = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// scalarFromText turns numeric flag text into a json.Number and leaves
// anything else a string for the decoder to accept (HR sizes, "inf") or reject.
func scalarFromText(t string) any {
	t = strings.TrimSpace(t)
	if numericRE.MatchString(t) {
		return json.Number(strings.TrimPrefix(t, "+"))
	}
	return t
}

// setPath stores val at a dotted path in m, creating nested maps.
func setPath(m map[string]any, path string, val any) {
	keys := strings.Split(path, ".")
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[keys[len(keys)-1]] = val
}

// textValue holds a flag's raw text; the decoder interprets it.
type textValue struct {
	text string
	kind flagKind
}

func (v *textValue) Set(s string) error { v.text = s; return nil }
func (v *textValue) String() string     { return v.text }
func (v *textValue) Type() string {
	switch v.kind {
	case flagInt:
		return "int"
	case flagFloat:
		return "float"
	case flagJSON:
		return "json"
	}
	return "string"
}

// listValue collects a repeatable flag; with split, values are also
// comma-separated.
type listValue struct {
	items []string
	split bool
}

func (v *listValue) Set(s string) error {
	if !v.split {
		v.items = append(v.items, s)
		return nil
	}
	for _, p := range strings.Split(s, ",") {
		v.items = append(v.items, strings.TrimSpace(p))
	}
	return nil
}
func (v *listValue) String() string { return strings.Join(v.items, ",") }
func (v *listValue) Type() string   { return "strings" }

// boolValue is a bool flag; the --no-x form shares the slot inverted.
type boolValue struct {
	slot   *bool
	invert bool
}

func (v *boolValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("expected true or false")
	}
	*v.slot = b != v.invert
	return nil
}
func (v *boolValue) String() string { return strconv.FormatBool(*v.slot != v.invert) }
func (v *boolValue) Type() string   { return "bool" }
