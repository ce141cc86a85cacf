#!/usr/bin/env bash
# Faults and operator actions against the real super cluster:
#   - bad input (an invalid CIDR, an unknown version, a patch that matches nothing, an unknown
#     feature gate) next to a good cluster in the same namespace: the good one becomes Ready,
#     each bad one says why (Ready False, InvalidSpec, a Warning event) and gets no object;
#   - pause (annotation): a change is not applied and Paused shows; unpaused, it is;
#   - deleting a control plane while its components are being created leaves nothing behind
#     and nothing is recreated;
#   - kill -9 of the manager at several points of a creation, then a restart: the cluster
#     converges with its CA unchanged and without duplicate objects.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

ns=nested-faults-$$
install_crds
new_namespace "$ns"
fake_kubelet "$ns"

# owned NAME: the Secrets, Services and StatefulSets of cluster NAME.
owned() {
    kubectl -n "$ns" get secrets,services,statefulsets -l "cluster.x-k8s.io/cluster-name=$1" -o name
}

start_manager mgr "$ns"

# --- bad input next to a good cluster ---
{
    cluster good
    echo ---
    # A CIDR the API server's CEL rules accept (syntax) and nestcp refuses (range too large);
    # a malformed one never gets past kubectl apply (test_api_crds).
    cluster badcidr 'clusterNetwork: {services: {cidrBlocks: ["10.0.0.0/8"]}}'
    echo ---
    cluster badversion '' '' 1.38.0
    echo ---
    cluster badpatch '' 'patches: [{target: {kind: StatefulSet, name: nosuch}, type: merge, patch: {spec: {}}}]'
    echo ---
    cluster badgate 'featureGates: {NoSuchGate: true}'
} >"$work/clusters.yaml"
kubectl -n "$ns" apply -f "$work/clusters.yaml" >/dev/null
wait_ready "$ns" good 180
echo "good: Ready"
for bad in badcidr badversion badpatch badgate; do
    is_invalid() { [ "$(cond "$ns" "ncp/$1" Ready | cut -f2)" = InvalidSpec ]; }
    until_true 30 is_invalid "$bad" || fail "$bad: Ready is '$(cond "$ns" "ncp/$bad" Ready)'"
    echo "$bad: $(cond "$ns" "ncp/$bad" Ready | cut -f3 | head -c 300)"
    kubectl -n "$ns" get events --field-selector "involvedObject.name=$bad,reason=InvalidSpec" -o name |
        grep -q . || fail "$bad: no InvalidSpec event"
    [ -z "$(owned "$bad")" ] || fail "$bad: objects were created: $(owned "$bad" | tr '\n' ' ')"
done

# --- pause ---
kubectl -n "$ns" annotate ncp good cluster.x-k8s.io/paused=true >/dev/null
is_paused() { [ "$(cond "$ns" "$1" Paused | cut -f1)" = True ]; }
until_true 30 is_paused ncp/good || fail "ncp/good: no Paused condition"
until_true 30 is_paused nkas/good-apiserver || fail "nkas/good-apiserver: no Paused condition"
kubectl -n "$ns" patch nkas good-apiserver --type merge -p '{"spec":{"replicas":2}}' >/dev/null
# The change was seen (observedGeneration) by the paused reconciler, which left it alone.
observed() {
    [ "$(kubectl -n "$ns" get nkas good-apiserver -o jsonpath='{.status.observedGeneration}')" = \
        "$(kubectl -n "$ns" get nkas good-apiserver -o jsonpath='{.metadata.generation}')" ]
}
until_true 30 observed || fail "the paused NestedAPIServer's change was never observed"
[ "$(kubectl -n "$ns" get sts good-apiserver -o jsonpath='{.spec.replicas}')" = 1 ] ||
    fail "a paused cluster was changed"
