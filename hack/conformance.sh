#!/usr/bin/env bash
# Runs upstream Kubernetes' conformance specs (k8s.io/kubernetes/test/e2e
# v1.37.2, the [Conformance] ones) against a plainkube cluster started for
# the run, offline, and prints passed/failed/skipped per SIG and the failed
# specs. Used by `make conformance`. Root (the cluster runs a real node).
#
#   hack/conformance.sh [FOCUS] [SKIP]
#
# FOCUS and SKIP are Ginkgo regular expressions on the spec names, e.g.
#   hack/conformance.sh '\[sig-api-machinery\]'
#   hack/conformance.sh 'ConfigMap' '\[Serial\]'
# Only [Conformance] specs run whatever FOCUS says, unless LABELS says
# otherwise (below).
#
# What it does:
# 1. builds bin/plainkube, and, when missing, $CONFORMANCE_DIR/e2e.test and
#    $CONFORMANCE_DIR/kubectl (the suite's version, which the kubectl specs
#    run) from the Go module test/conformance, which requires
#    k8s.io/kubernetes from the module proxy (e2e.test takes 20-40 minutes
#    on 2 cores the first time);
# 2. starts `plainkube server` with its real node on a scratch data dir
#    under $CONFORMANCE_DIR, holding /tmp/plainkube-e2e.lock while it runs;
# 3. builds and imports the test images under their upstream names
#    (hack/conformance-images.sh says what stands in for what);
# 4. runs e2e.test (provider skeleton) with its JUnit report in the run's
#    report/ folder and its output in e2e-*.log, then prints the summary;
# 5. stops the server and removes what its node left (`plainkube cleanup`).
#
# Network: the e2e suite talks only to the API server at 127.0.0.1 and, from
# pods, to in-cluster addresses; the node's DNS answerer forwards names
# outside the cluster to 127.0.0.1:9, where nothing answers, never to the
# host's resolver.
#
# Environment: CONFORMANCE_DIR (default /tmp/conformance), PLAINKUBE (a
# plainkube binary to use instead of building bin/plainkube), KEEP=1 to leave
# the run's data dir in place (the cluster is stopped all the same),
# E2E_ARGS for more e2e.test flags, PARALLEL=N to run the specs that are not
# [Serial] on N Ginkgo processes (then the [Serial] ones alone), NODES=2 to
# join a second node (`plainkube agent` on this host, its own containerd and
# pod bridge, kubelet port 10251; the server's node serves the host's
# Service proxy and DNS for both) for the specs that need two, LABELS=expr
# for another Ginkgo label filter than Conformance (LABELS= for none: then
# FOCUS alone selects, e.g. upstream's specs outside the conformance set).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

focus=${1:-}
skip=${2:-}
work=${CONFORMANCE_DIR:-/tmp/conformance}
mkdir -p "$work"

if [ "$(id -u)" != 0 ]; then
  echo "conformance: needs root (the cluster runs a real node with containerd)" >&2
  exit 1
fi

plainkube=${PLAINKUBE:-}
if [ -z "$plainkube" ]; then
  ./hack/build.sh
  plainkube=bin/plainkube
