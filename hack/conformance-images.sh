#!/usr/bin/env bash
# Builds the container images upstream's conformance specs run, under the
# exact references of k8s.io/kubernetes/test/utils/image/manifest.go
# (v1.37.2), and imports them into the containerd of a running plainkube
# server's node. There is no registry: a pod with imagePullPolicy
# IfNotPresent then finds them already there.
#
#   hack/conformance-images.sh DATA_DIR [PLAINKUBE]
#
# DATA_DIR is the server's --data-dir (its node's containerd is under
# DATA_DIR/node/containerd); PLAINKUBE the plainkube binary (default
# bin/plainkube). The image trees are kept under $CONFORMANCE_DIR/images
# (default /tmp/conformance) and made again only when missing. Root.
#
# What stands in for what (upstream's images are Alpine or Debian based;
# these hold only what the specs use):
#
# - registry.k8s.io/e2e-test-images/agnhost:2.66.1 (and :2.55, the "previous"
#   agnhost some specs roll back to, the same image under both names): the
#   real agnhost, built from k8s.io/kubernetes/test/images/agnhost at the
#   suite's version (CGO_ENABLED=0), as /agnhost with the /agnhost-2 link,
#   ENTRYPOINT /agnhost and CMD pause as upstream's Dockerfile; porter's
#   /localhost.crt and /localhost.key; /uploads; user 1000
#   (user-defined-in-image) in group 50000 (group-defined-in-image).
#   Alpine's tools become Debian's busybox-static applets in /bin (sh, nc,
#   wget, ip, nslookup, ...) plus the host's curl, dig, bash (also as
#   /bin/sh, see add_bash_sh), socat, ss, getent (with an nsswitch.conf of
#   "hosts: files dns", which the DNS specs' /etc/hosts probes use) and
#   netcat-openbsd (as nc) copied with the shared libraries they load
#   (Debian's glibc builds rather than Alpine's musl ones).
# - registry.k8s.io/e2e-test-images/glibc-dns-testing:2.1.1 (Debian with
#   dig, for the DNS specs' glibc prober): the agnhost tree above, whose dig
#   and bash are Debian's glibc builds, with no entrypoint and CMD sh.
# - registry.k8s.io/e2e-test-images/nautilus:1.8 and kitten:1.8 (the
#   update-demo images: agnhost with the picture and data.json at the root,
#   CMD test-webserver, as upstream's): the agnhost tree with upstream's
#   test/images/<name>/html files, and an /etc/os-release naming itself a
#   stand-in for the Alpine Linux image (the ImageVolume spec mounts kitten
#   and reads that file for "Alpine Linux").
# - registry.k8s.io/e2e-test-images/nonroot:1.5 (upstream's is Debian's base
#   image with USER 1234): the busybox tree below, run as user 1234.
# - registry.k8s.io/e2e-test-images/busybox:1.37.0-2 (and :1.36.1-1, which a
#   few specs name directly, the same image): Debian's
#   busybox-static (1.35) with a link for each of its applets and the host's
#   bash as /bin/sh (see add_bash_sh), CMD sh.
# - registry.k8s.io/e2e-test-images/nonewprivs:1.4 (upstream's is Alpine with
#   its nnp, setuid root, as CMD): upstream's nnp program
#   (k8s.io/kubernetes/test/images/nonewprivs, built static) setuid root at
#   /usr/local/bin/nnp in a busybox tree, CMD nnp.
# - registry.k8s.io/e2e-test-images/nginx:1.27.0-2 and :1.28.0-2: busybox's
#   httpd serving /usr/share/nginx/html (an index.html) on port 80, what the
#   specs that use nginx expect of it; no nginx configuration or binary.
# - registry.k8s.io/e2e-test-images/sample-apiserver:1.29.2: k8s.io/sample-apiserver
#   at the suite's version (v0.37.2), as /sample-apiserver, its entrypoint.
# - registry.k8s.io/etcd:3.7.0-0: etcd's server v3.7.0 (test/conformance/etcd)
#   as /usr/local/bin/etcd.
# - registry.k8s.io/pause:3.10.2: plainkube's own pause image
#   (plainkube.dev/pause:3.10), tagged under upstream's name.
#
# Not provided yet: resource-consumer, volume servers; specs
# using them fail to start their pods (ErrImageNeverPull / pull errors).
set -euo pipefail
cd "$(dirname "$0")/.."

