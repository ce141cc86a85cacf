#!/usr/bin/env bash
# etcd membership changes go through etcd's API, one member at a time, on real etcd processes
# and bound claims, while a writer runs through the tenant's API server:
#   1. "grow", 1 member on the default storage, scaled 1 -> 3 -> 5 -> 3: after each step
#      `etcdctl member list` names exactly the members the spec asks for, all started and
#      voting; the members that were running keep their pod (UID) and were never restarted; one
#      cluster ID throughout and a revision that only grows; the claims of removed members are
#      gone; every write acknowledged before and during the changes is there.
#      During 3 -> 5, the manager is killed (SIGKILL) as soon as it has recorded the member it
#      is adding, and started again: it converges without a second cluster and without a
#      duplicate member.
#   2. "ephem", 3 members on emptyDir, rolled by a flag change while a writer runs: each member
#      starts empty in its new pod, so each is removed and added again through etcd's API (new
#      member IDs) and syncs from the others; one cluster ID, no write lost.
#   3. "ephem" then moves from emptyDir to claims (spec.storage): its StatefulSet is replaced
#      by one with claim templates that adopts the pods, and the members move one at a time,
#      each on a bound claim of its own and added again (new IDs); one cluster ID, no write
#      lost.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

setup
version=1.36.3
tenant_manifest grow "$version" 1 1 >"$work/grow.yaml"
tenant_manifest ephem "$version" 3 1 "  storage: {emptyDir: {}}" >"$work/ephem.yaml"
t0=$(now)
kubectl -n "$ns" apply -f "$work/grow.yaml" -f "$work/ephem.yaml" >/dev/null
wait_ready grow 300 "$t0"
wait_ready ephem 300 "$t0"

# member_state CLUSTER N: "name learner" lines of `etcdctl member list`, sorted, asked through
# member 0; every member must have started.
members_of() {
    local c=$1 n=$2
    etcdctl_of "$c" "$c-etcd-0" --endpoints "$(etcd_endpoints "$c" 1)" member list -w json |
        python3 -c '
import json, sys
ms = json.load(sys.stdin)["members"]
for m in ms:
    print(m.get("name", "") or "<unstarted>", "learner" if m.get("isLearner") else "voter")' |
        sort
}
# converged CLUSTER N: exactly members CLUSTER-etcd-0..N-1, all started and voting; the
# StatefulSet has N replicas; MembersReady and the control plane's rollout are done.
converged() {
    local c=$1 n=$2 want="" i
    for ((i = 0; i < n; i++)); do want+="$c-etcd-$i voter"$'\n'; done
    [ "$(members_of "$c" "$n" 2>/dev/null)" = "$(printf '%s' "$want" | sort)" ] || return 1
    [ "$(kubectl -n "$ns" get statefulset "$c-etcd" -o jsonpath='{.spec.replicas}')" = "$n" ] ||
        return 1
    [ "$(kubectl -n "$ns" get netcd "$c-etcd" -o jsonpath='{.status.conditions[?(@.type=="MembersReady")].status}')" = True ] ||
        return 1
    [ "$(kubectl -n "$ns" get ncp "$c" -o jsonpath='{.status.conditions[?(@.type=="Upgrading")].reason}')" = UpToDate ] &&
        ncp_ready "$c"
}
declare -A uids restarts
remember_pods() {
    local c=$1 n=$2 i
    for ((i = 0; i < n; i++)); do
        uids[$c-$i]=$(kubectl -n "$ns" get pod "$c-etcd-$i" -o jsonpath='{.metadata.uid}')
        restarts[$c-$i]=$(kubectl -n "$ns" get pod "$c-etcd-$i" \
            -o jsonpath='{.status.containerStatuses[0].restartCount}')
    done
}
# untouched CLUSTER N: members 0..N-1 still run in the pods remember_pods saw, never restarted.
untouched() {
    local c=$1 n=$2 i
    for ((i = 0; i < n; i++)); do
        [ "$(kubectl -n "$ns" get pod "$c-etcd-$i" -o jsonpath='{.metadata.uid}')" = "${uids[$c-$i]}" ] ||
            fail "$c-etcd-$i was replaced"
        [ "$(kubectl -n "$ns" get pod "$c-etcd-$i" -o jsonpath='{.status.containerStatuses[0].restartCount}')" = "${restarts[$c-$i]}" ] ||
            fail "$c-etcd-$i was restarted"
    done
}

# --- 1. grow: 1 -> 3 -> 5 -> 3 under a writer ---
kg=$work/grow.kubeconfig
tenant_kubeconfig grow "$kg"
for i in $(seq 1 10); do
    tkubectl "$kg" create configmap "before-$i" --from-literal=i="$i" >/dev/null ||
        fail "write before-$i"
