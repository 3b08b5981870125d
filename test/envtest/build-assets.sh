#!/usr/bin/env bash
# Builds the test control plane (kube-apiserver and etcd) from the Go module proxy, once per machine.
# Nothing downloads a prebuilt binary: both come from their published Go modules. The result is cached
# outside the repo, keyed by version, so only the first run on a machine compiles (~10 min on 2 cores).
# Prints the directory holding both binaries (use it as KUBEBUILDER_ASSETS). Also builds the kstatus
# helper of the GitOps tests (build-kstatus.sh) and SeaweedFS's weed for the S3 tests (../s3/build-seaweedfs.sh),
# unless given --control-plane (the demo, and a control plane started by a test, need only the two).
set -euo pipefail
ONLY_CONTROL_PLANE=false
case "${1:-}" in
  '') ;;
  --control-plane) ONLY_CONTROL_PLANE=true ;;
  *) echo "build-assets: unknown argument '$1' (--control-plane builds only kube-apiserver and etcd)" >&2; exit 2 ;;
esac

KUBE_VERSION="${KUBE_VERSION:-1.34.4}"
ETCD_VERSION="${ETCD_VERSION:-3.6.4}"
CACHE="${RUNPOD_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/runpod-operator}"
OUT="$CACHE/envtest/k8s-$KUBE_VERSION-etcd-$ETCD_VERSION"
export GOFLAGS=-mod=mod CGO_ENABLED=0 GOTOOLCHAIN=local
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

log() { echo "build-assets: $*" >&2; }

build_kube_apiserver() {
  local dir="$CACHE/build/kube-apiserver-$KUBE_VERSION" minor="${KUBE_VERSION#*.}"
  minor="${minor%%.*}"
  mkdir -p "$dir" && cd "$dir"
  # k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them with local folders;
  # a dependency's replaces are ignored, so point each at its published v0.<minor>.<patch> tag.
  local mod
  mod=$(go mod download -json "k8s.io/kubernetes@v$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  {
    echo "module local.build/kube-apiserver"
    echo
    grep -E '^go [0-9]' "$mod"
    grep -E '^godebug ' "$mod" || true
    echo
    echo "replace ("
    grep -E '^\s+k8s\.io/[^ ]+ v0\.0\.0\s*$' "$mod" | awk -v v="v0.${KUBE_VERSION#1.}" '{print "\t"$1" => "$1" "v}'
    echo ")"
  } > go.mod
  go get -tool "k8s.io/kubernetes/cmd/kube-apiserver@v$KUBE_VERSION"
  local P=k8s.io/component-base/version C=k8s.io/client-go/pkg/version V="v$KUBE_VERSION"
  go build -trimpath -o "$OUT/kube-apiserver.tmp" -ldflags "-s -w \
    -X $P.gitVersion=$V -X $P.gitMajor=1 -X $P.gitMinor=$minor -X $P.gitTreeState=clean \
    -X $C.gitVersion=$V -X $C.gitMajor=1 -X $C.gitMinor=$minor -X $C.gitTreeState=clean" \
    k8s.io/kubernetes/cmd/kube-apiserver
  mv "$OUT/kube-apiserver.tmp" "$OUT/kube-apiserver"
}

build_etcd() {
  local dir="$CACHE/build/etcd-$ETCD_VERSION"
  mkdir -p "$dir" && cd "$dir"
  # Building from our own module sidesteps the `replace` lines that make `go install` refuse etcd.
  printf 'module local.build/etcd\n\ngo 1.24.0\n' > go.mod
  go get -tool "go.etcd.io/etcd/server/v3@v$ETCD_VERSION"
  go build -trimpath -ldflags "-s -w" -o "$OUT/etcd.tmp" go.etcd.io/etcd/server/v3
  mv "$OUT/etcd.tmp" "$OUT/etcd"
}

mkdir -p "$OUT"
if [ ! -x "$OUT/kube-apiserver" ]; then
  log "building kube-apiserver v$KUBE_VERSION (first run on this machine)"
  start=$(date +%s); build_kube_apiserver; log "kube-apiserver built in $(( $(date +%s) - start ))s"
fi
if [ ! -x "$OUT/etcd" ]; then
  log "building etcd v$ETCD_VERSION (first run on this machine)"
  start=$(date +%s); build_etcd; log "etcd built in $(( $(date +%s) - start ))s"
fi
if [ "$ONLY_CONTROL_PLANE" = false ]; then
  # The kstatus helper of the GitOps tests (cached on its own; its path is not ours, so it goes nowhere).
  "$HERE/build-kstatus.sh" >/dev/null
  # SeaweedFS, the S3 tests' object store (cached on its own too).
  "$HERE/../s3/build-seaweedfs.sh" >/dev/null
fi
echo "$OUT"
