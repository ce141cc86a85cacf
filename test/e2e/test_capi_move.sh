#!/usr/bin/env bash
# clusterctl move with an etcd snapshot (docs/clusterctl.md), from one management cluster to
# another, each with Cluster API's core manager installed by `clusterctl init` from the same local
# provider repository (test/support/capi.sh) and a nestcp manager of its own:
#   - the source is the shared super cluster; the target a second one this test starts
#     (hack/kube-env.sh up in its work directory, ports of its own) with a node agent on
#     another pod network, and Cluster API's pod there on other ports than the source's (both
#     listen on every loopback address);
#   - tenant t1 comes from `clusterctl generate cluster`, its NestedEtcd naming a snapshots
#     claim; in both clusters that claim is bound to a hostPath PersistentVolume on the same
#     directory (storage both mount, as NFS would be), the target's made before the move;
#   - before the move a ConfigMap is written in the tenant and a ServiceAccount token issued;
#   - `controlplane.nestcp.x-k8s.io/move` on the NestedControlPlane: nestcp stops the tenant's
#     API servers, takes a snapshot, lifts the block-move annotation (MoveBlocked False
#     ReadyToMove), and `clusterctl move --to-kubeconfig` goes through;
#   - in the target: etcd starts from the snapshot, the control plane is Ready, Cluster API
#     sets the Cluster Available, the block-move annotation is back (MoveBlocked
#     TenantDataNotMovable), the ConfigMap reads back through the target's tenant API server
#     and the token issued before the move still authenticates;
#   - in the source nothing of the tenant is left, and the snapshot is still on the claim.
# Runs alone (RUN_SERIAL): Cluster API's CRDs and webhooks are cluster-wide, and its pods listen
# on every loopback address.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=../support/capi.sh
. "$NESTCP_SOURCE_DIR/test/support/capi.sh"

kube_env=$NESTCP_SOURCE_DIR/hack/kube-env.sh
tdir=$work/target
tkc=$tdir/kubeconfig
tstate=$work/target-agent
tnode=$node-target
tagent_pid=
tmgr_pid=
shared=$work/snapshots
pv=$ns-snapshots
ncp=t1-control-plane
etcd=t1-nestedetcd
fail_logs=("$work/target-manager.log" "$work/target-agent.log")
fail_agents=("$tstate")
podnet_claim || fail "no free pod network for the target"
tnet=$podnet
tgt() { KUBECONFIG=$tkc "$@"; }

# The target goes whatever happened: its manager, its node agent (which stops its pods), the
# volumes its provisioner made (their directories are not under $work), its super cluster.
target_down() {
    [ -n "$tmgr_pid" ] && stop_pid "$tmgr_pid" 20
    tmgr_pid=
    [ -n "$tagent_pid" ] && stop_pid "$tagent_pid" 60
    tagent_pid=
    [ -f "$tdir/ports" ] || return 0
    tgt kubectl get pv -o jsonpath='{range .items[?(@.spec.storageClassName=="standard")]}{.spec.hostPath.path}{"\n"}{end}' \
        2>/dev/null | while read -r d; do
        case "$d" in /tmp/hostpath_pv/?*) rm -rf "$d" ;; esac
    done
    "$kube_env" down --dir "$tdir" >/dev/null 2>&1 || true
    rm -f "$tdir/ports"
}
source_down() {
    capi_remove "$work"
    kubectl delete pv "$pv" --ignore-not-found --wait=false >/dev/null 2>&1 || true
}
trap 'target_down; source_down; cleanup' EXIT

