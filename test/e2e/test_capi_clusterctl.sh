#!/usr/bin/env bash
# Cluster API for real. Its core manager (v1.14.2, built from the Go module proxy by
# hack/kube-build.sh) runs as the pod of the Deployment that `clusterctl init` creates, through
# the node agent, and drives nestcp through the v1beta2 provider contract:
#   - `clusterctl init --core cluster-api --bootstrap kubeadm --control-plane nested
#     --infrastructure nested` from a local repository holding the components files a release
#     publishes (built here as docs/clusterctl.md says) installs nestcp's CRDs and RBAC;
#   - `clusterctl generate cluster` from templates/cluster-template.yaml and `kubectl apply`
#     create a tenant (the template's Cluster is v1beta2, the version Cluster API stores);
#   - Cluster API, not nestcp, completes the Cluster's status: initialization
#     (infrastructureProvisioned, controlPlaneInitialized), phase Provisioned, the control plane
#     endpoint, and Available True, which needs its remote connection probe to reach the tenant
#     API server through <cluster>-kubeconfig's server name from inside its pod;
#   - `clusterctl describe cluster` shows the tree with nestcp's conditions;
#   - Cluster spec.paused pauses nestcp: a change to a component waits until it is unpaused;
#   - nestcp reads Clusters at v1beta2, so with Cluster API's pod (its conversion webhook)
#     stopped a manager started afresh still syncs and reconciles, and `nestcp describe` and
#     `nestcp plan` answer;
#   - `clusterctl move` waits on nestcp's block-move annotation, and nothing of the tenant is
#     lost or changed;
#   - deleting the Cluster deletes the tenant and leaves nothing of it.
# The manager itself runs as a process (its Deployment's pod is not bound: the node agent takes
# only tenant pods and Cluster API's). Runs alone (RUN_SERIAL): Cluster API's CRDs and
# webhooks are cluster-wide, and its pod listens on every loopback address.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=../support/crds.sh
. "$NESTCP_SOURCE_DIR/test/support/crds.sh"

# shellcheck source=../support/capi.sh
. "$NESTCP_SOURCE_DIR/test/support/capi.sh"
repo=$work/repo
clusterctl() { clusterctl_in "$work" "$@"; }

capi_cleanup() {
    [ -z "${capi_pid:-}" ] || kill -CONT "$capi_pid" 2>/dev/null || true
    capi_remove "$work"
}
trap 'capi_cleanup; cleanup' EXIT

# --- a local provider repository, as a release publishes it ---
capi_repo "$work"

# --- the node agent (tenant pods and Cluster API's, any namespace) and the manager ---
kubectl create namespace "$ns" >/dev/null
mkdir -p "$agent_state"
"$agent_bin" --node-name "$node" --state-dir "$agent_state" --pod-network "$pod_net" \
    --selector app.kubernetes.io/managed-by=nestcp --selector cluster.x-k8s.io/provider=cluster-api \
    --restart-backoff 1 --stop-grace-max 5 >"$work/agent.log" 2>&1 &
agent_pid=$!
until_true 30 node_ready || fail "the node agent's Node $node is not Ready"

# --- clusterctl init ---
t0=$(now)
capi_init "$work" 9443 "$work/init.log"
capi_pid=$(capi_manager_pid "$agent_state")
log "Cluster API's manager: pid $capi_pid, $(elapsed "$t0") s after clusterctl init began"
start_manager
log "namespace $ns, node $node (pods on 127.$pod_net.0.0/16), manager pid $mgr_pid"

# --- a tenant from the cluster template ---
t0=$(now)
clusterctl generate cluster t1 --from "$repo/infrastructure-nested/$nestcp_release/cluster-template.yaml" \
    --target-namespace "$ns" --kubernetes-version v1.36.3 >"$work/t1.yaml" ||
    fail "clusterctl generate cluster"
until_true 60 kubectl apply -f "$work/t1.yaml" || fail "the generated cluster is refused: $(kubectl apply -f "$work/t1.yaml" 2>&1)"
wait_ready t1-control-plane 300 "$t0"

cluster_field() { kubectl -n "$ns" get clusters.cluster.x-k8s.io t1 -o jsonpath="$1"; }
cluster_available() {
    [ "$(cluster_field '{.status.conditions[?(@.type=="Available")].status}')" = True ]
}
until_true 180 cluster_available ||
    fail "Cluster t1 is not Available: $(cluster_field '{range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\n"}{end}')"
