#!/usr/bin/env bash
# Builds the local control plane from pinned Go modules into bin/ (or
# $DOVETAIL_BIN_DIR): etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl, kwok and kwok's stage configuration. Each component is
# skipped when bin/ already holds it at the pinned version (a stamp file
# records module version + Go version). The pins live in
# hack/controlplane/{kubernetes,etcd,kwok}/go.mod, one module each because
# etcd 3.6's server and Kubernetes 1.36 need different etcd client versions.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin_dir=${DOVETAIL_BIN_DIR:-$root/bin}
mkdir -p "$bin_dir"
bin_dir=$(cd "$bin_dir" && pwd)
go_version=$(go env GOVERSION)

log() { echo "build-controlplane: $*" >&2; }

# module_version DIR MODULE prints the version of MODULE pinned in DIR/go.mod.
module_version() {
  (cd "$1" && go list -m -f '{{.Version}}' "$2")
}

# up_to_date STAMP WANT [FILES...] is true when STAMP holds WANT and every file exists.
up_to_date() {
  local stamp=$1 want=$2; shift 2
  [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]] || return 1
  for f in "$@"; do [[ -x "$f" || -f "$f" ]] || return 1; done
}

build_kubernetes() {
  local dir=$root/hack/controlplane/kubernetes
  local version; version=$(module_version "$dir" k8s.io/kubernetes)
  local want="k8s.io/kubernetes $version $go_version"
  local stamp=$bin_dir/.kubernetes.stamp
  if up_to_date "$stamp" "$want" "$bin_dir/kube-apiserver" "$bin_dir/kube-controller-manager" "$bin_dir/kube-scheduler" "$bin_dir/kubectl"; then
    log "kube-apiserver, kube-controller-manager, kube-scheduler, kubectl $version: up to date"
    return
  fi
  local minor=${version#v1.}; minor=${minor%%.*}
  local ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=$version"
  log "building kube-apiserver, kube-controller-manager, kube-scheduler, kubectl $version (first build takes several minutes)"
  (cd "$dir" && go build -trimpath -ldflags "$ldflags" -o "$bin_dir/" \
    k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler \
    k8s.io/kubernetes/cmd/kubectl)
  echo "$want" > "$stamp"
}

build_etcd() {
  local dir=$root/hack/controlplane/etcd
  local version; version=$(module_version "$dir" go.etcd.io/etcd/server/v3)
  local want="go.etcd.io/etcd/server/v3 $version $go_version"
  local stamp=$bin_dir/.etcd.stamp
  if up_to_date "$stamp" "$want" "$bin_dir/etcd"; then
    log "etcd $version: up to date"
    return
  fi
  log "building etcd $version"
  (cd "$dir" && go build -trimpath -ldflags "-s -w" -o "$bin_dir/etcd" go.etcd.io/etcd/server/v3)
  echo "$want" > "$stamp"
}

build_kwok() {
  local dir=$root/hack/controlplane/kwok
  local version; version=$(module_version "$dir" sigs.k8s.io/kwok)
  local want="sigs.k8s.io/kwok $version $go_version"
  local stamp=$bin_dir/.kwok.stamp
  if up_to_date "$stamp" "$want" "$bin_dir/kwok" "$bin_dir/kwok-stages.yaml"; then
    log "kwok $version: up to date"
    return
  fi
  log "building kwok $version"
  (cd "$dir" && go build -trimpath -ldflags "-s -w" -o "$bin_dir/kwok" sigs.k8s.io/kwok/cmd/kwok)
  (cd "$dir" && go run ./stages > "$bin_dir/kwok-stages.yaml.tmp")
  mv "$bin_dir/kwok-stages.yaml.tmp" "$bin_dir/kwok-stages.yaml"
  echo "$want" > "$stamp"
}

build_etcd
build_kubernetes
build_kwok
log "binaries are in $bin_dir"
