#!/usr/bin/env bash
# Build kube-apiserver and etcd from their Go modules into a per-version cache.
#
# usage: hack/envtest-assets.sh            prints the asset directory on its last line
# env:   ENVTEST_K8S_VERSION (default v1.36.3), ENVTEST_ETCD_VERSION (default v3.6.16),
#        ENVTEST_ASSETS_CACHE (default ~/.cache/reconcilekit/envtest),
#        KUBEBUILDER_ASSETS (when set and it holds both binaries, nothing is built).
#
# Idempotent: a cached binary that reports the wanted version is kept as it is.
# k8s.io/kubernetes pins its staging modules at v0.0.0 behind local replaces, so
# `go install` refuses it; a throw-away wrapper module replaces each with its
# published v0.<minor>.<patch> tag and declares the command as a tool.
set -euo pipefail

KVER="${ENVTEST_K8S_VERSION:-v1.36.3}"
EVER="${ENVTEST_ETCD_VERSION:-v3.6.16}"
CACHE="${ENVTEST_ASSETS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/reconcilekit/envtest}"

say() { printf 'envtest-assets: %s\n' "$*" >&2; }
die() { printf 'envtest-assets: error: %s\n' "$*" >&2; exit 1; }

if [[ -n "${KUBEBUILDER_ASSETS:-}" ]]; then
  if [[ -x "$KUBEBUILDER_ASSETS/kube-apiserver" && -x "$KUBEBUILDER_ASSETS/etcd" ]]; then
    say "using KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS"
    echo "$KUBEBUILDER_ASSETS"; exit 0
  fi
  die "KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS lacks kube-apiserver or etcd"
fi

OUT="$CACHE/k8s-$KVER-etcd-$EVER"
mkdir -p "$OUT"

# Capture --version first: `binary | grep -q` under pipefail fails at random when grep exits
# before the binary has written its last line (SIGPIPE, exit 141), which rebuilt etcd.
apiserver_ok() { local v; v="$("$OUT/kube-apiserver" --version 2>/dev/null)" && grep -qx "Kubernetes ${KVER}" <<<"$v"; }
etcd_ok() { local v; v="$("$OUT/etcd" --version 2>/dev/null)" && grep -q "etcd Version: ${EVER#v}" <<<"$v"; }

if apiserver_ok && etcd_ok; then
  say "cached: $OUT"; echo "$OUT"; exit 0
fi

command -v go >/dev/null 2>&1 || die "Go is not installed (need Go >= 1.26 to build kube-apiserver ${KVER})"
export GOTOOLCHAIN=local CGO_ENABLED=0
WORK="$(mktemp -d)"; trap 'rm -rf "$WORK"' EXIT

probe_proxy() {
  go mod download -json "$1" >"$WORK/dl.json" 2>"$WORK/dl.err" \
    || die "the Go module proxy did not serve $1: $(tail -n1 "$WORK/dl.err")"
}

if ! apiserver_ok; then
  say "building kube-apiserver ${KVER} (about 8 minutes cold on 2 cores)"
  mkdir -p "$WORK/apiserver"; cd "$WORK/apiserver"
  probe_proxy "k8s.io/kubernetes@${KVER}"
  KMOD="$(python3 -c 'import json,sys;print(json.load(open(sys.argv[1]))["GoMod"])' "$WORK/dl.json")"
  MP="${KVER#v1.}"; SVER="v0.${MP}"; MINOR="${MP%%.*}"
  GOVER="$(awk '$1=="go"{print $2; exit}' "$KMOD")"
  { printf 'module envtest.invalid/kube-apiserver-build\n\ngo %s\n\n' "$GOVER"
    grep -E '^godebug ' "$KMOD" || true; } > go.mod
  for m in $(awk '$1 ~ /^k8s\.io\// && $2=="v0.0.0" {print $1}' "$KMOD" | sort -u); do
    go mod edit "-replace=${m}=${m}@${SVER}"
  done
  say "resolving modules"
  go get -tool "k8s.io/kubernetes/cmd/kube-apiserver@${KVER}" 2>&1 | tail -n 3 >&2
  go mod tidy
  LDF="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    LDF+=" -X ${p}.gitVersion=${KVER} -X ${p}.gitMajor=1 -X ${p}.gitMinor=${MINOR}"
    LDF+=" -X ${p}.gitTreeState=clean -X ${p}.buildDate=1970-01-01T00:00:00Z"
  done
  say "compiling kube-apiserver"
  go build -trimpath -tags selinux,notest,grpcnotrace -ldflags "$LDF" \
    -o "$OUT/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver
  mv "$OUT/kube-apiserver.tmp" "$OUT/kube-apiserver"
  apiserver_ok || die "built kube-apiserver does not report ${KVER}"
fi

if ! etcd_ok; then
  say "building etcd ${EVER} (about 1 minute cold)"
  mkdir -p "$WORK/etcd"; cd "$WORK/etcd"
  probe_proxy "go.etcd.io/etcd/server/v3@${EVER}"
  printf 'module envtest.invalid/etcd-build\n\ngo 1.24.0\n' > go.mod
  go get -tool "go.etcd.io/etcd/server/v3@${EVER}" 2>&1 | tail -n 3 >&2
  go mod tidy
  go build -trimpath -ldflags "-s -w" -o "$OUT/etcd.tmp" go.etcd.io/etcd/server/v3
  mv "$OUT/etcd.tmp" "$OUT/etcd"
  etcd_ok || die "built etcd does not report ${EVER}"
fi

say "ready: $("$OUT/kube-apiserver" --version), $("$OUT/etcd" --version | head -n1)"
echo "$OUT"
