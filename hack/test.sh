#!/usr/bin/env bash
# Installs what the tests need, then runs them. Used by `make test` and CI.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v kubectl >/dev/null 2>&1 || need+=(kubectl)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" || true
  fi
fi
command -v kubectl >/dev/null 2>&1 || { echo "kubectl is required for the end-to-end tests; install it and run again" >&2; exit 1; }

go vet ./...
go test -count=1 -timeout 25m ./...
