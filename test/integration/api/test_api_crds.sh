#!/usr/bin/env bash
# The generated CRDs load into the real apiserver (1.37, apiextensions.k8s.io/v1) and do what
# users rely on:
#   - every CRD is established and structural; `kubectl explain` documents the fields;
#   - the samples apply; `kubectl get ncp` shows the printer columns, filled from a /status write;
#   - CAPN's templates/cluster-template.yaml (v1alpha4, variables filled) applies unchanged but
#     for its Cluster, which Cluster API serves at v1beta2 (its own CRD, without its conversion
#     webhook), and reads back as v1beta1 with the schema defaults applied;
#   - the schema rejects what it should (etcd replicas 9, an unknown keyAlgorithm).
# The CRDs stay installed afterwards (applying them is idempotent); the test namespace is removed.
set -euo pipefail
: "${KUBECONFIG:?KUBECONFIG must point at the super cluster}"
: "${NESTCP_SOURCE_DIR:?}"

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

src=$NESTCP_SOURCE_DIR
ns=api-crds-$$
kubectl() { command kubectl --request-timeout=30s "$@"; }
status_file=$(mktemp)
trap 'rm -f "$status_file"; kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true' EXIT

# --- the CRDs ---
. "$src/test/support/crds.sh"
crds_install || fail "the CRDs are not established"
# Discovery (and kubectl's cache of it) follows Established by a moment; wait until every
# resource can be listed, in both versions.
for r in nestedclusters.v1alpha4.infrastructure.cluster.x-k8s.io \
    nestedclusters.v1beta1.infrastructure.cluster.x-k8s.io \
    nestedcontrolplanes.v1alpha4.controlplane.cluster.x-k8s.io \
    nestedcontrolplanes.v1beta1.controlplane.cluster.x-k8s.io \
    nestedetcds.v1alpha4.controlplane.cluster.x-k8s.io \
    nestedetcds.v1beta1.controlplane.cluster.x-k8s.io \
    nestedapiservers.v1alpha4.controlplane.cluster.x-k8s.io \
    nestedapiservers.v1beta1.controlplane.cluster.x-k8s.io \
    nestedcontrollermanagers.v1alpha4.controlplane.cluster.x-k8s.io \
    nestedcontrollermanagers.v1beta1.controlplane.cluster.x-k8s.io \
    clusters.v1beta2.cluster.x-k8s.io; do
    for i in $(seq 1 60); do
        kubectl get "$r" --all-namespaces >/dev/null 2>&1 && break
        [ "$i" -eq 60 ] && fail "$r is not served 60s after the CRDs were established"
        sleep 1
    done
