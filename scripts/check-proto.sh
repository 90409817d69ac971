#!/usr/bin/env bash
# check-proto.sh: fail when the committed generated code differs from what
# scripts/gen-proto.sh produces from proto/ now (make proto was not run after
# a .proto or plugin change). The protoc version line of the headers is
# ignored, so a machine with another protoc release does not fail the check.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
scripts/gen-proto.sh "$tmp"
status=0
while IFS= read -r f; do
  rel=${f#"$tmp"/}
  if [ ! -f "$rel" ]; then
    echo "check-proto: $rel is not committed; run make proto" >&2
    status=1
    continue
  fi
  if ! diff -u -I '^//[[:space:]-]*protoc[[:space:]]' "$rel" "$f" >&2; then
    echo "check-proto: $rel is stale; run make proto" >&2
    status=1
  fi
done < <(find "$tmp" -name '*.pb.go')
[ $status -eq 0 ] && echo "check-proto: generated code is current"
exit $status
