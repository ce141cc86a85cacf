#!/usr/bin/env bash
# Writes the build recipe (go.mod, go.sum) for one upstream release into hack/recipes/:
#   hack/recipes/new.sh kubernetes 1.37.2
#   hack/recipes/new.sh etcd 3.6.17
#   hack/recipes/new.sh cluster-api 1.14.2
# Run by a maintainer when a new patch release is adopted; hack/kube-build.sh only reads recipes.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
what=${1:?usage: new.sh kubernetes|etcd|cluster-api VERSION}
version=${2:?usage: new.sh kubernetes|etcd|cluster-api VERSION}
cache_root="${NESTCP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nestcp}"
export GOMODCACHE="$cache_root/gomod" GOCACHE="$cache_root/gocache" GOFLAGS=-mod=mod
dir="$here/$what-$version"
mkdir -p "$dir"
cd "$dir"
rm -f go.mod go.sum

case "$what" in
kubernetes)
    staging="v0.${version#1.}"
    go mod init nestcp.invalid/recipe/kubernetes >/dev/null 2>&1
    go mod edit -go=1.26.0 -require="k8s.io/kubernetes@v$version"
    go mod download "k8s.io/kubernetes@v$version"
    # kubernetes' own go.mod points every staging module at ./staging, which the module zip
    # does not hold; point each at its published release of the same minor and patch.
    sed -n '/^replace (/,/^)/p' "$GOMODCACHE/k8s.io/kubernetes@v$version/go.mod" |
        awk '$3 ~ /^\.\/staging/ { print $1 }' |
        while read -r mod; do go mod edit -replace="$mod=$mod@$staging"; done
    for tool in kube-apiserver kube-controller-manager kubectl; do
        go mod edit -tool="k8s.io/kubernetes/cmd/$tool"
    done
    ;;
etcd)
    go mod init nestcp.invalid/recipe/etcd >/dev/null 2>&1
    go mod edit -go=1.26.0
    mkdir -p etcd
    cat >etcd/main.go <<'GO'
// The etcd server, as etcd's own release builds it: etcdmain.Main behind a main.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
    for mod in server etcdctl etcdutl; do
        go mod edit -require="go.etcd.io/etcd/$mod/v3@v$version"
    done
    go mod edit -tool=go.etcd.io/etcd/etcdctl/v3 -tool=go.etcd.io/etcd/etcdutl/v3
    ;;
cluster-api)
    go mod init nestcp.invalid/recipe/cluster-api >/dev/null 2>&1
    go mod edit -go=1.26.0 -require="sigs.k8s.io/cluster-api@v$version"
    # Its go.mod points sigs.k8s.io/cluster-api/api at ./api, a module of its own that the
    # root module's zip does not hold: use the published release of the same version.
    go mod edit -replace="sigs.k8s.io/cluster-api/api=sigs.k8s.io/cluster-api/api@v$version"
    # The core manager (core/main.go) and clusterctl.
    go mod edit -tool=sigs.k8s.io/cluster-api/core -tool=sigs.k8s.io/cluster-api/cmd/clusterctl
    ;;
*)
    echo "new.sh: unknown component '$what' (kubernetes, etcd or cluster-api)" >&2
    exit 2
    ;;
esac
go mod tidy
if [ "$what" = kubernetes ]; then
    # The sums of Kubernetes' own e2e test binary's dependencies (hack/kube-build.sh
    # conformance), which tidy does not keep: they are tests of a dependency.
    go list -deps -test k8s.io/kubernetes/test/e2e >/dev/null
fi
echo "$dir"
