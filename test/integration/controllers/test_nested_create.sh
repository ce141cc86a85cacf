#!/usr/bin/env bash
# The five reconcilers in `nestcp manager` against the real super cluster (Cluster API's CRD
# installed, its controllers absent), two clusters in one namespace:
#   - CAPN's cluster template shape (config/samples/capn-cluster.yaml) and a standalone
#     control plane (config/samples/standalone.yaml) both become Ready;
#   - the StatefulSets of kube-apiserver and kube-controller-manager appear only after etcd's
#     (recorded from a watch; a new control plane starts them once etcd answers, which the unit
#     tests of controllers/rollout.c check rule by rule, and its controller manager does not
#     wait for its API server, so either may come first);
#   - the Cluster API contract fields, the NestedCluster, the components' status;
#   - the Secrets, Services and StatefulSets are what `nestcp render` prints for the same
#     objects and Secrets;
#   - steady state: with every object reconciled again every 5 s (--sync-period), no object in
#     the namespace changes and the controllers send no request for 20 s: each control plane
#     and component is reconciled about four times in that window, and must find nothing to
#     do.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

ns=nested-create-$$
install_crds
new_namespace "$ns"
fake_kubelet "$ns"

# The order StatefulSets appear and become ready, from a watch.
command kubectl -n "$ns" get statefulsets -w --output-watch-events \
    -o custom-columns='EVENT:.type,NAME:.object.metadata.name,READY:.object.status.readyReplicas' \
    --no-headers >"$work/sts-watch.txt" 2>/dev/null &
pids+=($!)

start_manager mgr "$ns" --sync-period 5s
t0=$(now)
kubectl -n "$ns" apply -f "$NESTCP_SOURCE_DIR/config/samples/capn-cluster.yaml" >/dev/null
kubectl -n "$ns" apply -f "$NESTCP_SOURCE_DIR/config/samples/standalone.yaml" >/dev/null
wait_ready "$ns" sample-control-plane 180
echo "capn-cluster.yaml: Ready after $(elapsed "$t0") s"
wait_ready "$ns" standalone 180
echo "standalone.yaml: Ready after $(elapsed "$t0") s"
# Cluster API's Cluster CRD serves v1beta2 and converts through a webhook that does not run
# here: the cache reads v1beta2, which needs no conversion.
grep -q 'cache reads resource resource=clusters.cluster.x-k8s.io version=v1beta2' "$work/mgr.log" ||
    fail "the manager does not read Clusters at v1beta2: $(grep clusters.cluster "$work/mgr.log")"

# --- order: the API server and the controller manager are created after etcd ---
python3 - "$work/sts-watch.txt" <<'EOF' || fail "creation order"
import sys
events = [l.split() for l in open(sys.argv[1]) if l.strip()]
for c in ("sample", "standalone"):
    first_added = {}
    for i, e in enumerate(events):
        name = e[1]
        if not name.startswith(c + "-") or name[len(c) + 1:] not in ("etcd", "apiserver", "controller-manager"):
            continue
        first_added.setdefault(name[len(c) + 1:], i)
    order = sorted(first_added, key=first_added.get)
    print("%s: StatefulSets created in the order %s" % (c, ", ".join(order)))
    assert sorted(order) == ["apiserver", "controller-manager", "etcd"], order
    assert first_added["etcd"] < first_added["apiserver"], "apiserver before etcd"
    assert first_added["etcd"] < first_added["controller-manager"], "controller-manager before etcd"
EOF

# --- the contract fields and the other objects' status ---
st=$(kubectl -n "$ns" get ncp sample-control-plane -o json)
check() {
    python3 -c "import json,sys; o=json.load(sys.stdin); v=eval(sys.argv[1]); sys.exit(0 if v else 1)" "$1" <<<"$st" ||
        fail "NestedControlPlane status: $1 is false: $st"
}
check 'o["status"]["ready"] is True and o["status"]["initialized"] is True'
check 'o["status"]["initialization"]["controlPlaneInitialized"] is True'
check 'o["status"]["externalManagedControlPlane"] is True'
check 'o["status"]["version"] == "v1.36.3" and o["status"]["readyReplicas"] == 1'
check 'o["status"]["observedGeneration"] == o["metadata"]["generation"]'
check 'o["status"]["apiserver"]["serviceCidr"] == "10.96.0.0/12"'
check '"nested.controlplane.cluster.x-k8s.io" in o["metadata"]["finalizers"]'
check 'o["spec"]["controlPlaneEndpoint"] == {"host": "sample-apiserver", "port": 6443}'
until_true 30 is_ready "$ns" nc/sample || fail "NestedCluster not Ready: $(cond "$ns" nc/sample Ready)"
[ "$(kubectl -n "$ns" get nc sample -o jsonpath='{.status.ready}')" = true ] ||
    fail "NestedCluster status.ready is not true"
