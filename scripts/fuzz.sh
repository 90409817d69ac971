#!/usr/bin/env bash
# Runs every Go native fuzz target of the repository for FUZZTIME each
# (a duration such as 3s or 10m, or a count such as 1000000x). Their seed
# corpora also run in every plain `go test`. `make test` runs this with a
# few seconds per target; `make fuzz` longer (FUZZTIME=60s by default).
#
#   FUZZTIME=1000000x scripts/fuzz.sh FuzzGenerateHandler   # one target
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-3s}
only=${1:-}

targets=(
	"./internal/api FuzzGenerateHandler"       # request decoding and parameters, through the real handler
	"./internal/config FuzzLoad"               # configuration files and --extra-engine-args
	"./internal/api FuzzAppendString"          # the hand-written JSON appenders against encoding/json
	"./internal/api FuzzAppendFloat"
	"./internal/api FuzzAppendIntegers"
	"./internal/profile FuzzLoadProfile"       # timing profiles (NPZ and JSON)
	"./internal/events FuzzEncodeRoundTrip"    # KV-event encoder against vmihailenco/msgpack
	"./internal/loadgen FuzzSSEParser"         # the load generator's chunked SSE reader
)
for t in "${targets[@]}"; do
	read -r pkg name <<<"$t"
	if [[ -n "$only" && "$only" != "$name" ]]; then
		continue
	fi
	echo "fuzz: $name ($pkg) for $FUZZTIME"
	"$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "$pkg"
done
