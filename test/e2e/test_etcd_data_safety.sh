#!/usr/bin/env bash
# etcd never loses a tenant's data, on real etcd processes and real storage (PersistentVolume
# Claims provisioned and bound by the super cluster's controller manager):
#   1. "keep", a 1-member etcd on the default storage: its pod runs from a Bound claim; an etcd
#      roll (a flag change) replaces the pod while a writer runs, and afterwards every key
#      written before and during the roll is there, the cluster ID is the same and the revision
#      has not gone backwards (a re-bootstrap keeps the cluster ID, so the ID alone proves
#      nothing);
#   2. "ephem", a 1-member etcd on emptyDir: the same roll is refused with DataNotPersistent
#      (and a Warning Event), its pod is left alone and keeps the data.
# Scaling, and rolls of several members on emptyDir, are test_etcd_membership.sh's.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

setup
version=1.36.3
tenant_manifest keep "$version" 1 1 >"$work/keep.yaml"
tenant_manifest ephem "$version" 1 1 "  storage: {emptyDir: {}}" >"$work/ephem.yaml"
t0=$(now)
kubectl -n "$ns" apply -f "$work/keep.yaml" -f "$work/ephem.yaml" >/dev/null
wait_ready keep 300 "$t0"
wait_ready ephem 300 "$t0"

# --- the claim is real ---
phase=$(kubectl -n "$ns" get pvc data-keep-etcd-0 -o jsonpath='{.status.phase}')
[ "$phase" = Bound ] || fail "claim data-keep-etcd-0 is $phase, not Bound"
pv=$(kubectl -n "$ns" get pvc data-keep-etcd-0 -o jsonpath='{.spec.volumeName}')
dir=$(kubectl get pv "$pv" -o jsonpath='{.spec.hostPath.path}')
[ -d "$dir/data/member" ] || fail "etcd's data is not in the bound volume $pv ($dir)"
log "keep-etcd-0 runs from claim data-keep-etcd-0, bound to $pv ($dir)"
kubectl -n "$ns" get pvc -l cluster.x-k8s.io/cluster-name=ephem -o name | grep -q . &&
    fail "the emptyDir etcd has claims"
dnp=$(kubectl -n "$ns" get netcd keep-etcd -o jsonpath='{.status.conditions[?(@.type=="DataNotPersistent")].status}')
[ "$dnp" = False ] || fail "keep-etcd: DataNotPersistent is '$dnp', not False"

# --- 1. a roll of the 1-member etcd on its claim keeps every key ---
kk=$work/keep.kubeconfig
tenant_kubeconfig keep "$kk"
for i in $(seq 1 20); do
    tkubectl "$kk" create configmap "before-$i" --from-literal=i="$i" >/dev/null ||
        fail "write before-$i"
done
read -r cid0 rev0 <<<"$(etcd_ids keep 1)" || fail "etcd endpoint status"
uid0=$(kubectl -n "$ns" get pod keep-etcd-0 -o jsonpath='{.metadata.uid}')
log "before the roll: cluster $cid0, revision $rev0, pod uid $uid0"

start_writer "$kk" during
t1=$(now)
kubectl -n "$ns" patch netcd keep-etcd --type merge \
    -p '{"spec":{"extraArgs":{"quota-backend-bytes":"4294967296"}}}' >/dev/null
replaced() {
    local uid
    uid=$(kubectl -n "$ns" get pod keep-etcd-0 -o jsonpath='{.metadata.uid}') || return 1
    [ -n "$uid" ] && [ "$uid" != "$uid0" ]
}
until_true 120 replaced || fail "keep-etcd-0 was not replaced by the roll"
rolled() {
    pod_cmdline keep-etcd-0 etcd | grep -qx -- --quota-backend-bytes=4294967296 &&
        [ "$(kubectl -n "$ns" get ncp keep -o jsonpath='{.status.conditions[?(@.type=="Upgrading")].reason}')" = UpToDate ] &&
        ncp_ready keep
}
until_true 180 rolled || fail "the roll did not complete (components: $(phases keep))"
log "etcd rolled in $(elapsed "$t1") s; the new member runs --quota-backend-bytes"
# A few writes after the new member serves, then the writer stops.
n_ok=$(wc -l <"$work/during.ok")
until_true 30 writes_at_least during $((n_ok + 3)) || fail "no write succeeds after the roll"
stop_writer during
tenant_kubeconfig keep "$kk"
read -r cid1 rev1 <<<"$(etcd_ids keep 1)" || fail "etcd endpoint status after the roll"
log "after the roll: cluster $cid1, revision $rev1; writer: $(wc -l <"$work/during.ok") written," \
    "$(wc -l <"$work/during.failed") failed while the only member restarted"
