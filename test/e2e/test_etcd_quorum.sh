#!/usr/bin/env bash
# A tenant with a 3-member etcd on the default (persistent) storage:
#   - the members form one cluster (`etcdctl member list` with the healthcheck client
#     certificate of the etcd certs Secret, over TLS to the members' DNS names);
#   - kill -9 of the leader's process: the tenant keeps serving reads and writes on the other
#     two members, the node agent restarts the process, and the member rejoins and catches up;
#   - an etcd roll (a flag change) while a writer runs: each member's pod is replaced and comes
#     back with its own data (same member IDs, one cluster ID, a revision that only grows), and
#     every write acknowledged before and during the roll is there afterwards.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# The killed member stays down for 10 s before the node agent restarts it.
agent_args=(--restart-backoff 10)
setup
tenant_manifest quorum 1.36.3 3 1 >"$work/quorum.yaml"
t0=$(now)
kubectl -n "$ns" apply -f "$work/quorum.yaml" >/dev/null
wait_ready quorum 300 "$t0"

certs=$work/etcd-pki
etcd_client_certs quorum "$certs"
domain=quorum-etcd.$ns.svc
endpoints=https://quorum-etcd-0.$domain:2379,https://quorum-etcd-1.$domain:2379,https://quorum-etcd-2.$domain:2379
# etcdctl_in POD ARGS...: etcdctl with the healthcheck client certificate, names resolved as in
# POD.
etcdctl_in() {
    local pod=$1
    shift
    in_pod_names "$pod" env ETCDCTL_API=3 etcdctl --cacert "$certs/ca.crt" \
        --cert "$certs/healthcheck-client.crt" --key "$certs/healthcheck-client.key" \
        --dial-timeout 3s --command-timeout 5s "$@"
}

members=$(etcdctl_in quorum-etcd-0 --endpoints "https://quorum-etcd-0.$domain:2379" \
    member list) || fail "etcdctl member list"
echo "$members"
[ "$(grep -c ', started, ' <<<"$members")" = 3 ] || fail "expected 3 started members"
for i in 0 1 2; do
    grep -q ", started, quorum-etcd-$i, https://quorum-etcd-$i.$domain:2380," <<<"$members" ||
        fail "member quorum-etcd-$i is not in the list"
done
# Without the client certificate the members refuse the client.
if in_pod_names quorum-etcd-0 env ETCDCTL_API=3 etcdctl --cacert "$certs/ca.crt" \
    --dial-timeout 2s --command-timeout 3s --endpoints "https://quorum-etcd-0.$domain:2379" \
    member list >/dev/null 2>&1; then
    fail "etcd answered a client without a certificate"
fi

kc=$work/quorum.kubeconfig
tenant_kubeconfig quorum "$kc"
tkubectl "$kc" create configmap before-kill >/dev/null || fail "write before the kill"

# --- kill -9 the leader ---
status=$(etcdctl_in quorum-etcd-0 --endpoints "$endpoints" endpoint status -w json) ||
    fail "etcdctl endpoint status"