log "Cluster t1 Available after $(elapsed "$t0") s"
[ "$(cluster_field '{.status.initialization.infrastructureProvisioned}')" = true ] ||
    fail "Cluster API did not record the infrastructure as provisioned"
[ "$(cluster_field '{.status.initialization.controlPlaneInitialized}')" = true ] ||
    fail "Cluster API did not record the control plane as initialized"
[ "$(cluster_field '{.status.phase}')" = Provisioned ] ||
    fail "Cluster t1 is in phase $(cluster_field '{.status.phase}'), not Provisioned"
[ "$(cluster_field '{.status.conditions[?(@.type=="RemoteConnectionProbe")].status}')" = True ] ||
    fail "Cluster API's remote connection probe did not reach the tenant"
# The control plane's replica counters (v1beta2 names), read by Cluster API from nestcp's status.
cp_replicas() {
    [ "$(cluster_field '{.status.controlPlane.replicas}/{.status.controlPlane.readyReplicas}/{.status.controlPlane.availableReplicas}/{.status.controlPlane.upToDateReplicas}')" = 1/1/1/1 ]
}
until_true 60 cp_replicas ||
    fail "Cluster t1's control-plane replicas are $(cluster_field '{.status.controlPlane}'), not 1 everywhere"
# Cluster API mirrors the objects' own conditions (Ready, Available) with nestcp's messages.
[ "$(cluster_field '{.status.conditions[?(@.type=="ControlPlaneAvailable")].message}')" = \
    "$(kubectl -n "$ns" get ncp t1-control-plane -o jsonpath='{.status.conditions[?(@.type=="Available")].message}')" ] ||
    fail "ControlPlaneAvailable does not mirror the NestedControlPlane's Available condition"
[ "$(cluster_field '{.status.conditions[?(@.type=="InfrastructureReady")].message}')" = \
    "$(kubectl -n "$ns" get nc t1 -o jsonpath='{.status.conditions[?(@.type=="Ready")].message}')" ] ||
    fail "InfrastructureReady does not mirror the NestedCluster's Ready condition"
[ "$(kubectl -n "$ns" get ncp t1-control-plane -o jsonpath='{.status.version}')" = v1.36.3 ] ||
    fail "the NestedControlPlane's status.version is not v1.36.3"