done
for f in "$src"/config/crd/bases/*.yaml; do
    name=$(basename "$f" .yaml)
    name="${name#*_}.${name%_*}"
    conds=$(kubectl get crd "$name" -o jsonpath='{range .status.conditions[*]}{.type}={.status} {end}')
    case "$conds" in *NonStructuralSchema=True*) fail "$name is not structural: $conds" ;; esac
    [ "$(kubectl get crd "$name" -o jsonpath='{.metadata.labels.cluster\.x-k8s\.io/v1beta1}')" = \
        v1alpha4_v1beta1 ] || fail "$name lacks the Cluster API contract label"
done

# kubectl explain reads the published OpenAPI, which follows the CRD by a few seconds.
explained=""
for _ in $(seq 1 30); do
    explained=$(kubectl explain nestedcontrolplane.spec.clusterNetwork 2>/dev/null || true)
    case "$explained" in *serviceDomain*) break ;; esac
    sleep 1
done
for want in "serviceDomain" "services" "pods" "Network ranges from which service VIPs"; do
    case "$explained" in *"$want"*) ;; *) fail "kubectl explain lacks '$want': $explained" ;; esac
done
explained=$(kubectl explain nestedetcd.spec.storage.persistentVolumeClaim.size)
case "$explained" in *"Requested size"*) ;; *) fail "kubectl explain lacks etcd storage" ;; esac
[ "$(kubectl get crd nestedcontrolplanes.controlplane.cluster.x-k8s.io \
    -o jsonpath='{.spec.names.shortNames[0]} {.spec.names.categories}')" = 'ncp ["capi","capn","nestcp"]' ] ||
    fail "short name or categories differ"

kubectl create namespace "$ns" >/dev/null

# --- the samples ---
kubectl apply -n "$ns" -k "$src/config/samples" >/dev/null
header=$(kubectl get ncp -n "$ns")
header=${header%%$'\n'*}
[ "$(echo $header)" = "NAME VERSION READY PHASE AGE" ] || fail "ncp columns: $header"
header=$(kubectl get netcd -n "$ns")
header=${header%%$'\n'*}
[ "$(echo $header)" = "NAME VERSION READY PHASE AGE" ] || fail "netcd columns: $header"
[ "$(kubectl get capn -n "$ns" -o name | wc -l)" -eq 9 ] || fail "category capn lists $(kubectl get capn -n "$ns" -o name)"

# A /status write (what the controllers do) fills the columns.
kubectl get ncp -n "$ns" standalone -o json | python3 -c '
import json, sys
o = json.load(sys.stdin)
o["status"] = {"ready": True, "initialized": True,
               "initialization": {"controlPlaneInitialized": True},
               "externalManagedControlPlane": True, "version": "v1.36.3", "phase": "Ready",
               "observedGeneration": o["metadata"]["generation"],
               "conditions": [{"type": "Ready", "status": "True", "reason": "AsExpected",
                               "lastTransitionTime": "2021-06-09T10:00:00Z"}]}
json.dump(o, sys.stdout)' >"$status_file"
kubectl replace --raw "/apis/controlplane.cluster.x-k8s.io/v1beta1/namespaces/$ns/nestedcontrolplanes/standalone/status" \
    -f "$status_file" >/dev/null
row=$(kubectl get ncp -n "$ns" standalone --no-headers)
[ "$(echo $row | cut -d' ' -f1-4)" = "standalone v1.36.3 true Ready" ] || fail "ncp row: $row"

# --- a CAPN v1alpha4 manifest, unchanged but for its Cluster ---
# Cluster API serves Cluster at v1beta1 and v1beta2 only, and without its conversion webhook only
# at v1beta2, the version it stores: references name the group, not a version.
c=capn-test
kubectl apply -n "$ns" -f - >/dev/null <<YAML
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata:
  name: "$c"
spec:
  controlPlaneEndpoint:
    host: "$c-apiserver"
    port: 6443
  infrastructureRef:
    apiGroup: infrastructure.cluster.x-k8s.io
    kind: NestedCluster
    name: "$c"
  controlPlaneRef:
    apiGroup: controlplane.cluster.x-k8s.io
    kind: NestedControlPlane
    name: "$c-control-plane"
---
apiVersion: infrastructure.cluster.x-k8s.io/v1alpha4
kind: NestedCluster
metadata:
  name: "$c"
spec:
  controlPlaneEndpoint:
    host: "localhost"
    port: 6443
---
apiVersion: controlplane.cluster.x-k8s.io/v1alpha4
kind: NestedControlPlane
metadata:
  name: "$c-control-plane"
spec:
  etcd:
    apiVersion: controlplane.cluster.x-k8s.io/v1alpha4
    kind: NestedEtcd
    name: "$c-nestedetcd"
  apiserver:
    apiVersion: controlplane.cluster.x-k8s.io/v1alpha4
    kind: NestedAPIServer
    name: "$c-nestedapiserver"
  controllerManager:
    apiVersion: controlplane.cluster.x-k8s.io/v1alpha4
    kind: NestedControllerManager
    name: "$c-nestedcontrollermanager"
---
apiVersion: controlplane.cluster.x-k8s.io/v1alpha4
kind: NestedEtcd
metadata:
  name: "$c-nestedetcd"
spec:
  replicas: 1
---
apiVersion: controlplane.cluster.x-k8s.io/v1alpha4
kind: NestedAPIServer
metadata:
  name: "$c-nestedapiserver"
spec:
  replicas: 1
---
apiVersion: controlplane.cluster.x-k8s.io/v1alpha4
kind: NestedControllerManager
metadata:
  name: "$c-nestedcontrollermanager"
spec:
  replicas: 1
YAML
got=$(kubectl get -n "$ns" nestedcontrolplanes.v1beta1.controlplane.cluster.x-k8s.io \
    "$c-control-plane" -o jsonpath='{.apiVersion} {.spec.etcd.name} {.spec.certificates.keyAlgorithm}')
[ "$got" = "controlplane.cluster.x-k8s.io/v1beta1 $c-nestedetcd ECDSA-P256" ] ||
    fail "NestedControlPlane read as v1beta1: $got"
got=$(kubectl get -n "$ns" nestedcontrolplanes.v1alpha4.controlplane.cluster.x-k8s.io \
    "$c-control-plane" -o jsonpath='{.apiVersion}')
[ "$got" = "controlplane.cluster.x-k8s.io/v1alpha4" ] || fail "v1alpha4 read: $got"
for kind in nestedetcds nestedapiservers nestedcontrollermanagers; do
    got=$(kubectl get -n "$ns" "$kind.v1beta1.controlplane.cluster.x-k8s.io" -o \
        jsonpath='{range .items[?(@.metadata.name!="")]}{.apiVersion} {.spec.replicas}{"\n"}{end}' |
        sort -u)
    [ "$got" = "controlplane.cluster.x-k8s.io/v1beta1 1" ] || fail "$kind read as v1beta1: $got"
done
got=$(kubectl get -n "$ns" nestedclusters.v1beta1.infrastructure.cluster.x-k8s.io "$c" \
    -o jsonpath='{.apiVersion} {.spec.controlPlaneEndpoint.host}:{.spec.controlPlaneEndpoint.port}')
[ "$got" = "infrastructure.cluster.x-k8s.io/v1beta1 localhost:6443" ] || fail "NestedCluster: $got"
got=$(kubectl get -n "$ns" clusters.cluster.x-k8s.io "$c" -o jsonpath='{.apiVersion} {.spec.controlPlaneRef.apiGroup} {.spec.controlPlaneRef.name}')
[ "$got" = "cluster.x-k8s.io/v1beta2 controlplane.cluster.x-k8s.io $c-control-plane" ] ||
    fail "Cluster read at the preferred version: $got"

# --- the schema rejects bad input at the apiserver ---
out=$(kubectl apply -n "$ns" -f - 2>&1 <<YAML || true
apiVersion: controlplane.cluster.x-k8s.io/v1beta1
kind: NestedEtcd
metadata: {name: too-many}
spec: {replicas: 9}
YAML
)
case "$out" in *"spec.replicas"*"7"*) ;; *) fail "replicas 9 was not rejected: $out" ;; esac
out=$(kubectl apply -n "$ns" -f - 2>&1 <<YAML || true
apiVersion: controlplane.cluster.x-k8s.io/v1beta1
kind: NestedControlPlane
metadata: {name: weak-keys}
spec: {certificates: {keyAlgorithm: RSA-1024}}
YAML
)
case "$out" in *"spec.certificates.keyAlgorithm"*) ;; *) fail "RSA-1024 was not rejected: $out" ;; esac

# --- CEL rules (x-kubernetes-validations): refused at apply time, the field named ---
# reject NAME FIELD MESSAGE YAML: kubectl apply of YAML fails naming FIELD and MESSAGE.
reject() {
    local name=$1 field=$2 msg=$3 out
    out=$(kubectl apply -n "$ns" -f - 2>&1 <<<"$4") && fail "$name was accepted"
    case "$out" in *"$field"*"$msg"*) ;; *) fail "$name: refused without naming $field / $msg: $out" ;; esac
    kubectl get -n "$ns" "$(sed -n 's/^kind: //p' <<<"$4" | head -n 1 | tr 'A-Z' 'a-z')" "$name" >/dev/null 2>&1 &&
        fail "$name was stored"
    echo "refused $name: ${out#*: }" | head -c 300
    echo
}
ncp() { printf 'apiVersion: controlplane.cluster.x-k8s.io/v1beta1\nkind: NestedControlPlane\nmetadata: {name: %s}\nspec: %s\n' "$1" "$2"; }
etcd() { printf 'apiVersion: controlplane.cluster.x-k8s.io/v1beta1\nkind: NestedEtcd\nmetadata: {name: %s}\nspec: %s\n' "$1" "$2"; }
reject bad-version spec.version "must be a version like 1.36.3 or v1.36.3" \
    "$(ncp bad-version '{version: "1.36"}')"
reject bad-component-version spec.version "must be a version like 1.36.3 or v1.36.3" \
    "$(etcd bad-component-version '{version: latest}')"
reject bad-cidr spec.clusterNetwork.services.cidrBlocks "each block must be a CIDR" \
    "$(ncp bad-cidr '{clusterNetwork: {services: {cidrBlocks: ["10.96.0.0/33"]}}}')"
reject two-v4 spec.clusterNetwork.pods.cidrBlocks "one IPv4 and one IPv6" \
    "$(ncp two-v4 '{clusterNetwork: {pods: {cidrBlocks: ["10.244.0.0/16", "10.245.0.0/16"]}}}')"
reject even-etcd spec.replicas "must be odd" "$(etcd even-etcd '{replicas: 4}')"
reject both-storage spec.storage "mutually exclusive" \
    "$(etcd both-storage '{storage: {emptyDir: {}, persistentVolumeClaim: {size: 1Gi}}}')"
# What the rules allow still applies: dual-stack, a v-prefixed pre-release, 3 members.
kubectl apply -n "$ns" -f - >/dev/null <<YAML || fail "valid objects were refused"
$(ncp good-cel '{version: v1.37.0-rc.1, clusterNetwork: {services: {cidrBlocks: ["10.96.0.0/16", "fd00:10:96::/108"]}}}')
---
$(etcd good-cel '{replicas: 3, storage: {persistentVolumeClaim: {size: 2Gi}}}')
YAML

echo "CRDs load, explain, print, convert and validate as expected"
