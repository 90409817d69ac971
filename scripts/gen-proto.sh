#!/usr/bin/env bash
# gen-proto.sh [OUTROOT]: generate the Go code of the upstream .proto files
# under proto/ (kept verbatim, see each directory's NOTICE) with protoc,
# protoc-gen-go and protoc-gen-go-grpc. Without OUTROOT the code is written
# into the repository (make proto); with it, under OUTROOT at the same
# relative paths (scripts/check-proto.sh diffs the two).
#
# The plugins are pinned: protoc-gen-go is built from the protobuf module
# go.mod requires, protoc-gen-go-grpc at PROTOC_GEN_GO_GRPC below; both go
# into .cache/protoc-plugins. protoc itself is Debian's protobuf-compiler
# (scripts/ensure-deps.sh --proto installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=${1:-$root}
mkdir -p "$out"
out=$(cd "$out" && pwd)

PROTOC_GEN_GO_GRPC=v1.6.2
module=github.com/mocker-server/mocker-server

bin=$root/.cache/protoc-plugins
mkdir -p "$bin"
if [ ! -x "$bin/protoc-gen-go" ] || [ "$bin/protoc-gen-go" -ot go.sum ]; then
  go build -o "$bin/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go
fi
if [ ! -x "$bin/protoc-gen-go-grpc-$PROTOC_GEN_GO_GRPC" ]; then
  GOBIN="$bin/tmp" GOFLAGS=-mod=mod go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC"
  mv "$bin/tmp/protoc-gen-go-grpc" "$bin/protoc-gen-go-grpc-$PROTOC_GEN_GO_GRPC"
  rmdir "$bin/tmp"
fi
ln -sf "protoc-gen-go-grpc-$PROTOC_GEN_GO_GRPC" "$bin/protoc-gen-go-grpc"

# gen DIR GOPKG FILE...: compile proto/DIR/FILE... into the Go package GOPKG
# (a directory of this module). The .proto files carry no go_package option
# (they are upstream's), so the mapping of every file is given here with M
# flags; files of one DIR import each other by their bare names.
gen() {
  local dir=$1 pkg=$2
  shift 2
  local m=() f
  for f in "$@"; do
    m+=(--go_opt="M$f=$module/$pkg" --go-grpc_opt="M$f=$module/$pkg")
  done
  mkdir -p "$out/$pkg"
  (cd "proto/$dir" && PATH="$bin:$PATH" protoc -I . \
    --go_out="$out/$pkg" --go_opt=paths=source_relative \
    --go-grpc_out="$out/$pkg" --go-grpc_opt=paths=source_relative \
    "${m[@]}" "$@")
}

# One line per upstream protocol.
gen vllm internal/grpcfront/vllm/vllmpb vllm_engine.proto
gen sglang internal/grpcfront/sglang/sglangpb common.proto sglang_scheduler.proto
