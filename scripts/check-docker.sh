#!/usr/bin/env bash
# check-docker.sh: validate the container files without a Docker engine or
# registry (none is needed):
#   * docker-compose.yml and docker-compose.fleet.yml with Debian's
#     docker-compose (`config -q` parses, interpolates and validates each
#     file against the compose schema);
#   * the Dockerfile with the npm linter dockerfilelint (through npx).
# As root, missing tools (docker-compose; npm) are installed with apt-get.
set -euo pipefail
cd "$(dirname "$0")/.."

DOCKERFILELINT=dockerfilelint@1.8.0

install() {
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing $* with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    { apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends "$@" >/dev/null; } </dev/null
  else
    echo "missing tools: run 'sudo apt-get install -y $*' and retry" >&2
    exit 1
  fi
}

command -v docker-compose >/dev/null 2>&1 || install docker-compose
command -v npx >/dev/null 2>&1 || install npm

# The fleet file requires the admin key from the environment (it refuses to
# start without one); a placeholder is enough to validate the file.
export MOCKER_ADMIN_KEY="${MOCKER_ADMIN_KEY:-placeholder-for-compose-config}"
for file in docker-compose.yml docker-compose.fleet.yml; do
  echo "docker-compose config: $file"
  docker-compose -f "$file" config -q
done

echo "dockerfilelint: Dockerfile"
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false npm_config_yes=true
# Run from a scratch directory so npx does not look at (or create) a
# package.json in the repository; the linter's exit status is the number of
# problems. Rules to disable, if ever needed, go to a .dockerfilelintrc next
# to the Dockerfile (the linter reads it from there); none is needed today.
root=$PWD
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
(cd "$scratch" && npx --yes "$DOCKERFILELINT" "$root/Dockerfile" </dev/null)
