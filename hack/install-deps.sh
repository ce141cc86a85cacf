#!/usr/bin/env bash
# Installs whatever nestcp's build, tests and local super cluster need and is missing.
# Idempotent: runs `apt-get update` at most once, and only when something is missing.
#
#   hack/install-deps.sh            build + test dependencies
#   hack/install-deps.sh --kube     also what building Kubernetes from source needs
set -euo pipefail

pkgs=(
    build-essential cmake pkg-config git
    libcurl4-openssl-dev libcjson-dev libyaml-dev libssl-dev libev-dev libcmocka-dev
    openssl etcd-server etcd-client iproute2 util-linux procps curl gettext-base python3
)
for a in "$@"; do
    case "$a" in
    --kube) pkgs+=(golang-go rsync dpkg-dev golang-github-modern-go-reflect2-dev) ;;
    *) echo "install-deps.sh: unknown option '$a'" >&2; exit 2 ;;
    esac
done

missing=()
for p in "${pkgs[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done
# kubectl is not a Debian package in bookworm; the machines ship one.
if ! command -v kubectl >/dev/null 2>&1; then
    echo "install-deps.sh: kubectl is not on PATH; install it (any version >= 1.20) and retry" >&2
    exit 1
fi
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >&2
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