data_dir=${1:?usage: hack/conformance-images.sh DATA_DIR [PLAINKUBE]}
plainkube=${2:-bin/plainkube}
work=${CONFORMANCE_DIR:-/tmp/conformance}
images=$work/images
module=test/conformance
socket=$data_dir/node/containerd/containerd.sock

e2e_registry=registry.k8s.io/e2e-test-images
agnhost_refs=("$e2e_registry/agnhost:2.66.1" "$e2e_registry/agnhost:2.55")
busybox_refs=("$e2e_registry/busybox:1.37.0-2" "$e2e_registry/busybox:1.36.1-1")
glibc_dns_ref=$e2e_registry/glibc-dns-testing:2.1.1
nginx_refs=("$e2e_registry/nginx:1.27.0-2" "$e2e_registry/nginx:1.28.0-2")
pause_ref=registry.k8s.io/pause:3.10.2
sample_apiserver_ref=$e2e_registry/sample-apiserver:1.29.2
nonroot_ref=$e2e_registry/nonroot:1.5
nonewprivs_ref=$e2e_registry/nonewprivs:1.4
etcd_ref=registry.k8s.io/etcd:3.7.0-0

# Host tools the images copy. Debian packages, installed when missing.
need=()
[ -x /usr/bin/busybox ] && /usr/bin/busybox --list >/dev/null 2>&1 || need+=(busybox-static)
command -v curl >/dev/null || need+=(curl)
command -v dig >/dev/null || need+=(bind9-dnsutils)
command -v socat >/dev/null || need+=(socat)
command -v ss >/dev/null || need+=(iproute2)
command -v nc.openbsd >/dev/null || need+=(netcat-openbsd)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
if ldd /usr/bin/busybox >/dev/null 2>&1; then
  echo "conformance-images: /usr/bin/busybox is not static; install busybox-static" >&2
  exit 1
fi

# add_busybox ROOT: busybox-static at ROOT/bin/busybox, a link per applet.
add_busybox() {
  mkdir -p "$1/bin"
  cp /usr/bin/busybox "$1/bin/busybox"
  local a
  for a in $(/usr/bin/busybox --list); do
    [ "$a" = busybox ] || [ -e "$1/bin/$a" ] || ln -s busybox "$1/bin/$a"
  done
}

# add_dynamic ROOT BINARY...: each host binary at the same path under ROOT,
# with every shared library it loads (and the dynamic loader).
add_dynamic() {
  local root=$1 bin lib
  shift
  for bin in "$@"; do
    bin=$(command -v "$bin")
    mkdir -p "$root$(dirname "$bin")"
    rm -f "$root$bin"
    cp -L "$bin" "$root$bin"
    for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do
      mkdir -p "$root$(dirname "$lib")"
      [ -e "$root$lib" ] || cp -L "$lib" "$root$lib"
    done
  done
}

# add_bash_sh ROOT: the host's bash as /bin/sh and /bin/bash. Debian's
# busybox 1.35 sh (as dash) drops environment variables whose names are not
# shell identifiers ("data-1", which the specs' envFrom passes and `env`
# must print) and runs its own applets before what PATH finds (its nc has
# no -z or -u); upstream's busybox 1.37 and Alpine's sh do neither.
add_bash_sh() {
  add_dynamic "$1" bash
  ln -sf "$(command -v bash)" "$1/bin/sh"
  [ -e "$1/bin/bash" ] || ln -s "$(command -v bash)" "$1/bin/bash"
}