# The tenant's objects in a cluster: what clusterctl moves and what nestcp makes from it.
tenant_objects() {
    kubectl -n "$ns" get statefulsets,services,secrets,jobs,pods,ncp,netcd,nkas,nkcm,nc,clusters.cluster.x-k8s.io \
        -o name 2>/dev/null
}
ncp_field() { kubectl -n "$ns" get ncp "$ncp" -o jsonpath="$1"; }
# move_state: "<block-move annotation or <no value>>/<MoveBlocked status> <reason>"
move_state() {
    kubectl -n "$ns" get ncp "$ncp" -o go-template='{{index .metadata.annotations "clusterctl.cluster.x-k8s.io/block-move"}}/{{range .status.conditions}}{{if eq .type "MoveBlocked"}}{{.status}} {{.reason}}{{end}}{{end}}'
}
move_state_is() { [ "$(move_state)" = "$1" ]; }
cluster_field() { kubectl -n "$ns" get clusters.cluster.x-k8s.io t1 -o jsonpath="$1"; }
cluster_available() {
    [ "$(cluster_field '{.status.conditions[?(@.type=="Available")].status}')" = True ]
}
cluster_conditions() {
    cluster_field '{range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\n"}{end}'
}

# --- the provider repositories: the target's pod on ports of its own ---
capi_repo "$work"
mkdir -p "$work/target-capi"
cp -R "$work/repo" "$work/target-capi/repo"
sed "s|$work/repo|$work/target-capi/repo|" "$work/clusterctl.yaml" >"$work/target-capi/clusterctl.yaml"
read -r -d '' twebhook thealth tdiag < <(capi_free_ports 3 | tr '\n' ' ') || true
capi_listen_on "$work/target-capi" "$twebhook" "$thealth" "$tdiag"

# --- the source: the shared super cluster ---
t0=$(now)
kubectl create namespace "$ns" >/dev/null
mkdir -p "$agent_state" "$shared"
# Tenant pods, Cluster API's, and the pods of nestcp's etcd snapshot and restore Jobs. This
# test runs alone: no other test's pods match.
agent_selectors=(--selector app.kubernetes.io/managed-by=nestcp
    --selector cluster.x-k8s.io/provider=cluster-api
    --selector app.kubernetes.io/component=etcd-snapshot
    --selector app.kubernetes.io/component=etcd-restore)
"$agent_bin" --node-name "$node" --state-dir "$agent_state" --pod-network "$pod_net" \
    "${agent_selectors[@]}" --restart-backoff 1 --stop-grace-max 5 >"$work/agent.log" 2>&1 &
agent_pid=$!
until_true 30 node_ready || fail "the node agent's Node $node is not Ready"
capi_init "$work" 9443 "$work/init.log"
start_manager
shared_snapshot_claim t1-snapshots "$pv" "$shared" >"$work/claim.yaml"
kubectl apply -f "$work/claim.yaml" >/dev/null || fail "the snapshot claim is refused"

# --- a tenant from the cluster template, its etcd with the snapshots claim ---
clusterctl_in "$work" generate cluster t1 \
    --from "$work/repo/infrastructure-nested/$nestcp_release/cluster-template.yaml" \
    --target-namespace "$ns" --kubernetes-version v1.36.3 >"$work/t1-template.yaml" ||
    fail "clusterctl generate cluster"
python3 - "$work/t1-template.yaml" "$work/t1.yaml" <<'PY'
import sys
import yaml

docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
for d in docs:
    if d["kind"] == "NestedEtcd":
        d["spec"]["snapshots"] = {"persistentVolumeClaim": {"claimName": "t1-snapshots"}}
yaml.safe_dump_all(docs, open(sys.argv[2], "w"), sort_keys=False)
PY
t_tenant=$(now)
until_true 60 kubectl apply -f "$work/t1.yaml" ||
    fail "the generated cluster is refused: $(kubectl apply -f "$work/t1.yaml" 2>&1)"
log "source: namespace $ns, node $node (pods on 127.$pod_net.0.0/16), manager pid $mgr_pid;" \
    "t1 applied $(elapsed "$t0") s after the source's set-up began"

