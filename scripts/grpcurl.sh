#!/usr/bin/env bash
# grpcurl.sh: print the path of a grpcurl binary built from its Go module
# (github.com/fullstorydev/grpcurl, the version below) into
# .cache/grpcurl-<version>, building it the first time. The gRPC tests
# (internal/grpcfront/vllm, internal/grpcfront/sglang through
# testutil.Grpcurl) call it; make test-go runs it once first so
# that the build does not count against a test package's timeout.
set -euo pipefail
cd "$(dirname "$0")/.."
GRPCURL_VERSION=v1.9.4
dir=$(pwd)/.cache/grpcurl-$GRPCURL_VERSION
if [ ! -x "$dir/grpcurl" ]; then
  GOBIN="$dir" GOFLAGS=-mod=mod go install "github.com/fullstorydev/grpcurl/cmd/grpcurl@$GRPCURL_VERSION" >&2
fi
echo "$dir/grpcurl"
