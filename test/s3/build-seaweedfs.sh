#!/usr/bin/env bash
# Builds SeaweedFS's `weed` (the real S3-compatible object store of the S3 tests) from the Go module
# proxy, once per machine. Nothing downloads a prebuilt binary. `go install` refuses the module because
# its go.mod has replace directives, so the module is downloaded, copied to a writable directory, and
# built in place (its replaces then apply). Cached outside the repo, keyed by version, beside the
# envtest assets. Prints the path of `weed`.
set -euo pipefail

SEAWEEDFS_VERSION="${SEAWEEDFS_VERSION:-v0.0.0-20261109003541-7506e5f91cd6}"
MODULE=github.com/seaweedfs/seaweedfs
CACHE="${RUNPOD_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/runpod-operator}"
OUT="$CACHE/seaweedfs/$SEAWEEDFS_VERSION"
export GOFLAGS=-mod=mod CGO_ENABLED=0 GOTOOLCHAIN="${GOTOOLCHAIN:-local}" PATH="$PATH:/usr/local/go/bin"

log() { echo "build-seaweedfs: $*" >&2; }

build_weed() {
  command -v go >/dev/null || { log "needs Go (the go command) to build SeaweedFS"; exit 1; }
  local src
  src=$(go mod download -json "$MODULE@$SEAWEEDFS_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  [ -n "$src" ] || { log "go mod download named no directory for $MODULE@$SEAWEEDFS_VERSION"; exit 1; }
  # The module cache is read-only and `go build` may update go.sum: build in a writable copy, one per
  # build (two test runs on a new machine may build at once; the last mv wins, both are the same).
  mkdir -p "$CACHE/build" "$OUT"
  BUILD_DIR=$(mktemp -d "$CACHE/build/seaweedfs-XXXXXX")
  trap 'rm -rf "$BUILD_DIR"' EXIT
  cp -r "$src/." "$BUILD_DIR" && chmod -R u+w "$BUILD_DIR"
  go build -C "$BUILD_DIR" -trimpath -ldflags "-s -w" -o "$BUILD_DIR/weed.bin" ./weed
  mv "$BUILD_DIR/weed.bin" "$OUT/weed"
}

if [ ! -x "$OUT/weed" ]; then
  log "building weed $SEAWEEDFS_VERSION (first run on this machine; takes minutes)"
  start=$(date +%s); build_weed; log "weed built in $(( $(date +%s) - start ))s"
fi
echo "$OUT/weed"