# --- the target: a super cluster of its own, while the tenant starts in the source ---
t0=$(now)
"$kube_env" up --dir "$tdir" >"$work/target-up.log" 2>&1 ||
    fail "the target super cluster did not start: $(tail -n 20 "$work/target-up.log")"
[ "$(tgt kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')" != \
    "$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')" ] ||
    fail "the target super cluster has the source's address"
tgt kubectl create namespace "$ns" >/dev/null
mkdir -p "$tstate"
"$agent_bin" --kubeconfig "$tkc" --node-name "$tnode" --state-dir "$tstate" \
    --pod-network "$tnet" "${agent_selectors[@]}" --restart-backoff 1 --stop-grace-max 5 \
    >"$work/target-agent.log" 2>&1 &
tagent_pid=$!
tnode_ready() { node=$tnode tgt node_ready; }
until_true 30 tnode_ready || fail "the target node agent's Node $tnode is not Ready"
tgt capi_init "$work/target-capi" "$twebhook" "$work/target-init.log"
tgt kubectl apply -f "$work/claim.yaml" >/dev/null || fail "the target's snapshot claim is refused"
KUBECONFIG=$tkc "$NESTCP_BIN" manager --namespace "$ns" --templates "$NESTCP_SOURCE_DIR/templates" \
    --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 \
    >>"$work/target-manager.log" 2>&1 &
tmgr_pid=$!
claim_bound() {
    [ "$(kubectl -n "$ns" get pvc t1-snapshots -o jsonpath='{.status.phase}/{.spec.volumeName}')" = "Bound/$pv" ]
}
until_true 30 tgt claim_bound || fail "the target's claim t1-snapshots is not bound to $pv"
log "target: $(head -n 1 "$work/target-up.log" | sed 's/^kube-env: //'), node $tnode" \
    "(pods on 127.$tnet.0.0/16), Cluster API on ports $twebhook/$thealth/$tdiag," \
    "manager pid $tmgr_pid; ready in $(elapsed "$t0") s"

wait_ready "$ncp" 300 "$t_tenant"
until_true 180 cluster_available || fail "Cluster t1 is not Available in the source: $(cluster_conditions)"
claim_bound || fail "the source's claim t1-snapshots is not bound to $pv"
move_state_is "/True TenantDataNotMovable" ||
    fail "the NestedControlPlane does not block clusterctl move: $(move_state)"
log "source: Cluster t1 Available $(elapsed "$t_tenant") s after it was applied"

# --- data written, and a token issued, before the move ---
tenant_kubeconfig t1 "$work/t1.kubeconfig"
tkubectl "$work/t1.kubeconfig" create configmap before-move --from-literal=written=before-move \
    >/dev/null || fail "cannot write to the tenant before the move"
tkubectl "$work/t1.kubeconfig" create serviceaccount mover >/dev/null ||
    fail "cannot create a ServiceAccount in the tenant"
tkubectl "$work/t1.kubeconfig" create token mover --duration 2h >"$work/mover.token" ||
    fail "the tenant issues no token for ServiceAccount mover"
chmod 600 "$work/mover.token"
# token_kubeconfig KUBECONFIG OUT: KUBECONFIG (from tenant_kubeconfig) with the token instead of
# the client certificate.
token_kubeconfig() {
    python3 - "$1" "$2" "$work/mover.token" <<'PY'
import os
import sys
import yaml

kc = yaml.safe_load(open(sys.argv[1]))
kc["users"][0]["user"] = {"tokenFile": sys.argv[3]}
fd = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
with os.fdopen(fd, "w") as f:
    yaml.safe_dump(kc, f)
PY
}
whoami_with_token() {
    token_kubeconfig "$1" "$work/token.kubeconfig"
    tkubectl "$work/token.kubeconfig" auth whoami -o jsonpath='{.status.userInfo.username}'
}
[ "$(whoami_with_token "$work/t1.kubeconfig")" = system:serviceaccount:default:mover ] ||
    fail "the token issued for ServiceAccount mover does not authenticate in the source"
