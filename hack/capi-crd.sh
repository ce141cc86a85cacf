#!/usr/bin/env bash
# Prints Cluster API's own Cluster CRD, as the core components file of its release holds it, for
# trying nestcp's Cluster API shape (config/samples/capn-cluster.yaml) where Cluster API is not
# installed; the tests install it the same way (test/support/crds.sh):
#
#   hack/capi-crd.sh | kubectl apply -f -        # without Cluster API only
#   hack/capi-crd.sh 1.14.2                      # a release with a recipe in hack/recipes/
#
# It is kustomized from the release's module source (hack/kube-build.sh source, from the Go
# module proxy into the module cache when missing), so it needs Go and kubectl. It serves
# v1beta1 and v1beta2, stores v1beta2 and converts through Cluster API's webhook: without
# Cluster API running, only v1beta2 Clusters can be created and read.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
version=${1:-}
if [ -z "$version" ]; then
    version=$(cd "$here/recipes" && ls -d cluster-api-*/ | sed 's|^cluster-api-||; s|/$||' | sort -V | tail -n 1)
fi
[ -n "$version" ] || { echo "capi-crd: no Cluster API recipe in hack/recipes/" >&2; exit 1; }
mod=$("$here/kube-build.sh" source cluster-api "$version")
kubectl kustomize "$mod/core/config/default" |
    awk 'BEGIN { RS = "\n---\n" }
         /(^|\n)kind: CustomResourceDefinition\n/ && /\n  name: clusters\.cluster\.x-k8s\.io\n/ {
             print "---"; print; n++ }
         END { if (n != 1) { print "capi-crd: no Cluster CRD in Cluster API'"'"'s core components" > "/dev/stderr"; exit 1 } }'
