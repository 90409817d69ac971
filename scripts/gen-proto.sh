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

# gen DIR FILE GOPKG: compile proto/DIR/FILE into the Go package GOPKG (a
# directory of this module). The .proto files carry no go_package option
# (they are upstream's), so the mapping is given here with M flags.
gen() {
  local dir=$1 file=$2 pkg=$3
  mkdir -p "$out/$pkg"
  PATH="$bin:$PATH" protoc -I "proto/$dir" \
    --go_out="$out/$pkg" --go_opt=paths=source_relative --go_opt="M$file=$module/$pkg" \
    --go-grpc_out="$out/$pkg" --go-grpc_opt=paths=source_relative --go-grpc_opt="M$file=$module/$pkg" \
    "proto/$dir/$file"
}

# One line per upstream protocol.
gen vllm vllm_engine.proto internal/grpcfront/vllm/vllmpb