for c in InfrastructureReady ControlPlaneAvailable ControlPlaneInitialized; do
    [ "$(cluster_field "{.status.conditions[?(@.type==\"$c\")].status}")" = True ] ||
        fail "Cluster t1's $c is not True: $(cluster_field "{.status.conditions[?(@.type==\"$c\")]}")"
done
# Cluster API owns the objects the Cluster names (reconcileExternal), nestcp did not.
owner=$(kubectl -n "$ns" get ncp t1-control-plane -o jsonpath='{.metadata.ownerReferences[?(@.kind=="Cluster")].name}')
[ "$owner" = t1 ] || fail "the NestedControlPlane is not owned by Cluster t1 (owner '$owner')"
log "status set by Cluster API: phase $(cluster_field '{.status.phase}')," \
    "endpoint $(cluster_field '{.spec.controlPlaneEndpoint.host}:{.spec.controlPlaneEndpoint.port}')," \
    "$(cluster_field '{range .status.conditions[*]}{.type}={.status} {end}')"

clusterctl describe cluster t1 -n "$ns" --show-conditions all >"$work/describe.txt" 2>&1 ||
    fail "clusterctl describe cluster: $(cat "$work/describe.txt")"
cat "$work/describe.txt"
grep -q "NestedControlPlane $ns/t1-control-plane, v1.36.3" "$work/describe.txt" ||
    fail "clusterctl describe shows no NestedControlPlane with its version"
grep -q "NestedCluster $ns/t1" "$work/describe.txt" || fail "clusterctl describe shows no NestedCluster"

# --- Cluster spec.paused pauses nestcp ---
kubectl -n "$ns" patch clusters.cluster.x-k8s.io t1 --type merge -p '{"spec":{"paused":true}}' >/dev/null
kcm=t1-nestedcontrollermanager
gen=$(kubectl -n "$ns" patch nkcm "$kcm" --type merge -p '{"spec":{"replicas":2}}' -o jsonpath='{.metadata.generation}')
paused_seen() {
    [ "$(kubectl -n "$ns" get nkcm "$kcm" -o jsonpath='{.status.conditions[?(@.type=="Paused")].status}/{.status.conditions[?(@.type=="Paused")].observedGeneration}')" = "True/$gen" ]
}
until_true 60 paused_seen || fail "nkcm/$kcm does not show Paused for generation $gen"
sts_replicas() { kubectl -n "$ns" get statefulset t1-controller-manager -o jsonpath='{.spec.replicas}'; }
[ "$(sts_replicas)" = 1 ] || fail "paused, yet the StatefulSet was scaled to $(sts_replicas)"
log "Cluster paused: nkcm/$kcm generation $gen seen and held (StatefulSet still at 1 replica)"
kubectl -n "$ns" patch clusters.cluster.x-k8s.io t1 --type merge -p '{"spec":{"paused":false}}' >/dev/null
scaled() { [ "$(sts_replicas)" = 2 ]; }
until_true 60 scaled || fail "unpaused, the StatefulSet was not scaled to 2"
log "Cluster unpaused: the change went through"

# --- nestcp needs no conversion webhook of Cluster API ---
# Cluster API 1.14 stores Clusters as v1beta2 and serves v1beta1 only through the conversion
# webhook its pod serves. nestcp reads v1beta2: with that pod stopped (SIGSTOP, so that the
# webhook neither answers nor is restarted), a manager started afresh syncs its caches, and a
# change to a component goes through.
reads_v1beta2() {
    grep -c 'cache reads resource resource=clusters.cluster.x-k8s.io version=v1beta2' \
        "$work/manager.log" || true
}
[ "$(reads_v1beta2)" -ge 1 ] ||
    fail "the manager does not read Clusters at v1beta2: $(grep clusters.cluster "$work/manager.log")"
stop_pid "$mgr_pid" 20
kill -STOP "$capi_pid"
if kubectl -n "$ns" get clusters.v1beta1.cluster.x-k8s.io t1 --request-timeout=5s >/dev/null 2>&1; then
    fail "Cluster t1 is still served at v1beta1 while Cluster API's pod is stopped"
fi
t0=$(now)
start_manager
gen=$(kubectl -n "$ns" patch nkcm "$kcm" --type merge -p '{"spec":{"replicas":1}}' -o jsonpath='{.metadata.generation}')
scaled_back() { [ "$(sts_replicas)" = 1 ]; }
until_true 60 scaled_back ||
    fail "with Cluster API's webhook not answering, the StatefulSet was not scaled back to 1: $(tail -n 20 "$work/manager.log")"
[ "$(reads_v1beta2)" -ge 2 ] || fail "the restarted manager does not read Clusters at v1beta2"
# The commands read Clusters at v1beta2 too: describe finds the control plane by its Cluster's
# name, plan lists the Clusters.
timeout 20 "$NESTCP_BIN" describe t1 -n "$ns" >"$work/describe-stopped.txt" 2>&1 ||
    fail "nestcp describe t1 with Cluster API's pod stopped: $(cat "$work/describe-stopped.txt")"
grep -qE "^Cluster $ns/t1 +Available: True, phase Provisioned" "$work/describe-stopped.txt" &&
    grep -qE "NestedControlPlane t1-control-plane +Ready: True" "$work/describe-stopped.txt" ||
    fail "nestcp describe t1 does not show Cluster t1 Available and its control plane Ready: $(cat "$work/describe-stopped.txt")"
timeout 20 "$NESTCP_BIN" plan -n "$ns" --templates "$NESTCP_SOURCE_DIR/templates" \
    >"$work/plan-stopped.txt" 2>&1 ||
    fail "nestcp plan with Cluster API's pod stopped: $(cat "$work/plan-stopped.txt")"
grep -q "^1 control plane; 0 would roll" "$work/plan-stopped.txt" ||
    fail "nestcp plan does not find t1's control plane: $(cat "$work/plan-stopped.txt")"
kill -CONT "$capi_pid"
log "Cluster API's pod stopped: v1beta1 Clusters not served, yet a new manager scaled" \
    "nkcm/$kcm (generation $gen) in $(elapsed "$t0") s, reading Clusters at v1beta2"

# --- clusterctl move is blocked ---
# A move copies the Cluster API objects, not the tenant's StatefulSets and etcd data, which the
# source's garbage collector would then delete; the block-move annotation makes clusterctl wait.
# The target is this same management cluster: clusterctl checks the target's providers (the
# same ones) and waits on the annotation before it creates anything there or deletes anything
# here, so what is checked is that it waits, and that nothing of the tenant changes.
move_blocked_by_nestcp() {
    [ "$(kubectl -n "$ns" get ncp t1-control-plane -o go-template='{{index .metadata.annotations "clusterctl.cluster.x-k8s.io/block-move"}}/{{range .status.conditions}}{{if eq .type "MoveBlocked"}}{{.status}} {{.reason}}{{end}}{{end}}')" =         "/True TenantDataNotMovable" ]
}
move_blocked_by_nestcp || fail "the NestedControlPlane does not block clusterctl move: $(kubectl -n "$ns" get ncp t1-control-plane -o jsonpath='{.metadata.annotations} {.status.conditions}')"
tenant_kubeconfig t1 "$work/t1.kubeconfig"
tkubectl "$work/t1.kubeconfig" create configmap before-move --from-literal=written=before-move >/dev/null ||
    fail "cannot write to the tenant before the move"
tenant_objects() {
    kubectl -n "$ns" get statefulsets,services,secrets,persistentvolumeclaims,ncp,netcd,nkas,nkcm,nc,clusters.cluster.x-k8s.io         -o jsonpath='{range .items[*]}{.kind}/{.metadata.name} {.metadata.uid}{"\n"}{end}' | sort
}
tenant_objects >"$work/before-move.txt"
# (the binary itself, not the wrapper function, so that its pid is the one stopped below)
"$capi/clusterctl" --config "$work/clusterctl.yaml" move --to-kubeconfig "$KUBECONFIG" -n "$ns" \
    >"$work/move.log" 2>&1 &
move_pid=$!
move_waits() { grep -q "Move blocked by clusterctl.cluster.x-k8s.io/block-move annotation" "$work/move.log"; }
until_true 120 move_waits || fail "clusterctl move did not wait on the block: $(cat "$work/move.log")"
kill -0 "$move_pid" 2>/dev/null || fail "clusterctl move ended: $(cat "$work/move.log")"
cluster_paused() { [ "$(cluster_field '{.spec.paused}')" = true ]; }
cluster_paused || fail "clusterctl move waits, yet the Cluster is not paused"
tenant_objects >"$work/during-move.txt"
diff "$work/before-move.txt" "$work/during-move.txt" >&2 ||
    fail "clusterctl move changed the tenant's objects while it was blocked"
# clusterctl gives up after about six minutes and leaves the Cluster paused, as interrupting it
# does; a user then unpauses it (docs/clusterctl.md).
kill "$move_pid"
wait "$move_pid" 2>/dev/null || true
sed 's/^/    clusterctl: /' "$work/move.log"
log "clusterctl move waited on the block-move annotation: $(grep -c . "$work/before-move.txt") objects unchanged"
kubectl -n "$ns" patch clusters.cluster.x-k8s.io t1 --type merge -p '{"spec":{"paused":false}}' >/dev/null
ncp_unpaused() {
    [ "$(kubectl -n "$ns" get ncp t1-control-plane -o jsonpath='{.status.conditions[?(@.type=="Paused")].status}')" = False ]
}
until_true 60 ncp_unpaused || fail "the NestedControlPlane stays paused after the Cluster was unpaused"
tenant_objects >"$work/after-move.txt"
diff "$work/before-move.txt" "$work/after-move.txt" >&2 ||
    fail "the tenant's objects changed after the blocked move"
[ "$(tkubectl "$work/t1.kubeconfig" get configmap before-move -o jsonpath='{.data.written}')" = before-move ] ||
    fail "the tenant lost what was written before the move"
move_blocked_by_nestcp || fail "the block is gone after the attempted move"
log "after the attempted move: the tenant answers with its data, nothing was lost"

# --- deleting the Cluster deletes the tenant ---
objects() {
    kubectl -n "$ns" get statefulsets,services,secrets,pods,ncp,netcd,nkas,nkcm,nc,clusters.cluster.x-k8s.io -o name
}
log "before deletion: $(objects | wc -l) objects"
record_pids
t0=$(now)
kubectl -n "$ns" delete clusters.cluster.x-k8s.io t1 --wait=true --timeout=180s >/dev/null ||
    fail "the Cluster was not deleted: $(objects | tr '\n' ' ')"
no_objects() { [ -z "$(objects)" ]; }
until_true 120 no_objects || fail "left after the Cluster's deletion: $(objects | tr '\n' ' ')"
log "Cluster t1 deleted in $(elapsed "$t0") s; nothing of the tenant is left"

capi_cleanup
finish
