#!/usr/bin/env bash
# The way back from an upgrade: a snapshot taken before it, restored after it, on real etcd,
# kube-apiserver and kube-controller-manager processes and real claims.
#   1. A tenant at 1.36.3 with 3 etcd members whose NestedEtcd names a snapshots claim; a
#      ConfigMap "before" is written in it.
#   2. The upgrade to 1.37.2: nestcp takes a snapshot first (status.rollout.snapshot names it).
#      A ConfigMap "after" is written at 1.37.2, and the resourceVersion of the list of
#      ConfigMaps is kept, as a client that watches would keep it.
#   3. The NestedEtcd is annotated etcd.nestcp.x-k8s.io/restore-snapshot=<name>: every member
#      stops with its claim, member 0 is restored from the file by etcdutl (revisions bumped
#      and compacted) and starts alone, the other two are added again, and every API server and
#      controller-manager pod that started before is restarted.
# Then "before" is there, "after" is not, a write gets a revision past the bump, and a watch
# resumed from the resourceVersion kept before the restore is told to start again (410 Gone,
# as client-go relists), never served a mix of the two histories.
#   4. A snapshot asked for by annotation (etcd.nestcp.x-k8s.io/snapshot), more data written,
#      and a restore from that snapshot: what was written before it is there, what came after
#      is not.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

setup
{
    snapshot_claim rst-snapshots
    tenant_manifest rst 1.36.3 3 1 "  snapshots: {persistentVolumeClaim: {claimName: rst-snapshots}}" \
        "$no_endpoint_reconciler"
} >"$work/rst.yaml"
t0=$(now)
kubectl -n "$ns" apply -f "$work/rst.yaml" >/dev/null
wait_ready rst 300 "$t0"
kc=$work/rst.kubeconfig
tenant_kubeconfig rst "$kc"
tkubectl "$kc" create configmap before --from-literal=written=at-1.36 >/dev/null ||
    fail "cannot write to the tenant"

# --- 2. the upgrade, with its snapshot ---
upgraded() {
    [ "$(kubectl -n "$ns" get ncp rst -o jsonpath='{.status.version}')" = v1.37.2 ] &&
        [ "$(kubectl -n "$ns" get ncp rst -o jsonpath='{.status.conditions[?(@.type=="Upgrading")].status}')" = False ] &&
        ncp_ready rst
}
ts=$(now)
kubectl -n "$ns" patch ncp rst --type merge -p '{"spec":{"version":"1.37.2"}}' >/dev/null
until_true 400 upgraded || fail "upgrade: not done ($(kubectl -n "$ns" get pods --no-headers | tr '\n' ';'))"
snap=$(kubectl -n "$ns" get ncp rst -o jsonpath='{.status.rollout.snapshot.name}')
[ -n "$snap" ] || fail "upgrade: no snapshot: $(kubectl -n "$ns" get ncp rst -o jsonpath='{.status.rollout}')"
log "upgrade: done in $(elapsed "$ts") s, after snapshot $snap"
tenant_kubeconfig rst "$kc"
tkubectl "$kc" create configmap after --from-literal=written=at-1.37 >/dev/null ||
    fail "cannot write to the tenant at 1.37.2"
rv=$(tkubectl "$kc" get --raw /api/v1/namespaces/default/configmaps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["metadata"]["resourceVersion"])')
[ -n "$rv" ] || fail "no resourceVersion for the list of ConfigMaps"
log "written at 1.37.2; ConfigMaps listed at resourceVersion $rv"
kas_uid=$(kubectl -n "$ns" get pod rst-apiserver-0 -o jsonpath='{.metadata.uid}')
kcm_uid=$(kubectl -n "$ns" get pod rst-controller-manager-0 -o jsonpath='{.metadata.uid}')

# --- 3. the restore ---
ts=$(now)
kubectl -n "$ns" annotate netcd rst-etcd "etcd.nestcp.x-k8s.io/restore-snapshot=$snap" >/dev/null
restore() { kubectl -n "$ns" get netcd rst-etcd -o jsonpath="{.status.restore.$1}"; }
restored() { [ "$(restore phase)" = Restored ]; }
until_true 300 restored || fail "restore: phase '$(restore phase)': $(kubectl -n "$ns" get netcd rst-etcd -o jsonpath='{.status.conditions[?(@.type=="Restored")].message}')"
log "restore: etcd restored after $(elapsed "$ts") s, at $(restore restoredAt)"
back() {
    [ "$(kubectl -n "$ns" get netcd rst-etcd -o jsonpath='{.status.conditions[?(@.type=="MembersReady")].status}')" = True ] &&
        [ "$(kubectl -n "$ns" get sts rst-etcd -o jsonpath='{.status.readyReplicas}')" = 3 ] &&
        [ "$(kubectl -n "$ns" get pod rst-apiserver-0 -o jsonpath='{.metadata.uid}')" != "$kas_uid" ] &&
        [ "$(kubectl -n "$ns" get pod rst-controller-manager-0 -o jsonpath='{.metadata.uid}')" != "$kcm_uid" ] &&
        ncp_ready rst
}
until_true 300 back || fail "restore: the control plane did not come back ($(kubectl -n "$ns" get pods --no-headers | tr '\n' ';'); $(phases rst))"
log "restore: 3 members voting, API server and controller manager restarted, Ready after $(elapsed "$ts") s"
kubectl -n "$ns" get events --field-selector involvedObject.name=rst-etcd \
    -o jsonpath='{range .items[*]}{.reason}: {.message}{"\n"}{end}' | grep -E '^(RestoreStarted|Restored):' ||
    fail "restore: no RestoreStarted and Restored Events"