fi
plainkube=$(realpath "$plainkube")
# The suite's version, stamped into kubectl and e2e.test as upstream's
# release builds are (`kubectl version`, the suite's log).
version=$(cd test/conformance && go list -m -f '{{.Version}}' k8s.io/kubernetes)
minor=${version#v1.}; minor=${minor%%.*}
ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
done
# Binaries built before without the stamp are built again (the suite reads
# its own version: pod security fixtures for "v0.0" do not exist).
for bin in kubectl e2e.test; do
  if [ -x "$work/$bin" ] && ! go version -m "$work/$bin" | grep -q -- "component-base/version.gitVersion=$version"; then
    rm -f "$work/$bin"
  fi
done
# kubectl at the suite's version, for the kubectl specs and this script.
if [ ! -x "$work/kubectl" ]; then
  (cd test/conformance && nice -n 19 go build -ldflags "$ldflags" -o "$work/kubectl" k8s.io/kubernetes/cmd/kubectl)
fi
kubectl=$work/kubectl
if [ ! -x "$work/e2e.test" ]; then
  echo "conformance: building e2e.test (upstream's e2e suite; long the first time)..." >&2
  (cd test/conformance && nice -n 19 go test -vet=off -ldflags "$ldflags" -c -o "$work/e2e.test.new" . && mv "$work/e2e.test.new" "$work/e2e.test")
fi

# The ginkgo CLI runs e2e.test on several processes (PARALLEL).
ginkgo=$work/ginkgo
if [ "${PARALLEL:-1}" -gt 1 ] && [ ! -x "$ginkgo" ]; then
  (cd test/conformance && go build -o "$ginkgo" github.com/onsi/ginkgo/v2/ginkgo)
fi

run=$(mktemp -d "$work/run-$(date -u +%Y%m%dT%H%M%S)-XXXX")
data=$run/data
report=$run/report
mkdir -p "$data" "$report"
echo "conformance: run folder $run" >&2

# One real node on this host at a time (it owns port 10250, the proxy's
# nftables table and the pod bridges).
exec 9>/tmp/plainkube-e2e.lock
flock 9

# A free port for the API server.
port=
for _ in $(seq 1 50); do
  p=$((20000 + RANDOM % 20000))
  if ! ss -Htln "sport = :$p" | grep -q .; then port=$p; break; fi
done
[ -n "$port" ] || { echo "conformance: no free port found" >&2; exit 1; }

server_pid=
agent_pid=
stop_pid() {
  kill -TERM "$1"
  for _ in $(seq 1 60); do kill -0 "$1" 2>/dev/null || break; sleep 0.5; done
  kill -0 "$1" 2>/dev/null && kill -KILL "$1"
  wait "$1" 2>/dev/null
}
teardown() {
  local rc=$?
  set +e
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    # Pods first, so that their containers stop while the nodes still run.
    timeout 120 "$kubectl" --kubeconfig "$data/admin.kubeconfig" delete pods --all --all-namespaces --wait=true --timeout=90s >/dev/null 2>&1
    if [ -n "$agent_pid" ] && kill -0 "$agent_pid" 2>/dev/null; then stop_pid "$agent_pid"; fi
    kill -TERM "$server_pid"
    for _ in $(seq 1 60); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$server_pid" 2>/dev/null && kill -KILL "$server_pid"
    wait "$server_pid" 2>/dev/null
  fi
  # The pods left go first, through their containerd shims (cleanup starts
  # the node's containerd, which stops them): a shim killed before would
  # leave its containers running with nothing to stop them.
  # A containerd of the run's still running would hold the socket cleanup
  # starts its own on: it goes, its shims stay.
  for pid in $(pgrep -f -- "$data/" 2>/dev/null); do
    case "$(cat "/proc/$pid/comm" 2>/dev/null)" in containerd-shim*) ;; *) kill -KILL "$pid" 2>/dev/null ;; esac
  done
  local cleaned=1
  if [ -n "$agent_pid" ]; then
    "$plainkube" cleanup --data-dir "$data/node2" >>"$run/cleanup.log" 2>&1 || { cleaned=0; cat "$run/cleanup.log" >&2; }
  fi
  "$plainkube" cleanup --data-dir "$data" >>"$run/cleanup.log" 2>&1 || { cleaned=0; cat "$run/cleanup.log" >&2; }
  # Whatever still runs from this run's data dir.
  for pid in $(pgrep -f -- "$data/" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
  # Mounts the node left under the data dir (pods' tmpfs volumes), latest first.
  awk -v d="$data/" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r | while read -r m; do umount -l "$m"; done
  if [ "$cleaned" != 1 ]; then
    echo "conformance: cleanup failed; $data is kept: run '$plainkube cleanup --data-dir $data' (and $data/node2) again" >&2
  elif [ "${KEEP:-}" != 1 ]; then
    rm -rf "$data"
  fi
  exit "$rc"
}
trap teardown EXIT
trap 'exit 130' INT TERM

"$plainkube" server --data-dir "$data" --port "$port" --bind-address 0.0.0.0 \
  --cluster-cidr 10.150.0.0/16 --dns-upstream 127.0.0.1:9 >"$run/server.log" 2>&1 9>&- &
server_pid=$!

kubeconfig=$data/admin.kubeconfig
k() { "$kubectl" --kubeconfig "$kubeconfig" "$@"; }
ready=
for _ in $(seq 1 120); do
  if [ -f "$kubeconfig" ] && [ "$(k get --raw /readyz 2>/dev/null)" = ok ]; then ready=1; break; fi
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.5
done
[ -n "$ready" ] || { echo "conformance: server did not become ready; see $run/server.log" >&2; tail -20 "$run/server.log" >&2; exit 1; }
for _ in $(seq 1 120); do
  [ -n "$(k get nodes -o name 2>/dev/null)" ] && break
  sleep 0.5