done
read -r cid0 rev0 <<<"$(etcd_ids grow 1)" || fail "etcd endpoint status"
remember_pods grow 1
log "grow: 1 member, cluster $cid0, revision $rev0"
# Each step changes the API servers' --etcd-servers, so they roll to new pod IPs: a writer runs
# per step, with a kubeconfig for a pod that serves when it starts.
writers=()
writer_step() {
    [ ${#writers[@]} -gt 0 ] && stop_writer "${writers[-1]}"
    tenant_kubeconfig grow "$kg"
    writers+=("grow${#writers[@]}")
    start_writer "$kg" "${writers[-1]}"
}
written() {
    local w n=0
    for w in "${writers[@]}"; do n=$((n + $(wc -l <"$work/$w.$1"))); done
    echo "$n"
}
rev=$rev0
# scale_to N KEEP: scales grow to N members and waits; members 0..KEEP-1 must be untouched.
scale_to() {
    local n=$1 keep=$2 t cid r
    t=$(now)
    writer_step
    kubectl -n "$ns" patch netcd grow-etcd --type merge -p "{\"spec\":{\"replicas\":$n}}" >/dev/null
    until_true 300 converged grow "$n" ||
        fail "grow did not converge to $n members: $(members_of grow "$n" | tr '\n' ';') (components: $(phases grow))"
    untouched grow "$keep"
    read -r cid r <<<"$(etcd_ids grow "$n")" || fail "etcd endpoint status at $n members"
    [ "$cid" = "$cid0" ] || fail "the cluster ID changed: $cid0 -> $cid"
    [ "$r" -gt "$rev" ] || fail "the revision went backwards: $rev -> $r"
    rev=$r
    log "grow: $n members, all voting, in $(elapsed "$t") s (cluster $cid, revision $r;" \
        "writers $(written ok) written, $(written failed) failed)"
}
scale_to 3 1
remember_pods grow 3

# --- 2. 3 -> 5, with a kill -9 of the manager in the middle of adding a member ---
t=$(now)
writer_step
kubectl -n "$ns" patch netcd grow-etcd --type merge -p '{"spec":{"replicas":5}}' >/dev/null
adding() { [ -n "$(kubectl -n "$ns" get netcd grow-etcd -o jsonpath='{.status.adding}')" ]; }
until_true 60 adding || fail "the manager recorded no member to add"
kill -9 "$mgr_pid"
wait "$mgr_pid" 2>/dev/null || true
log "manager killed while adding $(kubectl -n "$ns" get netcd grow-etcd -o jsonpath='{.status.adding}')"
start_manager
until_true 300 converged grow 5 ||
    fail "grow did not converge after the restart: $(members_of grow 5 | tr '\n' ';')"
untouched grow 3
[ "$(members_of grow 5 | wc -l)" = 5 ] || fail "a member was added twice"
read -r cid r <<<"$(etcd_ids grow 5)" || fail "etcd endpoint status after the restart"
[ "$cid" = "$cid0" ] || fail "the cluster ID changed across the restart: $cid0 -> $cid"
[ "$r" -gt "$rev" ] || fail "the revision went backwards: $rev -> $r"
rev=$r
log "grow: 5 members in $(elapsed "$t") s, across the manager's restart (pid $mgr_pid), one cluster"

# --- 3. 5 -> 3 ---
scale_to 3 3
for i in 3 4; do
    kubectl -n "$ns" get pvc "data-grow-etcd-$i" >/dev/null 2>&1 &&
        fail "the claim of removed member grow-etcd-$i is still there"
done
writer_step
until_true 60 writes_at_least "${writers[-1]}" 3 || fail "no write succeeds at the end"
stop_writer "${writers[-1]}"
for i in $(seq 1 10); do
    [ "$(tkubectl "$kg" get configmap "before-$i" -o jsonpath='{.data.i}')" = "$i" ] ||
        fail "before-$i is gone"
done
for w in "${writers[@]}"; do
    all_written "$kg" "$w" || fail "writes acknowledged during the scaling were lost ($w)"
done
log "grow: $(written ok) writes acknowledged, none lost ($(written failed) failed: sent to an" \
    "API server pod that its roll to the new member list had replaced)"

# --- 4. ephem: a roll of 3 emptyDir members adds each again ---
ke=$work/ephem.kubeconfig
tenant_kubeconfig ephem "$ke"
tkubectl "$ke" create configmap precious --from-literal=v=1 >/dev/null || fail "write to ephem"
read -r ecid erev0 <<<"$(etcd_ids ephem 3)" || fail "etcd endpoint status of ephem"
ids0=$(etcdctl_of ephem ephem-etcd-0 --endpoints "$(etcd_endpoints ephem 1)" member list |
    cut -d, -f1 | sort)
remember_pods ephem 3
start_writer "$ke" ephem
t2=$(now)
kubectl -n "$ns" patch netcd ephem-etcd --type merge \
    -p '{"spec":{"extraArgs":{"quota-backend-bytes":"4294967296"}}}' >/dev/null
rolled() {
    local i
    for i in 0 1 2; do
        [ "$(kubectl -n "$ns" get pod "ephem-etcd-$i" -o jsonpath='{.metadata.uid}')" != "${uids[ephem-$i]}" ] ||
            return 1
        pod_cmdline "ephem-etcd-$i" etcd | grep -qx -- --quota-backend-bytes=4294967296 || return 1
    done
    converged ephem 3
}
until_true 400 rolled || fail "the emptyDir roll did not complete: $(members_of ephem 3 | tr '\n' ';')"
log "ephem: every member replaced and added again in $(elapsed "$t2") s"
n_ok=$(wc -l <"$work/ephem.ok")
until_true 60 writes_at_least ephem $((n_ok + 3)) || fail "no write succeeds after the roll"
stop_writer ephem
ids1=$(etcdctl_of ephem ephem-etcd-0 --endpoints "$(etcd_endpoints ephem 1)" member list |
    cut -d, -f1 | sort)
[ -z "$(comm -12 <(echo "$ids0") <(echo "$ids1"))" ] ||
    fail "a member kept its ID though its data was gone: $(echo $ids0) -> $(echo $ids1)"
read -r ecid1 erev1 <<<"$(etcd_ids ephem 3)" || fail "etcd endpoint status of ephem after the roll"
[ "$ecid1" = "$ecid" ] || fail "ephem's cluster ID changed: $ecid -> $ecid1"
[ "$erev1" -gt "$erev0" ] || fail "ephem's revision went backwards: $erev0 -> $erev1"
[ "$(tkubectl "$ke" get configmap precious -o jsonpath='{.data.v}')" = 1 ] || fail "ephem lost its data"
all_written "$ke" ephem || fail "writes acknowledged during the emptyDir roll were lost"
log "ephem: members $(echo $ids0) -> $(echo $ids1), cluster $ecid1, revision $erev0 -> $erev1;" \
    "writer $(wc -l <"$work/ephem.ok") written, $(wc -l <"$work/ephem.failed") failed"

# --- 5. ephem moves its members from emptyDir to claims, one at a time ---
tenant_kubeconfig ephem "$ke"
start_writer "$ke" claims
sts_uid=$(kubectl -n "$ns" get statefulset ephem-etcd -o jsonpath='{.metadata.uid}')
t3=$(now)
kubectl -n "$ns" patch netcd ephem-etcd --type merge \
    -p '{"spec":{"storage":{"emptyDir":null,"persistentVolumeClaim":{"size":"1Gi"}}}}' >/dev/null
on_claims() {
    local i
    [ "$(kubectl -n "$ns" get statefulset ephem-etcd -o jsonpath='{.metadata.uid}')" != "$sts_uid" ] ||
        return 1
    for i in 0 1 2; do
        [ "$(kubectl -n "$ns" get pod "ephem-etcd-$i" -o jsonpath='{.spec.volumes[?(@.name=="data")].persistentVolumeClaim.claimName}')" = "data-ephem-etcd-$i" ] ||
            return 1
        [ "$(kubectl -n "$ns" get pvc "data-ephem-etcd-$i" -o jsonpath='{.status.phase}')" = Bound ] ||
            return 1
    done
    [ "$(kubectl -n "$ns" get netcd ephem-etcd -o jsonpath='{.status.conditions[?(@.type=="DataNotPersistent")].status}')" = False ] &&
        converged ephem 3
}
until_true 400 on_claims || fail "ephem's members did not move to claims: $(members_of ephem 3 | tr '\n' ';') (components: $(phases ephem))"
log "ephem: every member on a claim of its own in $(elapsed "$t3") s"
n_ok=$(wc -l <"$work/claims.ok")
until_true 60 writes_at_least claims $((n_ok + 3)) || fail "no write succeeds after the move"
stop_writer claims
ids2=$(etcdctl_of ephem ephem-etcd-0 --endpoints "$(etcd_endpoints ephem 1)" member list |
    cut -d, -f1 | sort)
[ -z "$(comm -12 <(echo "$ids1") <(echo "$ids2"))" ] ||
    fail "a member moved to a claim kept its ID: $(echo $ids1) -> $(echo $ids2)"
read -r ecid2 erev2 <<<"$(etcd_ids ephem 3)" || fail "etcd endpoint status of ephem after the move"
[ "$ecid2" = "$ecid" ] || fail "ephem's cluster ID changed in the move: $ecid -> $ecid2"
[ "$erev2" -gt "$erev1" ] || fail "ephem's revision went backwards: $erev1 -> $erev2"
[ "$(tkubectl "$ke" get configmap precious -o jsonpath='{.data.v}')" = 1 ] ||
    fail "ephem lost its data in the move"
all_written "$ke" ephem || fail "writes of the roll were lost in the move"
all_written "$ke" claims || fail "writes acknowledged during the move were lost"
log "ephem: members $(echo $ids1) -> $(echo $ids2), cluster $ecid2, revision $erev1 -> $erev2;" \
    "writer $(wc -l <"$work/claims.ok") written, $(wc -l <"$work/claims.failed") failed"

finish
