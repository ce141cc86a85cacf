#!/usr/bin/env bash
# Builds the upstream binaries the tests and the quickstart run, from the Go module proxy, with
# the recipes in hack/recipes/, and caches them outside the repository keyed by version:
#   hack/kube-build.sh kubernetes 1.37.2   kube-apiserver, kube-controller-manager, kubectl
#   hack/kube-build.sh etcd 3.6.17         etcd, etcdctl, etcdutl
#   hack/kube-build.sh conformance 1.36.3  e2e.test, Kubernetes' own end-to-end test binary
#                                          (from the kubernetes recipe; built only when asked)
#   hack/kube-build.sh cluster-api 1.14.2  manager (Cluster API's core manager, the file its
#                                          image holds as /manager) and clusterctl; also the
#                                          module's provider configuration (config/core,
#                                          config/bootstrap-kubeadm), metadata.yaml, and
#                                          cert-manager's CRDs (config/cert-manager-crds)
#   hack/kube-build.sh                     every recipe in hack/recipes/
#   hack/kube-build.sh source cluster-api 1.14.2
#                                          builds nothing: the directory of the release's Go
#                                          module source (its CRDs, config/), downloaded into
#                                          the module cache when missing
# With a component and version it prints the directory holding that release's binaries; with
# none it prints one "component version directory" line per recipe.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache_root="${NESTCP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nestcp}"
export GOMODCACHE="$cache_root/gomod" GOCACHE="$cache_root/gocache" GOPATH="$cache_root/gopath"
export CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" GOTOOLCHAIN=local

die() { echo "kube-build: $*" >&2; exit 1; }

binaries() {
    case "$1" in
    kubernetes) echo kube-apiserver kube-controller-manager kubectl ;;
    etcd) echo etcd etcdctl etcdutl ;;
    conformance) echo e2e.test ;;
    cluster-api) echo manager clusterctl ;;
    *) die "unknown component '$1' (kubernetes, etcd, conformance or cluster-api)" ;;
    esac
}

# Which module a failed download names, so the error says exactly what the proxy refused.
explain_failure() {
    local log=$1 refused
    refused=$(grep -oE '(reading|verifying|downloading) [^ :]+@v[^ :]+' "$log" | sort -u | head -n 5 || true)
    tail -n 20 "$log" >&2
    if [ -n "$refused" ]; then
        die "the Go module proxy did not serve: $(echo "$refused" | tr '\n' ' ')"
    fi
    die "go build failed; the log above says why"
}

