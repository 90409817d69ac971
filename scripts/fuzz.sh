#!/usr/bin/env bash
# Runs Go native fuzz targets of the repository for FUZZTIME each (a
# duration such as 3s or 10m, or a count such as 1000000x): the targets
# named as arguments, or all of them. Their seed corpora also run in every
# plain `go test`. `make test` runs the request, configuration, profile,
# KV-event, SSE, JSON-validation and media-header targets for 3 s each;
# `make fuzz` runs all of them (FUZZTIME=60s by default).
#
#   FUZZTIME=1000000x scripts/fuzz.sh FuzzGenerateHandler   # one target
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-3s}

targets=(
	"./internal/api FuzzGenerateHandler"                 # request decoding and parameters, through the real handler
	"./internal/api FuzzSurfaceHandlers"                 # /v1/responses, /v1/messages, /v1/embeddings, through the real handler
	"./internal/api/responses FuzzResponsesBody"         # Responses bodies: a 4xx, or a conversation that encodes; long ids never echoed whole
	"./internal/api/anthropic FuzzMessagesBody"          # Messages bodies: a 4xx, or chat messages and tools as JSON arrays
	"./internal/api/embeddings FuzzEmbeddingsBody"       # embeddings bodies: a 4xx, or at most --max-embedding-inputs prompts within the context
	"./internal/config FuzzLoad"                         # configuration files and --extra-engine-args
	"./internal/profile FuzzLoadProfile"                 # timing profiles (NPZ and JSON)
	"./internal/events FuzzEncodeRoundTrip"              # KV-event encoder against vmihailenco/msgpack
	"./internal/loadgen FuzzSSEParser"                   # the load generator's chunked SSE reader
	"./internal/config FuzzRewriteAndParse"              # vLLM-style command lines
	"./internal/jsonenc FuzzAppendString"                # the one JSON string escaper against encoding/json
	"./internal/api/wire FuzzAppendFloat"                # the number appenders against encoding/json
	"./internal/api/wire FuzzAppendIntegers"
	"./internal/api/wire FuzzCountArrayAgreesWithEncodingJSON"  # the embeddings budget's element count against encoding/json
	"./internal/tokenizer FuzzPieces"
	"./internal/hftokenizer FuzzEncodeDecode"
	"./internal/chattemplate FuzzParseAndRenderNeverPanic"
	"./internal/chattemplate FuzzDecodeJSONAgreesWithEncodingJSON"
	"./internal/schemagen FuzzCompileGenerate"          # JSON Schemas: refused, or every instance valid
	"./internal/replay FuzzTraceLine"                    # Mooncake trace lines: refused, or within the per-line token bound
	"./internal/kvtransfer FuzzSideChannelBody"          # side-channel bodies: a 4xx JSON error naming no engine id, or the exact handoff
	"./internal/grpcfront/sglang FuzzGenInput"           # SGLang GenerateRequests: a 400, or an input with every id in the vocabulary
	"./internal/grpcfront/sglang FuzzDecodeKVBatch"      # the SubscribeKvEvents bridge: any payload, bounded memory, no panic
	"./internal/api FuzzPoolingHandlers"                 # score, rerank, classify and pooling bodies through the real handlers
	"./internal/api/audio FuzzDecodeMultipart"           # transcription forms: a 4xx, or a form within the body limit
	"./internal/api/wire FuzzValidJSON"                  # the large-body JSON validator: never accepts what encoding/json refuses
	"./internal/media FuzzProbe"                         # media headers: a fact or an error, nothing allocated from declared sizes
	"./internal/media FuzzParseDataURL"                  # data URLs: bounded before allocation
	"./internal/media FuzzProbeEmbeds"                   # embeddings payloads (torch.save, .npy)
	"./internal/media FuzzProbeEmbedsTorch"              # torch.save archives
	"./internal/media FuzzUnpickleTensor"                # the restricted pickle reader
	"./internal/mmproc FuzzForModel"                     # model configs: a processor or an error
)
wanted=" $* "
for t in "${targets[@]}"; do
	read -r pkg name <<<"$t"
	if [[ $# -gt 0 && "$wanted" != *" $name "* ]]; then
		continue
	fi
	echo "fuzz: $name ($pkg) for $FUZZTIME"
	"$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "$pkg"
done