done
k wait --for=condition=Ready node --all --timeout=120s >/dev/null

hack/conformance-images.sh "$data" "$plainkube" >"$run/images.log" 2>&1 || {
  echo "conformance: building the test images failed; see $run/images.log" >&2; tail -20 "$run/images.log" >&2; exit 1; }

if [ "${NODES:-1}" -gt 1 ]; then
  # A second node joins with the server's token, as `plainkube agent` on
  # another host would; the images go into its containerd too.
  node2="$(hostname)-2"
  "$plainkube" agent --server "https://127.0.0.1:$port" --token "$(cat "$data/join-token")" --ca-file "$data/pki/ca.crt" \
    --data-dir "$data/node2" --node-name "$node2" --port 10251 --disable-proxy --disable-dns >"$run/agent.log" 2>&1 9>&- &
  agent_pid=$!
  for _ in $(seq 1 120); do
    [ -n "$(k get node "$node2" -o name 2>/dev/null)" ] && break
    kill -0 "$agent_pid" 2>/dev/null || break
    sleep 0.5
  done
  k wait --for=condition=Ready node "$node2" --timeout=120s >/dev/null || {
    echo "conformance: the second node did not become Ready; see $run/agent.log" >&2; tail -20 "$run/agent.log" >&2; exit 1; }
  hack/conformance-images.sh "$data/node2" "$plainkube" >>"$run/images.log" 2>&1 || {
    echo "conformance: the test images for the second node failed; see $run/images.log" >&2; tail -20 "$run/images.log" >&2; exit 1; }
fi

common=(--kubeconfig "$kubeconfig" --provider=skeleton --report-dir "$report" --e2e-output-dir "$run"
  --kubectl-path "$kubectl" --repo-root "$repo/test/conformance" --disable-log-dump)
# shellcheck disable=SC2206 # E2E_ARGS is a list of flags
common+=(${E2E_ARGS:-})
[ -n "$focus" ] || focus='\[Conformance\]'

# run_specs NAME LABEL_FILTER NODES: one e2e.test run of the specs the
# label filter, FOCUS and SKIP select, on NODES Ginkgo processes (more
# than one through the ginkgo CLI), its JUnit report report/junit_NAME01.xml.
run_specs() {
  local name=$1 labels=$2 nodes=$3 rc
  local filter=(focus="$focus" label-filter="$labels" timeout=6h no-color)
  [ -z "$skip" ] || filter+=(skip="$skip")
  local cmd=()
  if [ "$nodes" -gt 1 ]; then
    cmd=("$ginkgo" "--nodes=$nodes")
    for f in "${filter[@]}"; do cmd+=("--$f"); done
    cmd+=("$work/e2e.test" -- "${common[@]}" --report-prefix "$name")
  else
    cmd=("$work/e2e.test" "${common[@]}" --report-prefix "$name" -test.timeout=0)
    for f in "${filter[@]}"; do cmd+=("--ginkgo.$f"); done
  fi
  echo "conformance: ${cmd[*]}" >&2
  echo "conformance: its output: $run/e2e-$name.log" >&2
  local start=$SECONDS
  set +e
  (cd "$run" && "${cmd[@]}") >"$run/e2e-$name.log" 2>&1 9>&-
  rc=$?
  set -e
  echo "conformance: $name specs: exit $rc after $((SECONDS - start))s" >&2
  return "$rc"
}

labels=${LABELS-Conformance}
e2e_rc=0
if [ "${PARALLEL:-1}" -gt 1 ]; then
  # As upstream's CI: what may share the cluster in parallel, then the
  # [Serial] specs alone.
  run_specs parallel "${labels:+$labels && }!Serial" "$PARALLEL" || e2e_rc=$?
  run_specs serial "${labels:+$labels && }Serial" 1 || e2e_rc=$?
else
  run_specs all "$labels" 1 || e2e_rc=$?
fi

shopt -s nullglob
reports=("$report"/junit*.xml)
if [ ${#reports[@]} -eq 0 ]; then
  echo "conformance: no JUnit report was written; the end of its output:" >&2
  tail -30 "$run"/e2e-*.log >&2
  exit 1
fi
(cd test/conformance && go run ./junitsummary "${reports[@]}") | tee "$run/summary.txt"
exit "$e2e_rc"
