#!/usr/bin/env bash
# Builds kube-apiserver and kube-controller-manager 1.20.2 from Debian's `kubernetes` source
# package, offline, with Debian's Go, and caches the two binaries outside the repository.
# Prints the directory holding the binaries. Called by `hack/kube-env.sh build`.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
kube_src_version="1.20.5+really1.20.2-1.1+deb12u1"
cache_root="${NESTCP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nestcp}"
bin_dir="$cache_root/kube-$kube_src_version/bin"

if [ -x "$bin_dir/kube-apiserver" ] && [ -x "$bin_dir/kube-controller-manager" ]; then
    echo "$bin_dir"
    exit 0
fi

"$here/install-deps.sh" --kube

mkdir -p "$cache_root"
need_kb=$((3 * 1024 * 1024))
avail_kb=$(df -Pk "$cache_root" | awk 'NR == 2 { print $4 }')
if [ "$avail_kb" -lt "$need_kb" ]; then
    echo "kube-build: building Kubernetes needs about 3 GB free under $cache_root;" \
        "only $((avail_kb / 1024)) MB are free. Free some space or set NESTCP_CACHE." >&2
    exit 1
fi

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

# Source entries: a copy of the machine's own deb822 sources with Types: deb-src, so no mirror
# host is written into this repository and the machine's file stays as it was.
src_list=/etc/apt/sources.list.d/nestcp-deb-src.sources
if [ ! -f "$src_list" ]; then
    if [ ! -f /etc/apt/sources.list.d/debian.sources ]; then
        echo "kube-build: /etc/apt/sources.list.d/debian.sources not found;" \
            "enable deb-src entries for bookworm by hand and retry" >&2
        exit 1
    fi
    sed 's/^Types:.*/Types: deb-src/' /etc/apt/sources.list.d/debian.sources |
        $sudo tee "$src_list" >/dev/null
    $sudo apt-get update -qq >&2
fi

work="$cache_root/kube-src"
rm -rf "$work"
mkdir -p "$work"
cd "$work"
echo "kube-build: fetching Debian source package kubernetes=$kube_src_version" >&2
apt-get source -qq --download-only "kubernetes=$kube_src_version" >&2
dpkg-source -x --skip-patches kubernetes_*.dsc src >/dev/null 2>&1 ||
    dpkg-source -x kubernetes_*.dsc src >&2
cd src

# Required fix: reflect2 v1.0.1 crashes kube-apiserver built with Go >= 1.18 the first time a
# custom resource is written; use Debian's 1.0.2.
reflect2=/usr/share/gocode/src/github.com/modern-go/reflect2
rm -rf vendor/github.com/modern-go/reflect2
mkdir -p vendor/github.com/modern-go/reflect2
cp -r "$reflect2"/. vendor/github.com/modern-go/reflect2/
rm -rf vendor/github.com/modern-go/reflect2/.git vendor/github.com/modern-go/reflect2/debian
sed -i 's#^\(\# github.com/modern-go/reflect2\) v1.0.1#\1 v1.0.2#' vendor/modules.txt
sed -i 's#\(github.com/modern-go/reflect2\) v1.0.1#\1 v1.0.2#' go.mod

mkdir -p .go/src/k8s.io
ln -sfn "$PWD" .go/src/k8s.io/kubernetes
echo "kube-build: building kube-apiserver and kube-controller-manager (about 8 minutes on 2 cores)" >&2
GOPATH="$PWD/.go" GOCACHE="$work/gocache" CGO_ENABLED=0 \
    make WHAT="cmd/kube-apiserver cmd/kube-controller-manager" >&2

out=_output/local/bin/linux/amd64
[ -d "$out" ] || out=$(dirname "$(find _output -name kube-apiserver -type f | head -n 1)")
mkdir -p "$bin_dir.tmp"
cp "$out/kube-apiserver" "$out/kube-controller-manager" "$bin_dir.tmp/"
rm -rf "$bin_dir"
mv "$bin_dir.tmp" "$bin_dir"
cd "$cache_root"
rm -rf "$work"
echo "$bin_dir"