build_one() {
    local what=$1 version=$2 recipe="$here/recipes/$1-$2" bin_dir="$cache_root/$1-$2/bin" b ok=1
    [ "$what" = conformance ] && recipe="$here/recipes/kubernetes-$version"
    [ -f "$recipe/go.mod" ] || die "no recipe for $what $version (have: $(cd "$here/recipes" && ls -d */ | tr -d / | tr '\n' ' '))"
    for b in $(binaries "$what"); do [ -x "$bin_dir/$b" ] || ok=0; done
    if [ "$ok" -eq 1 ]; then
        echo "$bin_dir"
        return
    fi
    # One build of a release at a time: a second caller waits for the first, then finds it.
    mkdir -p "$cache_root"
    exec 9>"$cache_root/.build-$what-$version.lock"
    flock 9
    ok=1
    for b in $(binaries "$what"); do [ -x "$bin_dir/$b" ] || ok=0; done
    if [ "$ok" -eq 1 ]; then
        exec 9>&-
        echo "$bin_dir"
        return
    fi
    command -v go >/dev/null 2>&1 || die "go is not on PATH (Go 1.26 is needed)"
    mkdir -p "$cache_root"
    local need_kb=$((4 * 1024 * 1024)) avail_kb
    avail_kb=$(df -Pk "$cache_root" | awk 'NR == 2 { print $4 }')
    [ "$avail_kb" -ge "$need_kb" ] ||
        die "building needs about 4 GB free under $cache_root; only $((avail_kb / 1024)) MB are free. Free some space or set NESTCP_CACHE."

    local pkgs ldflags log t0
    case "$what" in
    kubernetes)
        local minor=${version#*.}
        minor=${minor%%.*}
        pkgs="k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl"
        ldflags="-s -w"
        # Stamped as a release build is, so /version and --version say what runs.
        for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
            ldflags+=" -X $p.gitVersion=v$version -X $p.gitMajor=1 -X $p.gitMinor=$minor"
            ldflags+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
        done
        ;;
    etcd)
        pkgs="./etcd go.etcd.io/etcd/etcdctl/v3 go.etcd.io/etcd/etcdutl/v3"
        ldflags="-s -w"
        ;;
    conformance)
        local minor=${version#*.}
        minor=${minor%%.*}
        ldflags="-s -w"
        for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
            ldflags+=" -X $p.gitVersion=v$version -X $p.gitMajor=1 -X $p.gitMinor=$minor"
        done
        ;;
    cluster-api)
        # Stamped as its release build is: clusterctl compares its own version with the
        # providers' metadata, and the manager logs it.
        local minor=${version#*.} p=sigs.k8s.io/cluster-api/version
        minor=${minor%%.*}
        ldflags="-s -w -X $p.gitVersion=v$version -X $p.gitMajor=1 -X $p.gitMinor=$minor"
        ldflags+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
        ;;
    esac
    log=$(mktemp)
    t0=$(date +%s)
    echo "kube-build: building $what $version ($(binaries "$what")); a cold build takes minutes" >&2
    rm -rf "$bin_dir.tmp"
    mkdir -p "$bin_dir.tmp"
    if [ "$what" = conformance ]; then
        (cd "$recipe" && go test -c -trimpath -ldflags "$ldflags" -o "$bin_dir.tmp/e2e.test" \
            k8s.io/kubernetes/test/e2e) >"$log" 2>&1 || explain_failure "$log"
    elif [ "$what" = cluster-api ]; then
        # Named as its image holds it, /manager (core/main.go would build as "core").
        (cd "$recipe" && go build -trimpath -ldflags "$ldflags" \
            -o "$bin_dir.tmp/manager" sigs.k8s.io/cluster-api/core &&
            go build -trimpath -ldflags "$ldflags" -o "$bin_dir.tmp/clusterctl" \
                sigs.k8s.io/cluster-api/cmd/clusterctl) >"$log" 2>&1 || explain_failure "$log"
        # What a release publishes besides the images comes from the same module: the
        # kustomize configuration of its components files and its clusterctl metadata.
        local mod
        mod=$(cd "$recipe" && go list -m -f '{{.Dir}}' sigs.k8s.io/cluster-api)
        mkdir -p "$bin_dir.tmp/config"
        cp -r "$mod/core/config" "$bin_dir.tmp/config/core"
        cp -r "$mod/bootstrap/kubeadm/config" "$bin_dir.tmp/config/bootstrap-kubeadm"
        cp "$mod/metadata.yaml" "$bin_dir.tmp/metadata.yaml"
        # cert-manager's CRDs, of the release this clusterctl installs by default: clusterctl
        # checks that the cert-manager API answers before it installs a provider.
        local cm_version cm_dir cm_tmp
        cm_version=$(sed -n 's/^[[:space:]]*CertManagerDefaultVersion = "\(v[0-9.]*\)"/\1/p' \
            "$mod/cmd/clusterctl/client/config/cert_manager_client.go")
        [ -n "$cm_version" ] || die "no CertManagerDefaultVersion in clusterctl's source"
        cm_tmp=$(mktemp -d)
        cm_dir=$(cd "$cm_tmp" && GOFLAGS= go mod download -json \
            "github.com/cert-manager/cert-manager@$cm_version" 2>"$log" |
            sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p') || explain_failure "$log"
        rmdir "$cm_tmp"
        [ -d "$cm_dir/deploy/crds" ] || explain_failure "$log"
        cp -r "$cm_dir/deploy/crds" "$bin_dir.tmp/config/cert-manager-crds"
        echo "$cm_version" >"$bin_dir.tmp/config/cert-manager-crds/VERSION"
        chmod -R u+w "$bin_dir.tmp/config" "$bin_dir.tmp/metadata.yaml"
    else
        # shellcheck disable=SC2086
        (cd "$recipe" && go build -trimpath -ldflags "$ldflags" -o "$bin_dir.tmp/" $pkgs) \
            >"$log" 2>&1 || explain_failure "$log"
    fi
    rm -f "$log"
    rm -rf "$bin_dir"
    mv "$bin_dir.tmp" "$bin_dir"
    echo "kube-build: $what $version built in $(($(date +%s) - t0)) s: $(du -sh "$bin_dir" | cut -f1)" >&2
    exec 9>&-
    echo "$bin_dir"
}

# module_source COMPONENT VERSION: prints the directory of the release's module source in the
# module cache, which `go mod download` fills from the Go module proxy (read-only files).
module_source() {
    local what=$1 version=$2 recipe="$here/recipes/$1-$2" mod log dir
    case "$what" in
    cluster-api) mod=sigs.k8s.io/cluster-api ;;
    *) die "source: no module source for '$what' (cluster-api)" ;;
    esac
    [ -f "$recipe/go.mod" ] || die "no recipe for $what $version"
    command -v go >/dev/null 2>&1 || die "go is not on PATH (Go 1.26 is needed)"
    mkdir -p "$cache_root"
    log=$(mktemp)
    dir=$(cd "$recipe" && go mod download -json "$mod" 2>"$log" |
        sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p') || explain_failure "$log"
    [ -n "$dir" ] && [ -d "$dir" ] || explain_failure "$log"
    rm -f "$log"
    echo "$dir"
}

if [ $# -eq 3 ] && [ "$1" = source ]; then
    module_source "$2" "$3"
    exit 0
fi
if [ $# -eq 2 ]; then
    build_one "$1" "$2"
    exit 0
fi
[ $# -eq 0 ] || die "usage: kube-build.sh [kubernetes|etcd|cluster-api VERSION] | source cluster-api VERSION"
for recipe in "$here"/recipes/kubernetes-*/ "$here"/recipes/etcd-*/ "$here"/recipes/cluster-api-*/; do
    name=$(basename "$recipe")
    what=${name%-*}
    version=${name##*-}
    echo "$what $version $(build_one "$what" "$version")"
done
