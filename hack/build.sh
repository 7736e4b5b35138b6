#!/usr/bin/env bash
# Builds plainkube as every script and test here does: bin/plainkube, or
# the path given.
#  -tags kustomize_disable_go_plugin_support: kustomize's Go plugin loader
#     (linked through the helm controller's and kubectl's packages) makes the
#     linker export every symbol: ~50 MB of binary and ~40 MB of RSS.
#  -s -w: no symbol table or DWARF (stack traces keep names and lines).
#  -X …version.gitVersion: 'plainkube kubectl version' reports the
#     Kubernetes release it is, as a kubectl built by upstream does.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bin/plainkube}
field() { sed -n "s/^[[:space:]]*$1[[:space:]]*= \"\\([0-9]*\\)\"/\\1/p" internal/version/version.go; }
major=$(field Major) minor=$(field Minor) patch=$(field Patch)
[ -n "$major" ] && [ -n "$minor" ] && [ -n "$patch" ] || { echo "build.sh: no version in internal/version/version.go" >&2; exit 1; }
x=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  x+=" -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitVersion=v$major.$minor.$patch -X $pkg.gitTreeState=clean"
done
exec go build -tags kustomize_disable_go_plugin_support -ldflags "-s -w$x" -o "$out" ./cmd/plainkube