echo "paused: the change to 2 API server replicas waits"
kubectl -n "$ns" annotate ncp good cluster.x-k8s.io/paused- >/dev/null
two() { [ "$(kubectl -n "$ns" get sts good-apiserver -o jsonpath='{.spec.replicas}')" = 2 ]; }
until_true 60 two || fail "unpaused, the change was not applied"
[ "$(cond "$ns" ncp/good Paused | cut -f1)" = False ] || fail "Paused still shows"
echo "unpaused: 2 API server replicas"

# --- deleting while the components are being created ---
cluster gone | kubectl -n "$ns" apply -f - >/dev/null
has_sts() { kubectl -n "$ns" get sts gone-etcd >/dev/null 2>&1; }
until_true 60 has_sts || fail "gone: no etcd StatefulSet"
kubectl -n "$ns" delete ncp gone --wait=false >/dev/null
t0=$(now)
ncp_gone() { ! kubectl -n "$ns" get ncp gone >/dev/null 2>&1; }
until_true 60 ncp_gone || fail "gone: the control plane was not deleted: $(kubectl -n "$ns" get ncp gone -o jsonpath='{.metadata.finalizers} {.status.conditions}')"
nothing_left() { [ -z "$(owned gone)" ] && [ -z "$(kubectl -n "$ns" get netcd,nkas,nkcm -o name | grep /gone- || true)" ]; }
until_true 60 nothing_left || fail "gone: left behind: $(owned gone | tr '\n' ' ')"
echo "deleted mid-creation: nothing left after $(elapsed "$t0") s"
sleep 5
nothing_left || fail "gone: objects came back: $(owned gone | tr '\n' ' ')"

# --- kill -9 at several points, then a restart ---
kill -9 "$mgr_pid"
wait "$mgr_pid" 2>/dev/null || true
cluster crash | kubectl -n "$ns" apply -f - >/dev/null
ca=
has_ca() { [ -n "$(kubectl -n "$ns" get secret crash-ca -o jsonpath='{.data.tls\.crt}' 2>/dev/null)" ]; }
for delay in 1 2 3; do
    start_manager mgr "$ns"
    sleep "$delay" # where the kill lands: a fault injected at a moment, not a wait
    # The last kill comes once the CA exists, so the restart after it has a CA to keep.
    [ "$delay" != 3 ] || until_true 60 has_ca || fail "no CA Secret within 60 s of a start"
    kill -9 "$mgr_pid"
    wait "$mgr_pid" 2>/dev/null || true
    c=$(kubectl -n "$ns" get secret crash-ca -o jsonpath='{.data.tls\.crt}' 2>/dev/null || true)
    [ -z "$ca" ] || [ "$c" = "$ca" ] || fail "the CA changed across a restart"
    [ -n "$c" ] && ca=$c
    echo "killed -9 after ${delay} s: $(owned crash | wc -l) objects so far"
done
[ -n "$ca" ] || fail "no CA Secret was seen across the kills"
start_manager mgr "$ns"
wait_ready "$ns" crash 180
[ "$(kubectl -n "$ns" get secret crash-ca -o jsonpath='{.data.tls\.crt}')" = "$ca" ] ||
    fail "the CA changed"
settled() {
    [ "$(kubectl -n "$ns" get secrets -l cluster.x-k8s.io/cluster-name=crash -o name | wc -l)" = 8 ]
}
until_true 60 settled || fail "crash: Secrets $(kubectl -n "$ns" get secrets -l cluster.x-k8s.io/cluster-name=crash -o name | tr '\n' ' ')"
[ "$(kubectl -n "$ns" get sts -l cluster.x-k8s.io/cluster-name=crash -o name | wc -l)" = 3 ] ||
    fail "crash: StatefulSets $(kubectl -n "$ns" get sts -o name | tr '\n' ' ')"
echo "after 3 x kill -9: Ready, CA unchanged, 8 Secrets (4 CAs, kubeconfig, 3 certs), 3 StatefulSets"
is_ready "$ns" ncp/good || fail "good is no longer Ready"
echo PASS
