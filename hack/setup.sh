#!/usr/bin/env bash
# Sets up this machine for `make demo` and `make test` (Debian, as root), doing only what is missing:
#   packages  the Debian packages below (apt-get)
#   node      node_modules (`npm ci`) when it is missing or differs from package-lock.json
#   envtest   kube-apiserver + etcd, and the tests' kstatus helper and SeaweedFS, built once per machine
#             from the Go module proxy and cached
#   control-plane  only kube-apiserver + etcd (what `make demo` needs)
# `hack/setup.sh` does root, packages, node and envtest; `hack/setup.sh node` only one. Messages go to
# stderr, prefixed "setup:".
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive PATH="$PATH:/usr/local/go/bin"

# The one list of the Debian packages the project needs: the simulator's pods (sshd, socat relays,
# namespaces from util-linux, ip from iproute2, a POSIX sh, tar and the coreutils its bootstrap runs),
# the tests (ssh, curl, procps), the watchdog's fallback HTTP clients (wget, python3), the Argo CD health check's tests (lua5.4), make lint's shellcheck, and make itself.
PACKAGES=(make openssh-server openssh-client socat curl wget python3 iproute2 util-linux dash tar coreutils findutils procps lua5.4 shellcheck)

say() { echo "setup: $*" >&2; }
fail() { echo "setup: $*" >&2; exit 1; }

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

setup_packages() {
  command -v dpkg-query >/dev/null && command -v apt-get >/dev/null ||
    fail "this is not a Debian machine (no dpkg-query/apt-get): install by hand ${PACKAGES[*]}, then run again"
  local missing=() package
  for package in "${PACKAGES[@]}"; do installed "$package" || missing+=("$package"); done
  # npm (with Debian's Node.js) only installs the pinned Node 24 from the npm registry: any npm will do.
  command -v npm >/dev/null || missing+=(npm)
  [ "${#missing[@]}" -eq 0 ] && return
  [ "$(id -u)" -eq 0 ] || fail "missing Debian packages: ${missing[*]}. Installing them needs root: run as root, or: sudo apt-get install ${missing[*]}"
  say "installing Debian packages: ${missing[*]}"
  local log
  log=$(mktemp)
  if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
    echo "setup: could not install the Debian packages ${missing[*]}; apt-get said:" >&2
    grep -E '^(E|W):' "$log" >&2 || tail -n 5 "$log" >&2
    rm -f "$log"
    exit 1
  fi
  rm -f "$log"
  for package in "${missing[@]}"; do
    [ "$package" = npm ] && continue
    installed "$package" || fail "apt-get finished but $package is still not installed"
  done
}

# npm writes node_modules/.package-lock.json after every install; node_modules is current when it
# holds exactly the packages (path, version, integrity) of package-lock.json, less optional ones that
# do not fit this platform.
node_modules_current() {
  [ -f node_modules/.package-lock.json ] && [ -x node_modules/.bin/node ] || return 1
  node -e '
    const fs = require("fs");
    const wanted = JSON.parse(fs.readFileSync("package-lock.json", "utf8")).packages;
    const have = JSON.parse(fs.readFileSync("node_modules/.package-lock.json", "utf8")).packages;
    const key = (p) => `${p.version}|${p.integrity ?? p.resolved ?? ""}`;
    const differs = Object.keys(wanted).filter((name) => name !== "")
      .filter((name) => (have[name] ? key(have[name]) !== key(wanted[name]) : !wanted[name].optional));
    const extra = Object.keys(have).filter((name) => !wanted[name]);
    process.exit(differs.length + extra.length === 0 ? 0 : 1);
  ' 2>/dev/null
}

setup_node() {
  command -v npm >/dev/null || fail "npm is not installed: run 'hack/setup.sh packages' as root (Debian package npm)"
  node_modules_current && return
  say "installing node_modules (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error >&2 || fail "npm ci failed (see above)"
}

# $1: --control-plane for kube-apiserver + etcd only.
setup_envtest() {
  # Like controller-runtime's envtest: given binaries, or a real cluster, need no build.
  if [ "${USE_EXISTING_CLUSTER:-}" = true ] || [ -n "${KUBEBUILDER_ASSETS:-}" ] || { [ -n "${TEST_ASSET_KUBE_APISERVER:-}" ] && [ -n "${TEST_ASSET_ETCD:-}" ]; }; then
    return
  fi
  command -v kubectl >/dev/null || fail "kubectl is not on PATH: the tests and the demo drive the API server with the real kubectl; install it (it is not a Debian package)"
  # Cached: prints the directory at once. Else it builds (and says so), which needs Go.
  local dir
  if ! dir=$(bash test/envtest/build-assets.sh "$@"); then
    command -v go >/dev/null || fail "kube-apiserver, etcd and SeaweedFS are built from the Go module proxy and need Go (>= 1.24; SeaweedFS >= 1.26.6) on PATH; or set KUBEBUILDER_ASSETS to a directory holding both"
    fail "building kube-apiserver/etcd failed (see above)"
  fi
  [ -x "$dir/kube-apiserver" ] && [ -x "$dir/etcd" ] || fail "no kube-apiserver/etcd in $dir"
}

setup_root() {
  # Simulated pods are processes in their own Linux namespaces: the demo and the tests need root.
  [ "$(id -u)" -eq 0 ] || fail "the demo and the tests need root (the Runpod simulator's pods run in their own Linux namespaces): run as root"
}

steps=("$@")
[ "${#steps[@]}" -gt 0 ] || steps=(root packages node envtest)
for step in "${steps[@]}"; do
  case "$step" in
    root) setup_root ;;
    packages) setup_packages ;;
    node) setup_node ;;
    envtest) setup_envtest ;;
    control-plane) setup_envtest --control-plane ;;
    *) fail "unknown step '$step' (root, packages, node, envtest, control-plane)" ;;
  esac
done