# add_base ROOT: /tmp, /etc/passwd and /etc/group.
add_base() {
  mkdir -p "$1/tmp" "$1/etc" "$1/root"
  chmod 1777 "$1/tmp"
  printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'nobody:x:65534:65534:nobody:/:/bin/false' >"$1/etc/passwd"
  printf '%s\n' 'root:x:0:' 'nogroup:x:65534:' >"$1/etc/group"
}

# new_tree NAME: a fresh ROOT for image NAME (printed), with add_base's files.
new_tree() {
  rm -rf "$images/$1.new" && mkdir -p "$images/$1.new" && add_base "$images/$1.new"
  echo "$images/$1.new"
}

# keep_tree NAME: the tree new_tree made becomes the image's.
keep_tree() {
  rm -rf "${images:?}/$1" && mv "$images/$1.new" "$images/$1"
}

build_agnhost_tree() {
  local root src
  [ -x "$work/agnhost" ] || (cd "$module" && CGO_ENABLED=0 nice -n 19 go build -o "$work/agnhost" k8s.io/kubernetes/test/images/agnhost)
  src=$(cd "$module" && go list -m -f '{{.Dir}}' k8s.io/kubernetes)/test/images/agnhost
  root=$(new_tree agnhost)
  add_busybox "$root"
  add_dynamic "$root" curl dig socat ss nc.openbsd getent
  echo 'hosts: files dns' >"$root/etc/nsswitch.conf"
  add_bash_sh "$root"
  # Alpine's netcat-openbsd (-z, -u, -v), not busybox's small nc.
  rm -f "$root/bin/nc" && ln -s /usr/bin/nc.openbsd "$root/bin/nc" && ln -s nc.openbsd "$root/usr/bin/nc"
  cp "$work/agnhost" "$root/agnhost"
  ln -s agnhost "$root/agnhost-2"
  cp "$src/porter/localhost.crt" "$src/porter/localhost.key" "$root/"
  chmod 0644 "$root/localhost.crt" "$root/localhost.key"
  mkdir -p "$root/uploads" "$root/home/user-defined-in-image"
  echo 'user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh' >>"$root/etc/passwd"
  printf '%s\n' 'user-defined-in-image:x:1000:' 'group-defined-in-image:x:50000:user-defined-in-image' >>"$root/etc/group"
  keep_tree agnhost
}

