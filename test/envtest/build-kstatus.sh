#!/usr/bin/env bash
# Builds the health judges of the GitOps tests in test/kstatus from the Go module proxy, once per
# version of their sources: kstatus-judge (what sigs.k8s.io/cli-utils/pkg/kstatus/status, the library
# Flux and kpt use, computes for an object) and, beside it, argocd-lua-judge (an Argo CD health script
# run in gopher-lua as Argo CD runs it). go.mod and go.sum are committed, so every machine builds the
# same module versions. Cached outside the repo, keyed by a hash of the sources. Prints kstatus-judge's path.
set -euo pipefail

SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/../kstatus" && pwd)"
CACHE="${RUNPOD_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/runpod-operator}"
KEY=$(cat "$SRC/go.mod" "$SRC/go.sum" "$SRC/main.go" "$SRC/argocd-lua/main.go" | sha256sum | cut -c1-16)
OUT="$CACHE/kstatus/$KEY"
# readonly: the committed go.sum must already name every module; nothing here rewrites the repo.
export GOFLAGS=-mod=readonly CGO_ENABLED=0 GOTOOLCHAIN=local PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null || { echo "build-kstatus: needs Go (the go command) to build test/kstatus" >&2; exit 1; }

if [ ! -x "$OUT/kstatus-judge" ] || [ ! -x "$OUT/argocd-lua-judge" ]; then
  echo "build-kstatus: building kstatus-judge and argocd-lua-judge ($KEY)" >&2
  start=$(date +%s)
  mkdir -p "$OUT"
  go build -C "$SRC" -trimpath -ldflags "-s -w" -o "$OUT/argocd-lua-judge.tmp" ./argocd-lua
  go build -C "$SRC" -trimpath -ldflags "-s -w" -o "$OUT/kstatus-judge.tmp" .
  mv "$OUT/argocd-lua-judge.tmp" "$OUT/argocd-lua-judge"
  mv "$OUT/kstatus-judge.tmp" "$OUT/kstatus-judge"
  echo "build-kstatus: built in $(( $(date +%s) - start ))s" >&2
fi
echo "$OUT/kstatus-judge"