kubectl -n "$ns" get events --field-selector reason=RestartedAfterRestore -o jsonpath='{.items[*].message}' |
    grep -q "Pod rst-apiserver-0 deleted" || fail "restore: no RestartedAfterRestore Event for the API server"

tenant_kubeconfig rst "$kc"
[ "$(tkubectl "$kc" get configmap before -o jsonpath='{.data.written}')" = at-1.36 ] ||
    fail "restore: the ConfigMap written before the snapshot is gone"
if tkubectl "$kc" get configmap after >/dev/null 2>&1; then
    fail "restore: the ConfigMap written after the snapshot is still there"
fi
log "restore: 'before' reads back, 'after' is gone"
tkubectl "$kc" create configmap since --from-literal=written=after-restore >/dev/null ||
    fail "restore: cannot write to the restored tenant"
new_rv=$(tkubectl "$kc" get configmap since -o jsonpath='{.metadata.resourceVersion}')
[ "$new_rv" -gt 1000000000 ] || fail "restore: a new write has resourceVersion $new_rv, not past the bump"
# A client that watched from before resumes from its resourceVersion: it is told to list again.
resumed=$(tkubectl "$kc" get --raw \
    "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=$rv&timeoutSeconds=5" 2>&1 || true)
echo "$resumed" | head -c 400
echo
grep -q '"code":410' <<<"$resumed" || grep -qi 'too old resource version\|(Gone)\|Expired' <<<"$resumed" ||
    fail "restore: a watch from resourceVersion $rv was not told to relist: $resumed"
log "restore: a new write is at resourceVersion $new_rv; a watch resumed from $rv is told to relist (410)"

# --- 4. a snapshot on demand, and a restore from it ---
ts=$(now)
kubectl -n "$ns" annotate netcd rst-etcd etcd.nestcp.x-k8s.io/snapshot=on-demand-1 >/dev/null
taken() { [ "$(kubectl -n "$ns" get netcd rst-etcd -o jsonpath='{.status.snapshot.phase}')" = Complete ]; }
until_true 120 taken || fail "on demand: no snapshot: $(kubectl -n "$ns" get netcd rst-etcd -o jsonpath='{.status.conditions[?(@.type=="SnapshotTaken")].message}')"
manual=$(kubectl -n "$ns" get netcd rst-etcd -o jsonpath='{.status.snapshot.name}')
log "on demand: snapshot $manual taken in $(elapsed "$ts") s: $(kubectl -n "$ns" get netcd rst-etcd -o jsonpath='{.status.conditions[?(@.type=="SnapshotTaken")].message}')"
tenant_kubeconfig rst "$kc"
tkubectl "$kc" create configmap later --from-literal=written=after-manual >/dev/null ||
    fail "on demand: cannot write to the tenant"
kas_uid=$(kubectl -n "$ns" get pod rst-apiserver-0 -o jsonpath='{.metadata.uid}')
kcm_uid=$(kubectl -n "$ns" get pod rst-controller-manager-0 -o jsonpath='{.metadata.uid}')
ts=$(now)
kubectl -n "$ns" annotate --overwrite netcd rst-etcd "etcd.nestcp.x-k8s.io/restore-snapshot=$manual" >/dev/null
restored_manual() { [ "$(restore snapshot)" = "$manual" ] && restored; }
until_true 300 restored_manual || fail "on demand: restore phase '$(restore phase)' of '$(restore snapshot)'"
until_true 300 back || fail "on demand: the control plane did not come back ($(phases rst))"
log "on demand: restored from $manual and Ready after $(elapsed "$ts") s"
tenant_kubeconfig rst "$kc"
[ "$(tkubectl "$kc" get configmap since -o jsonpath='{.data.written}')" = after-restore ] ||
    fail "on demand: the ConfigMap written before the snapshot is gone"
if tkubectl "$kc" get configmap later >/dev/null 2>&1; then
    fail "on demand: the ConfigMap written after the snapshot is still there"
fi
log "on demand: 'since' reads back, 'later' is gone"
finish
