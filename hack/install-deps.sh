#!/usr/bin/env bash
# Installs whatever nestcp's build, tests and local super cluster need and is missing.
# Idempotent: runs `apt-get update` at most once, and only when something is missing.
#
#   hack/install-deps.sh            build + test dependencies
#   hack/install-deps.sh --fuzz     also clang and its sanitizer/libFuzzer runtime (hack/fuzz.sh)
#   hack/install-deps.sh --image    also buildah, podman, runc and mmdebstrap (hack/image-build.sh)
#
# Kubernetes and etcd are not Debian packages here: hack/kube-build.sh builds them with Go
# (1.26 or newer, the `go` on PATH) from the Go module proxy.
set -euo pipefail

# libnghttp2-dev: the tests' fault proxy (test/support/kube_faultproxy.c) serves HTTP/2 over
# TLS, as the API server does, with nghttp2's server side; libcurl already links the library.
# prometheus: promtool checks and unit-tests the alerts of config/prometheus, and
# test_deploy_manager_rbac.sh runs the server (on a port of its own) to scrape a manager as
# the kit's ServiceMonitor says. Where systemd runs, apt also starts the packaged service on
# :9090, which nothing here needs (`systemctl disable --now prometheus`).
# python3-yaml: the shell tests read YAML.
pkgs=(
    build-essential cmake pkg-config git
    libcurl4-openssl-dev libcjson-dev libyaml-dev libssl-dev libev-dev libzstd-dev libcmocka-dev
    libnghttp2-dev
    openssl iproute2 util-linux procps curl gettext-base python3 python3-yaml prometheus
)
# clang-format: test/unit/test_format.sh checks the layout of every C file. A tool of the
# tests only, so it is added after the list the image's build packages are checked against.
pkgs+=(clang-format)
for a in "$@"; do
    case "$a" in
    --kube) ;; # accepted for older callers: building Kubernetes needs only Go now
    --fuzz) pkgs+=(clang libclang-rt-14-dev) ;;
    --image) pkgs+=(buildah podman runc mmdebstrap) ;;
    *) echo "install-deps.sh: unknown option '$a'" >&2; exit 2 ;;
    esac
done

missing=()
for p in "${pkgs[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done
# Debian's golang-go (1.19) is too old for today's Kubernetes; the machines ship Go 1.26.
go_minor=$(go env GOVERSION 2>/dev/null | sed -n 's/^go1\.\([0-9]*\).*/\1/p')
if [ -z "$go_minor" ] || [ "$go_minor" -lt 26 ]; then
    echo "install-deps.sh: Go 1.26 or newer must be the \`go\` on PATH" \
        "(found: $(go env GOVERSION 2>/dev/null || echo none)); it builds Kubernetes and etcd" >&2
    exit 1
fi
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >&2
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