[ "$cid1" = "$cid0" ] || fail "the cluster ID changed: $cid0 -> $cid1"
[ "$rev1" -gt "$rev0" ] || fail "the revision went backwards: $rev0 -> $rev1"
for i in $(seq 1 20); do
    got=$(tkubectl "$kk" get configmap "before-$i" -o jsonpath='{.data.i}') ||
        fail "before-$i is gone after the roll"
    [ "$got" = "$i" ] || fail "before-$i holds '$got'"
done
all_written "$kk" during || fail "writes acknowledged during the roll were lost"
[ "$(kubectl -n "$ns" get pvc data-keep-etcd-0 -o jsonpath='{.spec.volumeName}')" = "$pv" ] ||
    fail "the claim was rebound"

# --- 2. a roll of a 1-member etcd on emptyDir is refused ---
ke=$work/ephem.kubeconfig
tenant_kubeconfig ephem "$ke"
tkubectl "$ke" create configmap precious --from-literal=v=1 >/dev/null || fail "write to ephem"
euid=$(kubectl -n "$ns" get pod ephem-etcd-0 -o jsonpath='{.metadata.uid}')
reason=$(kubectl -n "$ns" get netcd ephem-etcd -o jsonpath='{.status.conditions[?(@.type=="DataNotPersistent")].reason}')
[ "$reason" = EmptyDir ] || fail "ephem-etcd: DataNotPersistent reason '$reason', not EmptyDir"
kubectl -n "$ns" patch netcd ephem-etcd --type merge \
    -p '{"spec":{"extraArgs":{"quota-backend-bytes":"4294967296"}}}' >/dev/null
roll_refused() {
    [ "$(kubectl -n "$ns" get netcd ephem-etcd -o jsonpath='{.status.conditions[?(@.type=="DataNotPersistent")].reason}')" = RollRefused ] &&
        [ "$(kubectl -n "$ns" get ncp ephem -o jsonpath='{.status.conditions[?(@.type=="Upgrading")].reason}')" = DataNotPersistent ]
}
until_true 60 roll_refused || fail "the emptyDir roll was not refused"
msg=$(kubectl -n "$ns" get netcd ephem-etcd -o jsonpath='{.status.conditions[?(@.type=="DataNotPersistent")].message}')
log "refused: $msg"
[[ $msg == *"its certificates expire on 20"* ]] || fail "the refusal does not name the expiry"
[[ $msg == *"accept-data-loss"* ]] || fail "the refusal does not name the opt-in"
event() {
    kubectl -n "$ns" get events --field-selector involvedObject.name=ephem-etcd,reason=RollRefused \
        -o jsonpath='{.items[*].type}' | grep -qw Warning
}
until_true 30 event || fail "no Warning Event RollRefused for ephem-etcd"
[ "$(kubectl -n "$ns" get pod ephem-etcd-0 -o jsonpath='{.metadata.uid}')" = "$euid" ] ||
    fail "ephem-etcd-0 was replaced"
pod_cmdline ephem-etcd-0 etcd | grep -q -- --quota-backend-bytes && fail "the refused flag runs"
[ "$(tkubectl "$ke" get configmap precious -o jsonpath='{.data.v}')" = 1 ] ||
    fail "ephem lost its data"
ncp_ready ephem || fail "ephem is not Ready while the roll is refused"

finish