# The CA and the service-account key the target must use as they are (digests, not contents).
secret_digest() { kubectl -n "$ns" get secret "$1" -o jsonpath='{.data}' | sha256sum | cut -c1-64; }
for s in t1-ca t1-sa; do
    kubectl -n "$ns" get secret "$s" >/dev/null || fail "no Secret $s in the source"
    secret_digest "$s" >"$work/$s.digest"
done
log "before the move: ConfigMap before-move written, a token issued for ServiceAccount mover"

# --- the move: prepared by nestcp, then clusterctl ---
t0=$(now)
kubectl -n "$ns" annotate ncp "$ncp" controlplane.nestcp.x-k8s.io/move=m1 >/dev/null
until_true 300 move_state_is "<no value>/False ReadyToMove" ||
    fail "the move was not prepared: $(move_state), status.move $(ncp_field '{.status.move}')," \
        "MoveBlocked: $(ncp_field '{.status.conditions[?(@.type=="MoveBlocked")].message}')"
snap=$(ncp_field '{.status.move.snapshot}')
[ -n "$snap" ] || fail "status.move names no snapshot: $(ncp_field '{.status.move}')"
[ "$(kubectl -n "$ns" get netcd "$etcd" -o go-template='{{index .metadata.annotations "etcd.nestcp.x-k8s.io/start-from-snapshot"}}')" = "$snap" ] ||
    fail "the NestedEtcd does not carry start-from-snapshot=$snap"
[ -s "$shared/$snap.db" ] || fail "snapshot $snap is not on the claim: $(ls -l "$shared")"
[ "$(kubectl -n "$ns" get statefulset t1-apiserver -o jsonpath='{.spec.replicas}')" = 0 ] ||
    fail "the tenant's API servers were not stopped for the move"
[ "$(ncp_field '{.status.conditions[?(@.type=="Ready")].status} {.status.conditions[?(@.type=="Ready")].reason}')" = "False PreparingMove" ] ||
    fail "the prepared control plane's Ready is $(ncp_field '{.status.conditions[?(@.type=="Ready")]}')"
snapshot_job_gone() {
    local out
    out=$(kubectl -n "$ns" get job "$snap" --ignore-not-found -o name) && [ -z "$out" ]
}
until_true 30 snapshot_job_gone || fail "the snapshot Job $snap is still there once the move is prepared"
log "move prepared in $(elapsed "$t0") s: snapshot $snap ($(stat -c %s "$shared/$snap.db") bytes)," \
    "$(ncp_field '{.status.conditions[?(@.type=="MoveBlocked")].message}')"

record_pids
t0=$(now)
clusterctl_in "$work" move --to-kubeconfig "$tkc" -n "$ns" >"$work/move.log" 2>&1 ||
    fail "clusterctl move: $(cat "$work/move.log")"
sed 's/^/    clusterctl: /' "$work/move.log"
log "clusterctl move in $(elapsed "$t0") s; the target's NestedControlPlane then:" \
    "$(tgt move_state)"

# --- the target ---
tgt wait_ready "$ncp" 300 "$t0"
until_true 180 tgt cluster_available ||
    fail "Cluster t1 is not Available in the target: $(tgt cluster_conditions)"
log "target: Cluster t1 Available $(elapsed "$t0") s after clusterctl move began"
[ "$(tgt cluster_field '{.spec.paused}')" != true ] || fail "Cluster t1 is still paused in the target"
until_true 60 tgt move_state_is "/True TenantDataNotMovable" ||
    fail "the target's NestedControlPlane does not block clusterctl move: $(tgt move_state)"
log "target: block-move back, MoveBlocked TenantDataNotMovable, $(elapsed "$t0") s after" \
    "clusterctl move began"
