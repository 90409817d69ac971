#!/usr/bin/env bash
# ensure-deps.sh: make sure the system packages the build needs are present:
# a C compiler for cgo and libzmq's headers (via pkg-config) for the ZMQ
# binding (github.com/pebbe/zmq4), and a python3 for the argparse
# cross-check of the vLLM flag table. With --python, also what the live
# cross-language KV-event check needs: Debian's python3 with python3-zmq and
# python3-msgpack, and curl (and jq: the docs' shell blocks that the README
# command test runs use both); and python3-jinja2, the reference the chat
# template tests compare against; python3-xxhash and python3-cbor2 for
# scripts/kv_block_hashes.py (block hashes computed independently of Go);
# the Python gRPC client of the gRPC front ends' tests: python3-grpcio,
# python3-protobuf, python3-grpc-tools, and protoc with Debian's
# grpc_python_plugin (protobuf-compiler, protobuf-compiler-grpc), which
# generate the stubs of protos that use proto3 optional fields (the protoc
# bundled with bookworm's python3-grpc-tools 1.14 predates them);
# python3-pil, python3-numpy, python3-torch and b3sum for the multimodal
# references.
# With --browser, what the replay HTML check needs: Debian's chromium, node
# and npm. With --proto, protoc (Debian's protobuf-compiler, and libprotobuf-dev
# for its well-known types) for make proto and its check.
#
# Running as root on Debian/Ubuntu, missing packages are installed with
# apt-get (non-interactive). Otherwise the script prints ONE line saying
# what to install and fails, e.g.
#   missing system packages: run 'sudo apt-get install -y libzmq3-dev pkg-config' and retry
set -euo pipefail

want=()

# want_protoc: protoc and its well-known types (google/protobuf/timestamp.proto,
# struct.proto, which the SGLang proto imports), which come with
# libprotobuf-dev, only a recommendation of protobuf-compiler, skipped by
# --no-install-recommends.
want_protoc() {
  command -v protoc >/dev/null 2>&1 || want+=(protobuf-compiler)
  [ -f /usr/include/google/protobuf/timestamp.proto ] || want+=(libprotobuf-dev)
}
if ! command -v go >/dev/null 2>&1; then
  echo "go not found on PATH: install Go 1.26 (https://go.dev/dl/) and add it to PATH (e.g. /usr/local/go/bin)" >&2
  exit 1
fi
cc=$(go env CC 2>/dev/null || true)
if ! command -v "${cc:-gcc}" >/dev/null 2>&1; then
  want+=(gcc libc6-dev)
fi
if ! command -v pkg-config >/dev/null 2>&1 || ! pkg-config --exists libzmq; then
  want+=(libzmq3-dev pkg-config)
fi
# Any python3 (standard library only) for the argparse cross-check of the
# vllm serve flag table (internal/config).
if ! command -v python3 >/dev/null 2>&1 && [ ! -x /usr/bin/python3 ]; then
  want+=(python3)
fi
if [ "${1:-}" = "--python" ]; then
  if ! /usr/bin/python3 -c 'import zmq, msgpack' >/dev/null 2>&1; then
    want+=(python3 python3-zmq python3-msgpack)
  fi
  /usr/bin/python3 -c 'import jinja2' >/dev/null 2>&1 || want+=(python3-jinja2)
  /usr/bin/python3 -c 'import xxhash' >/dev/null 2>&1 || want+=(python3-xxhash)
  /usr/bin/python3 -c 'import cbor2' >/dev/null 2>&1 || want+=(python3-cbor2)
  # The multimodal references (internal/media and internal/mmproc testdata):
  # PIL and NumPy, and b3sum for the blake3 digest.
  /usr/bin/python3 -c 'import PIL, numpy' >/dev/null 2>&1 || want+=(python3-pil python3-numpy)
  # torch for the embeddings-tensor hash reference (internal/media/testdata/
  # hashref.py loads tensors as vLLM does); about a minute to install.
  /usr/bin/python3 -c 'import torch' >/dev/null 2>&1 || want+=(python3-torch)
  command -v b3sum >/dev/null 2>&1 || want+=(b3sum)
  command -v curl >/dev/null 2>&1 || want+=(curl)
  command -v jq >/dev/null 2>&1 || want+=(jq)
  /usr/bin/python3 -c 'import grpc' >/dev/null 2>&1 || want+=(python3-grpcio)
  /usr/bin/python3 -c 'import google.protobuf' >/dev/null 2>&1 || want+=(python3-protobuf)
  /usr/bin/python3 -c 'import grpc_tools' >/dev/null 2>&1 || want+=(python3-grpc-tools)
  want_protoc
  command -v grpc_python_plugin >/dev/null 2>&1 || want+=(protobuf-compiler-grpc)
fi
if [ "${1:-}" = "--browser" ]; then
  [ -x /usr/bin/chromium ] || want+=(chromium)
  command -v node >/dev/null 2>&1 || want+=(nodejs)
  command -v npm >/dev/null 2>&1 || want+=(npm)
fi
if [ "${1:-}" = "--proto" ]; then
  want_protoc
fi
[ ${#want[@]} -eq 0 ] && exit 0

if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${want[*]} with apt-get" >&2
  export DEBIAN_FRONTEND=noninteractive
  if ! { apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends "${want[@]}" >/dev/null; } </dev/null; then
    echo "apt-get could not install ${want[*]}; install them and retry" >&2
    exit 1
  fi
  exit 0
fi
if command -v apt-get >/dev/null 2>&1; then
  echo "missing system packages: run 'sudo apt-get install -y ${want[*]}' and retry" >&2
else
  echo "missing system packages (Debian names): ${want[*]} — install the equivalents (libzmq with headers, pkg-config) and retry" >&2
fi
exit 1