# Each component's phase is written by its own reconciler, independently of the control
# plane's Ready, so it may trail it for a moment.
phase_ready() {
    [ "$(kubectl -n "$ns" get "$1" -o jsonpath='{.status.phase}')" = Ready ]
}
for c in netcd/sample-nestedetcd nkas/sample-nestedapiserver nkcm/sample-nestedcontrollermanager; do
    until_true 30 phase_ready "$c" || fail "$c is not Ready: $(cond "$ns" "$c" Ready)"
    owner=$(kubectl -n "$ns" get "$c" -o jsonpath='{.metadata.ownerReferences[?(@.controller==true)].name}')
    [ "$owner" = sample-control-plane ] || fail "$c is controlled by '$owner'"
done
[ "$(kubectl -n "$ns" get netcd sample-nestedetcd -o jsonpath='{.status.addresses[0].hostname}')" = \
    "sample-etcd-0.sample-etcd.$ns.svc" ] || fail "NestedEtcd addresses"
[ "$(kubectl -n "$ns" get nkas sample-nestedapiserver -o jsonpath='{.status.apiserverService.name}')" = \
    sample-apiserver ] || fail "NestedAPIServer apiserverService"
kubectl -n "$ns" get secret sample-kubeconfig -o jsonpath='{.data.value}' | base64 -d |
    grep -q 'server: https://sample-apiserver:6443' || fail "the kubeconfig's server"

# --- what runs is what `nestcp render` prints ---
n=$(render_matches "$ns") || fail "the running objects differ from nestcp render's"
echo "nestcp render: $n Services, StatefulSets, ConfigMaps and NetworkPolicies, each with the running config hash"
for c in sample standalone; do
    [ "$(kubectl -n "$ns" get secrets -l "cluster.x-k8s.io/cluster-name=$c" -o name | wc -l)" = 8 ] ||
        fail "cluster $c: expected 8 Secrets (4 CAs, kubeconfig, 3 certs), got $(kubectl -n "$ns" get secrets -l "cluster.x-k8s.io/cluster-name=$c" -o name | tr '\n' ' ')"
done

# --- steady state: nothing is written ---
# Once no key is queued or being reconciled, whatever the last writes caused has been seen.
idle() {
    [ "$(metric_sum workqueue_depth)" = 0 ] && [ "$(metric_sum controller_runtime_active_workers)" = 0 ]
}
# The API servers' StatefulSets count a pod available only 20 s after it is Ready
# (minReadySeconds, the soak of a roll): their status, and the control plane's, change until
# then.
available() {
    kubectl -n "$ns" get statefulsets -o json | python3 -c '
import json, sys
sys.exit(0 if all(s.get("status", {}).get("availableReplicas") == s["spec"]["replicas"]
                  for s in json.load(sys.stdin)["items"]) else 1)'
}
until_true 60 available || fail "the StatefulSets' pods never became available"
until_true 30 idle || fail "the controllers never went idle"
before=$(versions "$ns")
writes0=$(metric_sum nestcp_api_requests_total)
t1=$(now)
sleep 20
after=$(versions "$ns")
writes1=$(metric_sum nestcp_api_requests_total)
if [ "$before" != "$after" ]; then
    diff <(echo "$before") <(echo "$after") >&2 || true
    fail "objects changed in steady state"
fi
grep -q 'periodic resync' "$work/mgr.log" || fail "no periodic resync in the window"
echo "steady state: $(echo "$before" | wc -l) objects unchanged for $(elapsed "$t1") s across" \
    "$(grep -c 'periodic resync' "$work/mgr.log") resyncs, $((writes1 - writes0)) requests made by the controllers"
[ "$((writes1 - writes0))" = 0 ] || fail "the controllers made requests in steady state"
echo PASS