# build_demo_tree NAME: the agnhost tree with upstream's update-demo files
# of test/images/NAME/html (NAME.jpg, data.json) at the root.
build_demo_tree() {
  local root html
  html=$(cd "$module" && go list -m -f '{{.Dir}}' k8s.io/kubernetes)/test/images/$1/html
  rm -rf "$images/$1.new" && cp -a "$images/agnhost" "$images/$1.new"
  root=$images/$1.new
  cp "$html"/* "$root/" && chmod 0644 "$root"/*.jpg "$root"/*.json
  printf '%s\n' 'NAME="plainkube stand-in for Alpine Linux"' 'ID=plainkube-stand-in' \
    'PRETTY_NAME="plainkube stand-in for the Alpine Linux based e2e image '"$1"'"' >"$root/etc/os-release"
  keep_tree "$1"
}

build_busybox_tree() {
  local root
  root=$(new_tree busybox)
  add_busybox "$root"
  add_bash_sh "$root"
  keep_tree busybox
}

build_nonewprivs_tree() {
  local root
  [ -x "$work/nnp" ] || (cd "$module" && CGO_ENABLED=0 nice -n 19 go build -o "$work/nnp" k8s.io/kubernetes/test/images/nonewprivs)
  root=$(new_tree nonewprivs)
  add_busybox "$root"
  mkdir -p "$root/usr/local/bin"
  cp "$work/nnp" "$root/usr/local/bin/nnp"
  chmod 4755 "$root/usr/local/bin/nnp"
  keep_tree nonewprivs
}

build_nginx_tree() {
  local root
  root=$(new_tree nginx)
  add_busybox "$root"
  mkdir -p "$root/usr/share/nginx/html"
  echo '<!DOCTYPE html><html><head><title>Welcome to nginx!</title></head><body><h1>Welcome to nginx!</h1></body></html>' \
    >"$root/usr/share/nginx/html/index.html"
  keep_tree nginx
}

build_sample_apiserver_tree() {
  local root
  [ -x "$work/sample-apiserver" ] || (cd "$module" && CGO_ENABLED=0 nice -n 19 go build -o "$work/sample-apiserver" k8s.io/sample-apiserver)
  root=$(new_tree sample-apiserver)
  cp "$work/sample-apiserver" "$root/sample-apiserver"
  keep_tree sample-apiserver
}

build_etcd_tree() {
  local root
  [ -x "$work/etcd" ] || (cd "$module" && CGO_ENABLED=0 nice -n 19 go build -o "$work/etcd" ./etcd)
  root=$(new_tree etcd)
  add_busybox "$root"
  mkdir -p "$root/usr/local/bin"
  cp "$work/etcd" "$root/usr/local/bin/etcd"
  keep_tree etcd
}

# trees_version changes when a tree's contents do: the trees made before
# are built again.
trees_version=3
mkdir -p "$images"
if [ "$(cat "$images/version" 2>/dev/null)" != "$trees_version" ]; then
  rm -rf "${images:?}"/*
  echo "$trees_version" >"$images/version"
fi
[ -d "$images/agnhost" ] || build_agnhost_tree
[ -d "$images/busybox" ] || build_busybox_tree
for demo in nautilus kitten; do
  [ -d "$images/$demo" ] || build_demo_tree "$demo"
done
[ -d "$images/nginx" ] || build_nginx_tree
[ -d "$images/nonewprivs" ] || build_nonewprivs_tree
[ -d "$images/sample-apiserver" ] || build_sample_apiserver_tree
[ -d "$images/etcd" ] || build_etcd_tree

for ref in "${agnhost_refs[@]}"; do
  "$plainkube" image build --data-dir "$data_dir" --tag "$ref" --dir "$images/agnhost" --entrypoint /agnhost --cmd pause
done
"$plainkube" image build --data-dir "$data_dir" --tag "$glibc_dns_ref" --dir "$images/agnhost" --cmd sh
for demo in nautilus kitten; do
  "$plainkube" image build --data-dir "$data_dir" --tag "$e2e_registry/$demo:1.8" --dir "$images/$demo" --entrypoint /agnhost --cmd test-webserver
done
for ref in "${busybox_refs[@]}"; do
  "$plainkube" image build --data-dir "$data_dir" --tag "$ref" --dir "$images/busybox" --cmd sh
done
"$plainkube" image build --data-dir "$data_dir" --tag "$nonroot_ref" --dir "$images/busybox" --cmd sh --user 1234
"$plainkube" image build --data-dir "$data_dir" --tag "$nonewprivs_ref" --dir "$images/nonewprivs" --cmd nnp
for ref in "${nginx_refs[@]}"; do
  "$plainkube" image build --data-dir "$data_dir" --tag "$ref" --dir "$images/nginx" \
    --entrypoint "/bin/httpd -f -p 80 -h /usr/share/nginx/html"
done
"$plainkube" image build --data-dir "$data_dir" --tag "$sample_apiserver_ref" --dir "$images/sample-apiserver" --entrypoint /sample-apiserver
"$plainkube" image build --data-dir "$data_dir" --tag "$etcd_ref" --dir "$images/etcd" --entrypoint /usr/local/bin/etcd
# The node imports its pause image when its containerd starts.
ctr --address "$socket" --namespace k8s.io images tag --force plainkube.dev/pause:3.10 "$pause_ref"
