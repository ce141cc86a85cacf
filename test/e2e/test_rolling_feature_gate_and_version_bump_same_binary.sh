#!/usr/bin/env bash
# Rolling changes of a tenant with two API servers, on real processes:
#   1. a feature gate (spec.featureGates EphemeralContainers: true on the control plane);
#   2. a version bump 1.20.2 -> 1.21.14. Only 1.20.2 binaries exist here and the node agent
#      maps an image to a binary by repository, so 1.21.14 runs the SAME kube-apiserver and
#      kube-controller-manager binaries: this checks the rollout (packages, order, status),
#      not Kubernetes 1.21.
# For each: every API server pod is replaced and Ready before any controller-manager pod is
# replaced (from a recorded pod watch and from the pods' timestamps), etcd is left alone, the
# new processes run the new flags, and the tenant's availability during the roll is measured
# (GET /readyz every 200 ms through the node agent's name for the API server Service) and
# printed as failed/total.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

setup
cat >"$work/roll.yaml" <<'EOF'
apiVersion: controlplane.cluster.x-k8s.io/v1beta1
kind: NestedControlPlane
metadata:
  name: roll
spec:
  version: "1.20.2"
  etcd: {kind: NestedEtcd, name: roll-etcd}
  apiserver: {kind: NestedAPIServer, name: roll-apiserver}
  controllerManager: {kind: NestedControllerManager, name: roll-controller-manager}
---
apiVersion: controlplane.cluster.x-k8s.io/v1beta1
kind: NestedEtcd
metadata:
  name: roll-etcd
spec:
  replicas: 1
---
apiVersion: controlplane.cluster.x-k8s.io/v1beta1
kind: NestedAPIServer
metadata:
  name: roll-apiserver
spec:
  replicas: 2
---
apiVersion: controlplane.cluster.x-k8s.io/v1beta1
kind: NestedControllerManager
metadata:
  name: roll-controller-manager
spec:
  replicas: 1
EOF
t0=$(now)
kubectl -n "$ns" apply -f "$work/roll.yaml" >/dev/null
wait_ready roll 300 "$t0"

kc=$work/roll.kubeconfig
tenant_kubeconfig roll "$kc"
kubeconfig_pems "$kc" "$work/admin"

# Every pod event of the namespace, with the local time it was seen.
command kubectl -n "$ns" get pods -w --output-watch-events --request-timeout=0 \
    -o custom-columns='EVENT:.type,NAME:.object.metadata.name,UID:.object.metadata.uid,READY:.object.status.conditions[?(@.type=="Ready")].status,DELETING:.object.metadata.deletionTimestamp' \
    --no-headers 2>/dev/null > >(while read -r line; do echo "$(now) $line"; done >"$work/pods.watch") &
pids+=($!) # kubectl's: once it is killed, the reader sees the end of its input
# The tenant's availability, as a pod of the tenant's namespace resolves the Service name.
python3 "$(dirname "$0")/availability.py" "$agent_state/pods/${ns}_roll-etcd-0/hosts" \
    roll-apiserver 6443 "$work/admin/ca.crt" "$work/admin/client.crt" "$work/admin/client.key" \
    "$work/readyz.log" 0.2 &
pids+=($!)
sleep 2

uids() {
    kubectl -n "$ns" get pods -l "cluster.x-k8s.io/cluster-name=roll" \
        -o go-template='{{range .items}}{{.metadata.name}}={{.metadata.uid}} {{end}}'
}

# rolled: the control plane has seen its latest spec, is Ready and not Upgrading, and both
# StatefulSets run their latest revision on every replica.
rolled() {
    kubectl -n "$ns" get ncp/roll statefulset/roll-apiserver statefulset/roll-controller-manager \
        -o json | python3 -c '
import json, sys
ncp, *sts = json.load(sys.stdin)["items"]
st = ncp.get("status", {})
c = {x["type"]: x["status"] for x in st.get("conditions", [])}
ok = (st.get("observedGeneration") == ncp["metadata"]["generation"] and
      c.get("Upgrading") == "False" and c.get("Ready") == "True")
for s in sts:
    st, r = s.get("status", {}), s["spec"]["replicas"]
    ok = ok and (st.get("observedGeneration") == s["metadata"]["generation"] and
                 st.get("currentRevision") == st.get("updateRevision") and
                 st.get("updatedReplicas") == r and st.get("readyReplicas") == r)
sys.exit(0 if ok else 1)'
}

