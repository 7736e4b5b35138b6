#!/usr/bin/env bash
# Builds plainkube and runs a cluster in the foreground. Used by `make run`.
# As root, the server runs a node agent on this host: what it needs
# (containerd, runc, the CNI plugins) is installed with apt-get when missing.
# Not as root, it runs the control plane alone (--disable-node).
set -euo pipefail
cd "$(dirname "$0")/.."

./hack/build.sh
args=()
if [ "$(id -u)" = 0 ]; then
  need=()
  command -v containerd >/dev/null 2>&1 || need+=(containerd)
  command -v runc >/dev/null 2>&1 || need+=(runc)
  [ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
  command -v iptables >/dev/null 2>&1 || need+=(iptables)
  command -v nft >/dev/null 2>&1 || need+=(nftables)
  if [ ${#need[@]} -gt 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
  fi
else
  echo "plainkube: not root, so no node agent runs (--disable-node); run as root for a node with real containers" >&2
  args+=(--disable-node)
fi
exec ./bin/plainkube server "${args[@]}" "$@"
