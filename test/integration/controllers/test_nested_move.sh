#!/usr/bin/env bash
# Preparing a clusterctl move (docs/clusterctl.md, "clusterctl move") against the real super
# cluster, up to the snapshot Job (the stand-in kubelet runs no Job's pod; test/e2e runs whole
# moves):
#   - without spec.snapshots on the NestedEtcd: MoveBlocked True, reason NoSnapshotClaim, naming
#     the NestedEtcd and the field; nothing stops;
#   - the claim added, the same request goes on: the API server and controller-manager
#     StatefulSets are at 0 replicas and their pods gone (the real StatefulSet controller), then
#     the snapshot Job, controlled by the control plane, writes to the claim; status.move says
#     Snapshotting, MoveBlocked and Ready False say PreparingMove, and the block-move
#     annotation stays; reconciled again, nothing starts the API servers;
#   - the request withdrawn: the block stays, status.move and the Job go, the StatefulSets are
#     back at 1 replica and the control plane is Ready again.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

ns=nested-move-$$
install_crds
new_namespace "$ns"
fake_kubelet "$ns"
start_manager mgr "$ns" --sync-period 5s
kubectl -n "$ns" apply -f "$NESTCP_SOURCE_DIR/config/samples/standalone.yaml" >/dev/null
wait_ready "$ns" standalone 180
echo "standalone: Ready"

move_phase() { kubectl -n "$ns" get ncp standalone -o jsonpath='{.status.move.phase}'; }
replicas() { kubectl -n "$ns" get sts "$1" -o jsonpath='{.spec.replicas}'; }
block_move() {
    kubectl -n "$ns" get ncp standalone -o json |
        python3 -c 'import json,sys; a=json.load(sys.stdin)["metadata"].get("annotations",{}); sys.exit(0 if "clusterctl.cluster.x-k8s.io/block-move" in a else 1)'
}
reason_is() { [ "$(cond "$ns" ncp/standalone MoveBlocked | cut -f2)" = "$1" ]; }

# --- no snapshots claim: told, nothing stops ---
kubectl -n "$ns" annotate ncp standalone controlplane.nestcp.x-k8s.io/move=to-b >/dev/null
until_true 30 reason_is NoSnapshotClaim ||
    fail "no claim: MoveBlocked is '$(cond "$ns" ncp/standalone MoveBlocked)'"
msg=$(cond "$ns" ncp/standalone MoveBlocked | cut -f3)
echo "no claim: $msg"
case "$msg" in
*"NestedEtcd $ns/standalone-etcd names no spec.snapshots.persistentVolumeClaim.claimName"*"nothing was stopped"*) ;;
*) fail "the condition does not name the NestedEtcd and the field: $msg" ;;
esac
[ "$(move_phase)" = Failed ] || fail "no claim: status.move.phase is '$(move_phase)'"
[ "$(replicas standalone-apiserver)" = 1 ] || fail "the API servers were stopped without a claim"
block_move || fail "the block-move annotation went without a claim"
[ -n "$(kubectl -n "$ns" get events -o name \
    --field-selector reason=NoSnapshotClaim,involvedObject.name=standalone)" ] ||
    fail "no NoSnapshotClaim event"

# --- the claim added: stop, then the snapshot Job ---
kubectl -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: standalone-snapshots}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
EOF
t0=$(now)
kubectl -n "$ns" patch netcd standalone-etcd --type merge \
    -p '{"spec":{"snapshots":{"persistentVolumeClaim":{"claimName":"standalone-snapshots"}}}}' >/dev/null
snapshotting() { [ "$(move_phase)" = Snapshotting ]; }
until_true 60 snapshotting ||
    fail "the move is not snapshotting: status.move is $(kubectl -n "$ns" get ncp standalone -o jsonpath='{.status.move}')"
echo "snapshotting after $(elapsed "$t0") s"
for sts in standalone-apiserver standalone-controller-manager; do
    [ "$(replicas "$sts")" = 0 ] || fail "$sts has $(replicas "$sts") replicas while snapshotting"
    [ -z "$(kubectl -n "$ns" get pod "$sts-0" -o name --ignore-not-found)" ] ||
        fail "pod $sts-0 is still there while snapshotting"
done
[ "$(replicas standalone-etcd)" = 1 ] || fail "etcd was stopped"
snapshot=$(kubectl -n "$ns" get ncp standalone -o jsonpath='{.status.move.snapshot}')
case "$snapshot" in standalone-etcd-snapshot-*) ;; *) fail "status.move.snapshot is '$snapshot'" ;; esac
job=$(kubectl -n "$ns" get job "$snapshot" -o json) || fail "no Job $snapshot"
python3 - "$job" <<'EOF' || fail "the snapshot Job"
import json, sys
j = json.loads(sys.argv[1])
owner = j["metadata"]["ownerReferences"][0]
assert owner["kind"] == "NestedControlPlane" and owner["name"] == "standalone", owner
claims = [v["persistentVolumeClaim"]["claimName"] for v in j["spec"]["template"]["spec"]["volumes"]
          if "persistentVolumeClaim" in v]
assert claims == ["standalone-snapshots"], claims
EOF
reason_is PreparingMove || fail "MoveBlocked is '$(cond "$ns" ncp/standalone MoveBlocked)'"
[ "$(cond "$ns" ncp/standalone Ready | cut -f1-2)" = "$(printf 'False\tPreparingMove')" ] ||
    fail "Ready is '$(cond "$ns" ncp/standalone Ready)' while the API servers are stopped"
echo "preparing: $(cond "$ns" ncp/standalone MoveBlocked | cut -f3)"
block_move || fail "the block-move annotation went before the snapshot completed"
[ -z "$(kubectl -n "$ns" get netcd standalone-etcd \
    -o jsonpath='{.metadata.annotations.etcd\.nestcp\.x-k8s\.io/start-from-snapshot}')" ] ||
    fail "the NestedEtcd was marked before the snapshot completed"
# Reconciled again (every 5 s, five objects) while preparing: nothing starts the API servers.
resynced() { [ "$(metric_sum controller_runtime_reconcile_total)" -ge "$1" ]; }
n=$(metric_sum controller_runtime_reconcile_total)
until_true 30 resynced $((n + 10)) || fail "the objects were not reconciled again"
[ "$(replicas standalone-apiserver)" = 0 ] || fail "a reconcile started the API servers again"

# --- withdrawn: everything as before ---
kubectl -n "$ns" annotate ncp standalone controlplane.nestcp.x-k8s.io/move- >/dev/null
t0=$(now)
no_move() { [ -z "$(move_phase)" ]; }
until_true 60 no_move || fail "status.move stays after the withdrawal: $(move_phase)"
wait_ready "$ns" standalone 180
echo "withdrawn: Ready again after $(elapsed "$t0") s"
for sts in standalone-apiserver standalone-controller-manager; do
    [ "$(replicas "$sts")" = 1 ] || fail "$sts has $(replicas "$sts") replicas after the withdrawal"
done
block_move || fail "the block-move annotation is not there after the withdrawal"
reason_is TenantDataNotMovable || fail "MoveBlocked is '$(cond "$ns" ncp/standalone MoveBlocked)'"
job_gone() { [ -z "$(kubectl -n "$ns" get job "$snapshot" -o name --ignore-not-found)" ]; }
until_true 30 job_gone || fail "the Job $snapshot stays after the withdrawal"
echo "PASS"