[ "$(tgt kubectl -n "$ns" get netcd "$etcd" -o jsonpath='{.status.conditions[?(@.type=="Restored")].status}')" = True ] ||
    fail "the target's NestedEtcd is not Restored: $(tgt kubectl -n "$ns" get netcd "$etcd" -o jsonpath='{.status.restore} {.status.conditions}')"
restored_event() { has_event "$etcd" Restored; }
moved_event() { has_event "$ncp" Moved; }
until_true 30 tgt moved_event || fail "no Event Moved about the target's NestedControlPlane: $(tgt events_of "$ncp" | tr '\n' ' ')"
for s in t1-ca t1-sa; do
    [ "$(tgt secret_digest "$s")" = "$(cat "$work/$s.digest")" ] ||
        fail "Secret $s in the target is not the one moved from the source"
done
until_true 30 tgt restored_event || fail "no Event Restored about the target's NestedEtcd: $(tgt events_of "$etcd" | tr '\n' ' ')"
no_move_annotations() {
    [ "$(kubectl -n "$ns" get ncp "$ncp" -o go-template='{{index .metadata.annotations "controlplane.nestcp.x-k8s.io/move"}}')/$(kubectl -n "$ns" get netcd "$etcd" -o go-template='{{index .metadata.annotations "etcd.nestcp.x-k8s.io/start-from-snapshot"}}')" = "<no value>/<no value>" ]
}
until_true 60 tgt no_move_annotations ||
    fail "the target keeps the move's annotations: $(tgt kubectl -n "$ns" get ncp "$ncp" -o jsonpath='{.metadata.annotations}')"
[ "$(tgt ncp_field '{.status.move.phase}')" = Moved ] ||
    fail "the target's status.move is $(tgt ncp_field '{.status.move}'), not phase Moved"
tenant_kubeconfig_in_target() { tgt tenant_kubeconfig t1 "$work/t1-target.kubeconfig"; }
tenant_kubeconfig_in_target
[ "$(tkubectl "$work/t1-target.kubeconfig" get configmap before-move -o jsonpath='{.data.written}')" = before-move ] ||
    fail "the ConfigMap written before the move does not read back through the target"
[ "$(whoami_with_token "$work/t1-target.kubeconfig")" = system:serviceaccount:default:mover ] ||
    fail "the token issued before the move does not authenticate in the target"
log "target: ConfigMap before-move read back through its tenant API server" \
    "($(command kubectl config view --kubeconfig "$work/t1-target.kubeconfig" -o jsonpath='{.clusters[0].cluster.server}'))," \
    "the token issued before the move authenticates"

# --- the source ---
no_tenant() { [ -z "$(tenant_objects)" ]; }
until_true 120 no_tenant || fail "left in the source after the move: $(tenant_objects | tr '\n' ' ')"
claim_bound || fail "the source's claim t1-snapshots is gone after the move"
[ -s "$shared/$snap.db" ] || fail "snapshot $snap is gone from the claim after the move"
log "source: nothing of the tenant is left; snapshot $snap is still on the claim"

# The target's processes, checked as `finish` checks the source's.
stop_pid "$tmgr_pid" 20 || fail "the target's manager did not stop on SIGTERM"
tmgr_pid=
source_seen=("${pids_seen[@]}")
pids_seen=()
agent_state=$tstate record_pids
stop_pid "$tagent_pid" 60 || fail "the target's node agent did not stop on SIGTERM"
tagent_pid=
left=$(pod_net=$tnet leftover_processes | sort -u | tr '\n' ' ')
[ -z "$left" ] || fail "processes of the target left behind: $left"
log "target: no process left ($(printf '%s\n' "${pids_seen[@]}" | sort -u | grep -c .) container" \
    "processes were seen)"
pids_seen=("${source_seen[@]}")
tpids=$(cat "$tdir"/*.pid)
target_down
for p in $tpids; do
    ! kill -0 "$p" 2>/dev/null || fail "process $p of the target super cluster is still running"
done
source_down
finish
