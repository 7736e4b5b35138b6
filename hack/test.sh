#!/usr/bin/env bash
# Installs what the tests need, then runs them. Used by `make test` and CI.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v kubectl >/dev/null 2>&1 || need+=(kubectl)
# The node agent's tests run real containers (as root): containerd, runc,
# the CNI plugins, and busybox to build a test image from.
if [ "$(id -u)" = 0 ]; then
  command -v containerd >/dev/null 2>&1 || need+=(containerd)
  command -v runc >/dev/null 2>&1 || need+=(runc)
  [ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
  [ -x /bin/busybox ] || need+=(busybox-static)
  command -v iptables >/dev/null 2>&1 || need+=(iptables)
  command -v nft >/dev/null 2>&1 || need+=(nftables)
  # The multi-host tests (dev clusters of network namespaces) use ip.
  command -v ip >/dev/null 2>&1 || need+=(iproute2)
fi
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
  fi
fi
command -v kubectl >/dev/null 2>&1 || { echo "kubectl is required for the end-to-end tests; install it and run again" >&2; exit 1; }

go vet ./...
# The end-to-end tests run after the others, not beside them: as root they
# run real nodes (port 10250, CNI bridges) as some package tests do. On a
# fresh machine TestHelm first builds helm v3 and v4 (~8 minutes).
# Each run's output is kept, and what failed is repeated at the end, where
# a CI log's tail shows it.
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
failed() {
  echo "== failed in $1:" >&2
  grep -E -- '--- FAIL|^FAIL|^panic:|_test\.go:[0-9]+:|timed out' "$log/$1" | tail -40 >&2
  exit 1
}
go test -count=1 -timeout 15m $(go list ./... | grep -v '/test/e2e$') 2>&1 | tee "$log/unit" || failed unit
go test -count=1 -timeout 35m ./test/e2e/ 2>&1 | tee "$log/e2e" || failed e2e
# Each fuzz target (request bodies of every content type and patch type,
# list queries with selectors and field paths, request URLs) runs for a
# bounded time on new inputs; plain `go test` above runs only their seeds.
# The instrumented build comes first (every dependency again, minutes on 2
# cores the first time).
start=$SECONDS
for target in FuzzCreateAndPatch FuzzListQuery FuzzRequestInfo; do
  go test -run '^$' -fuzz "^$target\$" -fuzztime "${FUZZTIME:-10s}" ./internal/apiserver/ 2>&1 | tee -a "$log/fuzz" || failed fuzz
done
echo "fuzzing took $((SECONDS - start))s"