# check_roll WHAT T_START UIDS_BEFORE: the order of the roll that started at T_START, from the
# watch log and from the pods' timestamps; availability in the window.
check_roll() {
    local what=$1 ts=$2 before=$3 te
    te=$(now)
    python3 - "$work/pods.watch" "$ts" "$before" "$(uids)" <<'PY' || fail "$what: rollout order"
import sys
watch, start, before, after = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
before = dict(kv.split("=") for kv in before.split())
after = dict(kv.split("=") for kv in after.split())
for name in before:
    if name.startswith("roll-etcd"):
        assert before[name] == after.get(name), "%s was replaced" % name
    else:
        assert before[name] != after.get(name), "%s was not replaced" % name
events = []
for line in open(watch):
    f = line.split()
    if len(f) >= 6 and float(f[0]) >= start:
        events.append((float(f[0]), f[1], f[2], f[3], f[4], f[5]))
# When each new API server pod was first seen Ready; when the first controller-manager pod of
# the old generation began to go, or a new one appeared.
api_ready = {}
cm_first = None
for t, ev, name, uid, ready, deleting in events:
    if name.startswith("roll-apiserver-") and uid == after[name] and ready == "True":
        api_ready.setdefault(name, t)
    if name.startswith("roll-controller-manager-") and cm_first is None and (
            uid != before[name] or deleting != "<none>" or ev == "DELETED"):
        cm_first = t
apis = sorted(n for n in after if n.startswith("roll-apiserver-"))
assert sorted(api_ready) == apis, "not every new API server pod was seen Ready: %s" % api_ready
assert cm_first is not None, "no controller-manager pod was seen replaced"
last_api = max(api_ready.values())
for n in apis:
    print("  %s (new) Ready at +%.1f s" % (n, api_ready[n] - start))
print("  first controller-manager pod replaced at +%.1f s" % (cm_first - start))
assert last_api < cm_first, "a controller-manager pod was replaced before every API server was Ready"
PY
    # The same order from the API's own timestamps (second resolution): the new
    # controller-manager pod was created no earlier than the last API server became Ready.
    local api_last cm_created
    api_last=$(kubectl -n "$ns" get pods -l app.kubernetes.io/component=apiserver,cluster.x-k8s.io/cluster-name=roll \
        -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].lastTransitionTime}{"\n"}{end}' |
        sort | tail -n 1)
    cm_created=$(kubectl -n "$ns" get pod roll-controller-manager-0 -o jsonpath='{.metadata.creationTimestamp}')
    log "$what: last API server Ready at $api_last, controller-manager pod created at $cm_created"
    [[ ! "$cm_created" < "$api_last" ]] || fail "$what: controller manager created before the API servers were Ready"
    awk -v s="$ts" -v e="$te" -v w="$what" '$1 >= s && $1 <= e { n++; if ($2 != "ok") f++ }
        END { printf "%s: tenant availability during the roll (%.0f s): %d/%d GET /readyz failed\n",
              w, e - s, f, n }' "$work/readyz.log"
    awk -v s="$ts" -v e="$te" '$1 >= s && $1 <= e && $2 != "ok"' "$work/readyz.log" | head -n 5
    [ "$(awk -v s="$ts" -v e="$te" '$1 >= s && $1 <= e' "$work/readyz.log" | wc -l)" -gt 10 ] ||
        fail "$what: the availability probe did not run"
}

# --- 1. a feature gate ---
before=$(uids)
ts=$(now)
kubectl -n "$ns" patch ncp roll --type merge -p '{"spec":{"featureGates":{"EphemeralContainers":true}}}' >/dev/null
until_true 300 rolled || fail "feature gate: the roll did not finish ($(kubectl -n "$ns" get pods --no-headers | tr '\n' ';'))"
log "feature gate: rolled in $(elapsed "$ts") s"
check_roll "feature gate" "$ts" "$before"
record_pids
for pc in roll-apiserver-0/kube-apiserver roll-apiserver-1/kube-apiserver \
    roll-controller-manager-0/kube-controller-manager; do
    grep -qx -- '--feature-gates=EphemeralContainers=true' <<<"$(pod_cmdline "${pc%/*}" "${pc#*/}")" ||
        fail "$pc does not run with --feature-gates=EphemeralContainers=true"
done
log "feature gate: every API server and controller-manager process runs --feature-gates=EphemeralContainers=true"
tenant_kubeconfig roll "$kc"
tkubectl "$kc" get namespaces -o name >/dev/null || fail "the tenant does not answer"

# --- 2. a version bump that maps to the same binaries ---
before=$(uids)
bin_before=$(readlink "/proc/$(pod_pid roll-apiserver-0 kube-apiserver)/exe")
ts=$(now)
kubectl -n "$ns" patch ncp roll --type merge -p '{"spec":{"version":"1.21.14"}}' >/dev/null
until_true 300 rolled || fail "version bump: the roll did not finish ($(kubectl -n "$ns" get pods --no-headers | tr '\n' ';'))"
log "version bump: rolled in $(elapsed "$ts") s"
check_roll "version 1.20.2 -> 1.21.14" "$ts" "$before"
record_pids
[ "$(kubectl -n "$ns" get ncp roll -o jsonpath='{.status.version}')" = v1.21.14 ] ||
    fail "status.version is $(kubectl -n "$ns" get ncp roll -o jsonpath='{.status.version}')"
images=$(kubectl -n "$ns" get pods -o jsonpath='{range .items[*]}{.spec.containers[0].image}{"\n"}{end}' | sort -u)
echo "$images"
grep -q 'kube-apiserver:v1.21.14$' <<<"$images" || fail "the API servers do not run the 1.21.14 image"
grep -q 'kube-controller-manager:v1.21.14$' <<<"$images" || fail "the controller manager does not run the 1.21.14 image"
bin_after=$(readlink "/proc/$(pod_pid roll-apiserver-0 kube-apiserver)/exe")
log "version bump: image v1.21.14 runs $bin_after (before: $bin_before; the same binary)"
tenant_kubeconfig roll "$kc"
tkubectl "$kc" get namespaces -o name >/dev/null || fail "the tenant does not answer"

finish