leader=$(python3 -c '
import json, sys
for e in json.loads(sys.argv[1]):
    if e["Status"]["leader"] == e["Status"]["header"]["member_id"]:
        print(e["Endpoint"])' "$status")
leader=${leader#https://}
leader=${leader%%.*}
[ -n "$leader" ] || fail "no leader in: $status"
survivor=quorum-etcd-0
[ "$leader" = quorum-etcd-0 ] && survivor=quorum-etcd-1
old_pid=$(pod_pid "$leader" etcd) || fail "no pid for $leader"
restarts0=$(kubectl -n "$ns" get pod "$leader" -o jsonpath='{.status.containerStatuses[0].restartCount}')
log "killing the leader $leader (pid $old_pid) with SIGKILL"
kill -9 "$old_pid"
t1=$(now)
pid_gone() { [ "$(pod_pid "$leader" etcd)" != "$old_pid" ]; }
until_true 10 pid_gone || fail "the node agent did not notice that $leader exited"

# The tenant keeps serving on the two members left, reads and writes, for as long as the
# member is down (the first round may fall into the leader election).
ok=0
total=0
last=fail
while [ -z "$(pod_pid "$leader" etcd)" ] && [ "$total" -lt 20 ]; do
    total=$((total + 1))
    last=fail
    if tkubectl "$kc" get namespaces -o name >/dev/null 2>&1 &&
        tkubectl "$kc" create configmap "during-kill-$total" >/dev/null 2>&1; then
        ok=$((ok + 1))
        last=ok
    fi
    kill -0 "$old_pid" 2>/dev/null && fail "pid $old_pid survived SIGKILL"
done
log "while $leader was down ($(elapsed "$t1") s): $ok of $total read+write rounds succeeded"
[ "$total" -ge 3 ] || fail "$leader was restarted too soon to test anything"
if [ "$ok" -lt $((total - 1)) ] || [ "$last" != ok ]; then
    fail "the tenant did not keep serving with two of three members"
fi

# The node agent restarts the process; the member rejoins.
restarted() {
    [ "$(kubectl -n "$ns" get pod "$leader" \
        -o jsonpath='{.status.containerStatuses[0].restartCount}')" -gt "$restarts0" ]
}
until_true 60 restarted || fail "$leader was not restarted"
new_pid=$(pod_pid "$leader" etcd) || fail "no pid for $leader after the restart"
[ "$new_pid" != "$old_pid" ] || fail "$leader still has pid $old_pid"
until_true 60 etcdctl_in "$survivor" --endpoints "https://$leader.$domain:2379" endpoint health ||
    fail "$leader is not healthy after its restart"
log "$leader restarted by the node agent as pid $new_pid; healthy after $(elapsed "$t1") s"
health=$(etcdctl_in "$survivor" --endpoints "$endpoints" endpoint health 2>&1) ||
    fail "not every member is healthy: $health"
echo "$health"
# It has caught up: a serializable read from the restarted member sees the writes made without it.
got=$(etcdctl_in "$survivor" --endpoints "https://$leader.$domain:2379" get --consistency=s \
    --prefix --keys-only "/registry/configmaps/default/during-kill-" | grep -c during-kill) || true
log "the restarted member serves $got of the $ok ConfigMaps written while it was down"
[ "$got" = "$ok" ] || fail "the restarted member has $got of $ok ConfigMaps"
members=$(etcdctl_in "$survivor" --endpoints "$endpoints" member list)
[ "$(grep -c ', started, ' <<<"$members")" = 3 ] || fail "membership changed: $members"
tkubectl "$kc" get namespaces -o name >/dev/null || fail "the tenant does not answer after the kill"
# The member's Pod turns Ready again at its next readiness probe, then the StatefulSet's
# status, the NestedEtcd's and the control plane's follow: wait for that, not just after it.
until_true 60 ncp_ready quorum ||
    fail "the control plane is not Ready within 60 s of the member's return"
log "control plane Ready again $(elapsed "$t1") s after the kill"

# --- an etcd roll keeps every member's data ---
ids0=$(etcdctl_in quorum-etcd-0 --endpoints "$endpoints" member list | cut -d, -f1 | sort)
read -r cid0 rev0 <<<"$(etcd_ids quorum 3)" || fail "etcd endpoint status"
declare -A uid0
for i in 0 1 2; do
    uid0[$i]=$(kubectl -n "$ns" get pod "quorum-etcd-$i" -o jsonpath='{.metadata.uid}')
done
log "before the roll: cluster $cid0, revision $rev0, members $(echo $ids0)"
start_writer "$kc" roll
t2=$(now)
kubectl -n "$ns" patch netcd quorum-etcd --type merge     -p '{"spec":{"extraArgs":{"quota-backend-bytes":"4294967296"}}}' >/dev/null
all_replaced() {
    local i uid
    for i in 0 1 2; do
        uid=$(kubectl -n "$ns" get pod "quorum-etcd-$i" -o jsonpath='{.metadata.uid}') || return 1
        [ -n "$uid" ] && [ "$uid" != "${uid0[$i]}" ] || return 1
        pod_cmdline "quorum-etcd-$i" etcd | grep -qx -- --quota-backend-bytes=4294967296 || return 1
    done
    [ "$(kubectl -n "$ns" get ncp quorum -o jsonpath='{.status.conditions[?(@.type=="Upgrading")].reason}')" = UpToDate ] &&
        ncp_ready quorum
}
until_true 300 all_replaced || fail "the etcd roll did not complete (components: $(phases quorum))"
log "every member replaced in $(elapsed "$t2") s"
n_ok=$(wc -l <"$work/roll.ok")
until_true 30 writes_at_least roll $((n_ok + 3)) || fail "no write succeeds after the roll"
stop_writer roll
read -r cid1 rev1 <<<"$(etcd_ids quorum 3)" || fail "etcd endpoint status after the roll"
ids1=$(etcdctl_in quorum-etcd-0 --endpoints "$endpoints" member list | cut -d, -f1 | sort)
log "after the roll: cluster $cid1, revision $rev1, members $(echo $ids1); writer:" \
    "$(wc -l <"$work/roll.ok") written, $(wc -l <"$work/roll.failed") failed"
[ "$cid1" = "$cid0" ] || fail "the cluster ID changed: $cid0 -> $cid1"
[ "$rev1" -gt "$rev0" ] || fail "the revision went backwards: $rev0 -> $rev1"
[ "$ids1" = "$ids0" ] || fail "the members changed: $(echo $ids0) -> $(echo $ids1)"
tkubectl "$kc" get configmap before-kill >/dev/null || fail "before-kill is gone after the roll"
all_written "$kc" roll || fail "writes acknowledged during the roll were lost"

finish
