#!/usr/bin/env bash
# A real cross-version upgrade of a tenant with three etcd members and two API servers, on
# real processes: created at Kubernetes 1.36.3, then
#   1. a feature gate rolled out (spec.featureGates on the control plane);
#   2. the upgrade to 1.37.2: the node agent runs each image's own release, so the new pods
#      really run the 1.37 binaries (checked through /version of every API server pod); before
#      any pod is replaced, nestcp snapshots etcd to the claim the NestedEtcd names, and the
#      snapshot, restored by etcdutl and served by a scratch etcd, holds the data written at
#      1.36 (the feature gate of step 1, which changes no version, takes none);
#   3. every certificate renewed (spec.certificates: a renewal window longer than what the
#      certificates have left), which rolls every etcd member, API server and controller
#      manager;
#   4. a flag the API server rejects at start: the roll stops after the first pod, which is
#      rolled back to the last good revision while the other keeps serving; restoring the spec
#      then rolls nothing;
#   4b. in-flight limits that leave the API server Ready but refusing most users' requests
#      with 429: the roll stops after the first pod on its error rate (nestcp reads its
#      /metrics), the pod is rolled back, and removing the flags rolls nothing;
#   5. a downgrade to 1.36.3, which is refused with the reason on the object.
# For each roll: every API server pod is replaced and Ready before any controller-manager pod
# is replaced (from a recorded pod watch and from the pods' timestamps), etcd is left alone
# (both lines pin etcd 3.6.17) and keeps its data (a ConfigMap written in the tenant before is
# read after), the new processes run the new flags, and the roll has zero downtime: two
# clients each make a real read and a real write every 200 ms, and not one of them fails. One is
# inside the tenant's namespace and goes through the API server Service's name; the other is on
# the host and picks among the ready, not terminating API server pods itself, as a client of the
# Service's EndpointSlice would. Each behaves as client-go does (availability.py): a request
# fails when it gets no 2xx within 10 s. (/readyz would be the wrong probe: an API server fails
# it on purpose while it drains.)
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

setup
{
    snapshot_claim roll-snapshots
    tenant_manifest roll 1.36.3 3 2 "  snapshots: {persistentVolumeClaim: {claimName: roll-snapshots}}" \
        "$no_endpoint_reconciler"
} >"$work/roll.yaml"
t0=$(now)
kubectl -n "$ns" apply -f "$work/roll.yaml" >/dev/null
wait_ready roll 300 "$t0"

kc=$work/roll.kubeconfig
tenant_kubeconfig roll "$kc"
kubeconfig_pems "$kc" "$work/admin"
# Data written before any roll, read after the last; and the object the probe reads and writes.
tkubectl "$kc" create configmap before-upgrade --from-literal=written=at-1.36 >/dev/null ||
    fail "cannot write to the tenant"
tkubectl "$kc" -n default create configmap avail-probe --from-literal=n=0 >/dev/null ||
    fail "cannot create the probe's ConfigMap"

# versions_of_apiservers: "<pod>=<gitVersion>" of every API server pod, each asked through its
# own pod IP with TLS verified against the Service name.
versions_of_apiservers() {
    local pod ip v
    for pod in $(kubectl -n "$ns" get pods -l app.kubernetes.io/component=apiserver,cluster.x-k8s.io/cluster-name=roll         -o jsonpath='{.items[*].metadata.name}'); do
        ip=$(kubectl -n "$ns" get pod "$pod" -o jsonpath='{.status.podIP}')
        v=$(curl -sS --max-time 5 --cacert "$work/admin/ca.crt" --cert "$work/admin/client.crt"             --key "$work/admin/client.key" --connect-to "roll-apiserver:6443:$ip:6443"             https://roll-apiserver:6443/version | python3 -c 'import json,sys; print(json.load(sys.stdin)["gitVersion"])') ||
            v=unreachable
        printf '%s=%s ' "$pod" "$v"
    done
}
v=$(versions_of_apiservers)
log "created: API servers report $v"
[ "$(tr ' ' '\n' <<<"$v" | grep -c '=v1.36.3$')" = 2 ] || fail "the API servers do not run 1.36.3: $v"

# Every pod event of the namespace, with the local time it was seen.
command kubectl -n "$ns" get pods -w --output-watch-events --request-timeout=0 \
    -o custom-columns='EVENT:.type,NAME:.object.metadata.name,UID:.object.metadata.uid,READY:.object.status.conditions[?(@.type=="Ready")].status,DELETING:.object.metadata.deletionTimestamp' \
    --no-headers 2>/dev/null > >(while read -r line; do echo "$(now) $line"; done >"$work/pods.watch") &
pids+=($!) # kubectl's: once it is killed, the reader sees the end of its input
# The tenant's availability, as a pod of the tenant's namespace resolves the Service name.
python3 "$(dirname "$0")/availability.py" "$agent_state/pods/${ns}_roll-etcd-0/hosts" \
    roll-apiserver 6443 "$work/admin/ca.crt" "$work/admin/client.crt" "$work/admin/client.key" \
    "$work/avail.log" 0.2 readwrite &
pids+=($!)
# ... and as a client on the host that picks the API server pods itself.
python3 "$(dirname "$0")/availability.py" \
    "pods:$ns:app.kubernetes.io/component=apiserver,cluster.x-k8s.io/cluster-name=roll" \
    roll-apiserver 6443 "$work/admin/ca.crt" "$work/admin/client.crt" "$work/admin/client.key" \
    "$work/avail-host.log" 0.2 readwrite &
pids+=($!)
probing() {
    [ "$(grep -c ' ok .* write ' "$work/avail.log" 2>/dev/null)" -ge 3 ] &&
        [ "$(grep -c ' ok .* write ' "$work/avail-host.log" 2>/dev/null)" -ge 3 ]
}
until_true 30 probing || fail "the availability probes do not get through: $(tail -n 2 "$work/avail.log" "$work/avail-host.log" 2>/dev/null)"
watching() { [ -s "$work/pods.watch" ]; }
until_true 30 watching || fail "the pod watch does not run"

# The control plane's pods (not the snapshot Job's).
uids() {
    kubectl -n "$ns" get pods -l "cluster.x-k8s.io/cluster-name=roll,app.kubernetes.io/managed-by=nestcp" \
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

# check_roll WHAT T_START UIDS_BEFORE [ETCD_ROLLS [AVAILABILITY]]: the order of the roll that
# started at T_START, from the watch log and from the pods' timestamps; availability in the
# window, where no request may fail (or, with AVAILABILITY=measure, only measured). etcd's
# members must be left alone, or with ETCD_ROLLS=yes, replaced too.
check_roll() {
    local what=$1 ts=$2 before=$3 etcd_rolls=${4:-no} avail=${5:-strict} te
    te=$(now)
    python3 - "$work/pods.watch" "$ts" "$before" "$(uids)" "$etcd_rolls" <<'PY' || fail "$what: rollout order"
import sys
watch, start, before, after = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
etcd_rolls = sys.argv[5] == "yes"
before = dict(kv.split("=") for kv in before.split())
after = dict(kv.split("=") for kv in after.split())
for name in before:
    if name.startswith("roll-etcd") and etcd_rolls:
        assert before[name] != after.get(name), "%s was not replaced" % name
    elif name.startswith("roll-etcd"):
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
    check_availability "$what" "$ts" "$te" "through the Service name" "$work/avail.log" "$avail"
    check_availability "$what" "$ts" "$te" "picking pods from the host" "$work/avail-host.log" "$avail"
}

# check_availability WHAT T_START T_END CLIENT LOG [measure]: prints failed/total reads and
# writes of LOG between the times, how many needed more than one attempt, the longest an
# operation took and the longest time with no operation completing successfully; fails on any
# failed operation, unless told only to measure.
check_availability() {
    local what=$1 ts=$2 te=$3 client=$4 f=$5 mode=${6:-strict} least=10
    # A probe that ran through the roll made a write every 200 ms, except while an operation
    # waited for an API server: with one API server, one write may wait 10 s and the next until
    # the new one is Ready, so a roll of 15 s may hold only a few.
    [ "$mode" = strict ] || least=1
    [ "$(awk -v s="$ts" -v e="$te" '$1 >= s && $1 <= e && $4 == "write"' "$f" | wc -l)" -gt "$least" ] ||
        fail "$what: the availability probe ($client) did not run"
    python3 - "$f" "$ts" "$te" "$what" "$client" "$mode" <<'PY' || fail "$what: requests failed ($client)"
import re, sys
path, start, end, what, client, mode = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), *sys.argv[4:]
n, failed, retried, longest, done, bad = {}, {}, 0, 0.0, [start], []
for line in open(path):
    f = line.split(None, 4)
    if len(f) < 5 or not start <= float(f[0]) <= end:
        continue
    t, op = float(f[0]), f[3]
    n[op] = n.get(op, 0) + 1
    m = re.search(r" attempts in ([0-9.]+) s; first: ", f[4])
    took = float(m.group(1)) if m else 0.0
    retried += bool(m)
    if f[1] != "ok":
        failed[op] = failed.get(op, 0) + 1
        bad.append(line.rstrip())
        continue
    longest = max(longest, took)
    done.append(t + took)
done.append(end)
done.sort()
gap = max(b - a for a, b in zip(done, done[1:]))
print("%s: availability %s during the roll (%.0f s): %d/%d reads and %d/%d writes failed, "
      "%d retried, longest successful operation %.1f s, longest time without a success %.1f s" % (
          what, client, end - start, failed.get("read", 0), n.get("read", 0),
          failed.get("write", 0), n.get("write", 0), retried, longest, gap))
for line in bad[:5]:
    print("    " + line)
sys.exit(1 if bad and mode == "strict" else 0)
PY
}

# --- 1. a feature gate (a beta gate of both 1.36 and 1.37, so it survives the upgrade) ---
gate=OpenAPIEnums
before=$(uids)
ts=$(now)
kubectl -n "$ns" patch ncp roll --type merge -p "{\"spec\":{\"featureGates\":{\"$gate\":true}}}" >/dev/null
until_true 300 rolled || fail "feature gate: the roll did not finish ($(kubectl -n "$ns" get pods --no-headers | tr '\n' ';'))"
log "feature gate: rolled in $(elapsed "$ts") s"
check_roll "feature gate" "$ts" "$before"
record_pids
for pc in roll-apiserver-0/kube-apiserver roll-apiserver-1/kube-apiserver \
    roll-controller-manager-0/kube-controller-manager; do
    grep -qx -- "--feature-gates=$gate=true" <<<"$(pod_cmdline "${pc%/*}" "${pc#*/}")" ||
        fail "$pc does not run with --feature-gates=$gate=true"
done
log "feature gate: every API server and controller-manager process runs --feature-gates=$gate=true"
[ -z "$(kubectl -n "$ns" get jobs -o name)" ] || fail "feature gate: a snapshot was taken: $(kubectl -n "$ns" get jobs -o name)"
tenant_kubeconfig roll "$kc"
tkubectl "$kc" get namespaces -o name >/dev/null || fail "the tenant does not answer"

# --- 2. the upgrade to 1.37.2 ---
before=$(uids)
bin_before=$(readlink "/proc/$(pod_pid roll-apiserver-0 kube-apiserver)/exe")
ts=$(now)
kubectl -n "$ns" patch ncp roll --type merge -p '{"spec":{"version":"1.37.2"}}' >/dev/null
until_true 400 rolled || fail "upgrade: the roll did not finish ($(kubectl -n "$ns" get pods --no-headers | tr '\n' ';'))"
log "upgrade: rolled in $(elapsed "$ts") s"
check_roll "upgrade 1.36.3 -> 1.37.2" "$ts" "$before"
record_pids
[ "$(kubectl -n "$ns" get ncp roll -o jsonpath='{.status.version}')" = v1.37.2 ] ||
    fail "status.version is $(kubectl -n "$ns" get ncp roll -o jsonpath='{.status.version}')"
images=$(kubectl -n "$ns" get pods -o jsonpath='{range .items[*]}{.spec.containers[0].image}{"\n"}{end}' | sort -u)
echo "$images"
grep -q 'kube-apiserver:v1.37.2$' <<<"$images" || fail "the API servers do not run the 1.37.2 image"
grep -q 'kube-controller-manager:v1.37.2$' <<<"$images" || fail "the controller manager does not run the 1.37.2 image"
grep -q 'etcd:3.6.17-0$' <<<"$images" || fail "etcd does not run 3.6.17"
v=$(versions_of_apiservers)
log "upgrade: API servers report $v"
[ "$(tr ' ' '\n' <<<"$v" | grep -c '=v1.37.2$')" = 2 ] || fail "the API servers do not report v1.37.2: $v"
bin_after=$(readlink "/proc/$(pod_pid roll-apiserver-0 kube-apiserver)/exe")
cm_bin=$(readlink "/proc/$(pod_pid roll-controller-manager-0 kube-controller-manager)/exe")
log "upgrade: kube-apiserver was $bin_before, is $bin_after; kube-controller-manager is $cm_bin"
[ "$bin_before" != "$bin_after" ] || fail "the API server still runs $bin_before"
[[ "$bin_after" == */kubernetes-1.37.2/bin/kube-apiserver ]] || fail "the API server runs $bin_after"
[[ "$cm_bin" == */kubernetes-1.37.2/bin/kube-controller-manager ]] || fail "the controller manager runs $cm_bin"
tenant_kubeconfig roll "$kc"
[ "$(tkubectl "$kc" get configmap before-upgrade -o jsonpath='{.data.written}')" = at-1.36 ] ||
    fail "the ConfigMap written at 1.36 is gone"
log "upgrade: the ConfigMap written at 1.36.3 reads back at 1.37.2"
members=$(kubectl -n "$ns" get statefulset roll-etcd -o jsonpath='{.status.readyReplicas}')
[ "$members" = 3 ] || fail "etcd has $members ready members"

# The snapshot: recorded on the control plane, its Job complete before the first new API server
# pod was created, and its file whole: restored by etcdutl and served by a scratch etcd on
# loopback, it holds the ConfigMap written at 1.36.
snap() { kubectl -n "$ns" get ncp roll -o jsonpath="{.status.rollout.snapshot.$1}"; }
snap_name=$(snap name)
[ -n "$snap_name" ] || fail "upgrade: no snapshot recorded: $(kubectl -n "$ns" get ncp roll -o jsonpath='{.status.rollout}')"
[ "$(snap claimName)" = roll-snapshots ] || fail "upgrade: the snapshot went to claim $(snap claimName)"
[ "$(snap before)" = "kube-apiserver 1.36.3 -> 1.37.2" ] || fail "upgrade: snapshot before '$(snap before)'"
log "upgrade: snapshot $snap_name.db on claim $(snap claimName) at $(snap takenAt), before $(snap before)"
# Its Job is gone once the status records it; the file stays.
no_jobs() { [ -z "$(kubectl -n "$ns" get jobs -o name)" ]; }
until_true 30 no_jobs || fail "upgrade: snapshot Jobs left: $(kubectl -n "$ns" get jobs -o name | tr '\n' ' ')"
kubectl -n "$ns" get events --field-selector reason=SnapshotTaken -o jsonpath='{.items[*].message}' |
    grep -q "etcd snapshot $snap_name.db is on claim roll-snapshots" || fail "upgrade: no SnapshotTaken Event"
first_new=$(kubectl -n "$ns" get pods -l app.kubernetes.io/component=apiserver \
    -o jsonpath='{range .items[*]}{.metadata.creationTimestamp}{"\n"}{end}' | sort | head -1)
[[ "$(snap takenAt)" < "$first_new" || "$(snap takenAt)" == "$first_new" ]] ||
    fail "upgrade: the snapshot completed at $(snap takenAt), after API server pod creation $first_new"
pv=$(kubectl -n "$ns" get pvc roll-snapshots -o jsonpath='{.spec.volumeName}')
file=$(kubectl get pv "$pv" -o jsonpath='{.spec.hostPath.path}')/$snap_name.db
[ -s "$file" ] || fail "upgrade: $file is missing"
etcd_bin=$NESTCP_BIN_ROOT/etcd-3.6.17/bin
"$etcd_bin/etcdutl" snapshot status "$file" -w table
"$etcd_bin/etcdutl" snapshot restore "$file" --data-dir "$work/restored" >"$work/restore.log" 2>&1 ||
    fail "upgrade: etcdutl cannot restore $file: $(cat "$work/restore.log")"
scratch=127.$pod_net.255.1
"$etcd_bin/etcd" --data-dir "$work/restored" --listen-client-urls "http://$scratch:2379" \
    --advertise-client-urls "http://$scratch:2379" --listen-peer-urls "http://$scratch:2380" \
    >"$work/scratch-etcd.log" 2>&1 &
scratch_pid=$!
restored_value() {
    "$etcd_bin/etcdctl" --endpoints "http://$scratch:2379" get \
        /registry/configmaps/default/before-upgrade --print-value-only 2>/dev/null | tr -d '\0'
}
until_true 30 eval '[[ "$(restored_value)" == *at-1.36* ]]' ||
    fail "upgrade: the restored snapshot does not hold the ConfigMap written at 1.36 ($(tail -3 "$work/scratch-etcd.log"))"
kill "$scratch_pid"
wait "$scratch_pid" 2>/dev/null || true
log "upgrade: the snapshot, restored, holds the ConfigMap written at 1.36.3"

# --- 3. every certificate renewed ---
# A renewal window (366 days) longer than what the certificates have left (a year), for new
# certificates that outlive it (400 days): every one of them is renewed, once.
mounted() {
    kubectl -n "$ns" get sts roll-apiserver \
        -o jsonpath='{.spec.template.spec.volumes[?(@.name=="certs")].secret.secretName}'
}
certs_before=$(mounted)
before=$(uids)
ts=$(now)
kubectl -n "$ns" patch ncp roll --type merge \
    -p '{"spec":{"certificates":{"validityDays":400,"renewBeforeDays":366}}}' >/dev/null
renewed() { [ "$(mounted)" != "$certs_before" ] && rolled; }
until_true 300 renewed || fail "renewal: the roll did not finish ($(kubectl -n "$ns" get pods --no-headers | tr '\n' ';'))"
log "renewal: the API servers mount $(mounted) (was $certs_before); rolled in $(elapsed "$ts") s"
check_roll "certificate renewal" "$ts" "$before" yes
record_pids
tenant_kubeconfig roll "$kc"
[ "$(tkubectl "$kc" get configmap before-upgrade -o jsonpath='{.data.written}')" = at-1.36 ] ||
    fail "the ConfigMap written at 1.36 is gone after the renewal"

# --- 4. a flag the API server rejects at start: stopped after the first pod, rolled back ---
bad='max-requests-inflight=not-a-number'
uid0=$(kubectl -n "$ns" get pod roll-apiserver-0 -o jsonpath='{.metadata.uid}')
ts=$(now)
kubectl -n "$ns" patch nkas roll-apiserver --type merge \
    -p '{"spec":{"extraArgs":{"max-requests-inflight":"not-a-number"}}}' >/dev/null
upgrading() {
    kubectl -n "$ns" get ncp roll -o jsonpath="{.status.conditions[?(@.type==\"Upgrading\")].$1}"
}
stalled() { [ "$(upgrading reason)" = RolloutStalled ]; }
until_true 180 stalled || fail "broken flag: the roll did not stall: $(upgrading reason): $(upgrading message)"
log "broken flag: stalled after $(elapsed "$ts") s: $(upgrading message)"
grep -q "kube-apiserver: the roll to config .* failed and is held back (pod roll-apiserver-1: container kube-apiserver restarted [0-9]* times, last exit code" <<<"$(upgrading message)" ||
    fail "broken flag: the Upgrading message does not name the pod and what failed"
[ "$(upgrading status)" = False ] || fail "broken flag: Upgrading is $(upgrading status)"
# Rolled back: the StatefulSet's partition holds the failed template back, and roll-apiserver-1
# is back, Ready, at the last good revision (the StatefulSet's currentRevision).
rolled_back() {
    kubectl -n "$ns" get statefulset/roll-apiserver pod/roll-apiserver-1 -o json | python3 -c '
import json, sys
sts, pod = json.load(sys.stdin)["items"]
st = sts.get("status", {})
ready = [c for c in pod.get("status", {}).get("conditions", []) if c["type"] == "Ready"]
ok = (sts["spec"].get("updateStrategy", {}).get("rollingUpdate", {}).get("partition") == 2 and
      st.get("currentRevision") != st.get("updateRevision") and st.get("readyReplicas") == 2 and
      pod["metadata"]["labels"].get("controller-revision-hash") == st.get("currentRevision") and
      not pod["metadata"].get("deletionTimestamp") and ready and ready[0]["status"] == "True")
sys.exit(0 if ok else 1)'
}
until_true 120 rolled_back || fail "broken flag: not rolled back: $(kubectl -n "$ns" get pods --no-headers | tr '\n' ';')"
te=$(now)
log "broken flag: rolled back after $(elapsed "$ts") s"
[ "$(kubectl -n "$ns" get pod roll-apiserver-0 -o jsonpath='{.metadata.uid}')" = "$uid0" ] ||
    fail "broken flag: roll-apiserver-0 was replaced; the roll should have stopped after the first pod"
record_pids
for pod in roll-apiserver-0 roll-apiserver-1; do
    ! grep -qx -- "--$bad" <<<"$(pod_cmdline "$pod" kube-apiserver)" ||
        fail "broken flag: $pod runs --$bad"
done
[ "$(kubectl -n "$ns" get ncp roll -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ] ||
    fail "broken flag: the control plane is not Ready while it serves the last good revision"
kubectl -n "$ns" get events --field-selector reason=RolledBack -o jsonpath='{.items[*].message}' |
    grep -q "Pod roll-apiserver-1 deleted: it ran the revision of a failed roll" ||
    fail "broken flag: no RolledBack Event for roll-apiserver-1"
check_availability "broken flag" "$ts" "$te" "through the Service name" "$work/avail.log"
check_availability "broken flag" "$ts" "$te" "picking pods from the host" "$work/avail-host.log"
# The spec as it was: the StatefulSet's template is the running revision again, nothing is
# replaced, and the hold is gone.
before=$(uids)
kubectl -n "$ns" patch nkas roll-apiserver --type merge \
    -p '{"spec":{"extraArgs":{"max-requests-inflight":null}}}' >/dev/null
until_true 120 rolled || fail "broken flag: restoring the spec did not end the hold: $(upgrading reason): $(upgrading message)"
[ "$(uids)" = "$before" ] || fail "broken flag: restoring the spec replaced a pod"
[ -z "$(kubectl -n "$ns" get ncp roll -o jsonpath='{.status.rollout.components.apiserver.rolledBack}')" ] ||
    fail "broken flag: status.rollout still says rolled back"
partition=$(kubectl -n "$ns" get sts roll-apiserver -o jsonpath='{.spec.updateStrategy.rollingUpdate.partition}')
[ "${partition:-0}" = 0 ] || fail "broken flag: the StatefulSet keeps its partition $partition"
log "broken flag: the spec restored, Upgrading $(upgrading reason), no pod replaced"

# --- 4b. an API server that is Ready but refuses most requests: stopped, rolled back ---
# In-flight limits of one request, without priority and fairness, answer 429 to most requests
# of every user but system:masters while /readyz stays 200. Users of a group that may handle
# ConfigMaps load the new pod; nestcp reads its /metrics and holds the roll back.
ca_secret=$(kubectl -n "$ns" get secret roll-ca -o json)
python3 -c 'import base64, json, sys; d = json.load(sys.stdin)["data"]; open(sys.argv[1], "wb").write(base64.b64decode(d["tls.crt"])); open(sys.argv[2], "wb").write(base64.b64decode(d["tls.key"]))' \
    "$work/tenant-ca.crt" "$work/tenant-ca.key" <<<"$ca_secret"
chmod 600 "$work/tenant-ca.key"
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/O=gate-devs/CN=gate-user" \
    -keyout "$work/gate-user.key" -out "$work/gate-user.csr" 2>/dev/null
openssl x509 -req -in "$work/gate-user.csr" -CA "$work/tenant-ca.crt" -CAkey "$work/tenant-ca.key" \
    -CAcreateserial -days 1 -out "$work/gate-user.crt" 2>/dev/null || fail "error rate: cannot sign the user's certificate"
tkubectl "$kc" create clusterrole gate-configmaps --verb=get,list,create,delete --resource=configmaps >/dev/null
tkubectl "$kc" create clusterrolebinding gate-devs --clusterrole=gate-configmaps --group=gate-devs >/dev/null
uid0=$(kubectl -n "$ns" get pod roll-apiserver-0 -o jsonpath='{.metadata.uid}')
python3 "$(dirname "$0")/newpod_load.py" "$ns" roll-apiserver roll-apiserver "$work/admin/ca.crt" \
    "$work/gate-user.crt" "$work/gate-user.key" "$work/gate-load.txt" 10 >"$work/gate-load.log" 2>&1 &
load_pid=$!
pids+=($load_pid)
ts=$(now)
kubectl -n "$ns" patch nkas roll-apiserver --type merge -p '{"spec":{"extraArgs":{"max-requests-inflight":"1","max-mutating-requests-inflight":"1","enable-priority-and-fairness":"false"}}}' >/dev/null
until_true 240 stalled || fail "error rate: the roll did not stall: $(upgrading reason): $(upgrading message)"
log "error rate: stalled after $(elapsed "$ts") s: $(upgrading message)"
grep -q "kube-apiserver: the roll to config .* failed and is held back (pod roll-apiserver-1: [0-9]* of [0-9]* API requests since it started were refused or failed (429: [1-9]" <<<"$(upgrading message)" ||
    fail "error rate: the Upgrading message does not name the pod and its 429s"
[ "$(upgrading status)" = False ] || fail "error rate: Upgrading is $(upgrading status)"
until_true 120 rolled_back || fail "error rate: not rolled back: $(kubectl -n "$ns" get pods --no-headers | tr '\n' ';')"
te=$(now)
log "error rate: rolled back after $(elapsed "$ts") s"
stop_pid "$load_pid" 30 || true
cat "$work/gate-load.log"
grep -q '^roll-apiserver-1 429 ' "$work/gate-load.txt" || fail "error rate: the load got no 429 from the new pod"
[ "$(kubectl -n "$ns" get pod roll-apiserver-0 -o jsonpath='{.metadata.uid}')" = "$uid0" ] ||
    fail "error rate: roll-apiserver-0 was replaced; the roll should have stopped after the first pod"
record_pids
for pod in roll-apiserver-0 roll-apiserver-1; do
    ! grep -qx -- "--max-requests-inflight=1" <<<"$(pod_cmdline "$pod" kube-apiserver)" ||
        fail "error rate: $pod runs --max-requests-inflight=1"
done
kubectl -n "$ns" get events --field-selector reason=RolledBack -o jsonpath='{.items[*].message}' |
    grep -q "Pod roll-apiserver-1 deleted: it ran the revision of a failed roll" ||
    fail "error rate: no RolledBack Event for roll-apiserver-1"
check_availability "error rate" "$ts" "$te" "through the Service name" "$work/avail.log"
check_availability "error rate" "$ts" "$te" "picking pods from the host" "$work/avail-host.log"
before=$(uids)
kubectl -n "$ns" patch nkas roll-apiserver --type merge -p '{"spec":{"extraArgs":{"max-requests-inflight":null,"max-mutating-requests-inflight":null,"enable-priority-and-fairness":null}}}' >/dev/null
until_true 120 rolled || fail "error rate: removing the flags did not end the hold: $(upgrading reason): $(upgrading message)"
[ "$(uids)" = "$before" ] || fail "error rate: removing the flags replaced a pod"
[ -z "$(kubectl -n "$ns" get ncp roll -o jsonpath='{.status.rollout.components.apiserver.rolledBack}')" ] ||
    fail "error rate: status.rollout still says rolled back"
log "error rate: the flags removed, Upgrading $(upgrading reason), no pod replaced"

# --- 5. a downgrade is refused, and nothing rolls ---
before=$(uids)
kubectl -n "$ns" patch ncp roll --type merge -p '{"spec":{"version":"1.36.3"}}' >/dev/null
refused() {
    [ "$(kubectl -n "$ns" get ncp roll -o jsonpath='{.status.conditions[?(@.type=="Upgrading")].reason}')" = DowngradeRefused ]
}
until_true 60 refused || fail "the downgrade was not refused: $(kubectl -n "$ns" get ncp roll -o jsonpath='{.status.conditions}')"
log "downgrade: $(kubectl -n "$ns" get ncp roll -o jsonpath='{.status.conditions[?(@.type=="Upgrading")].message}')"
[ "$(uids)" = "$before" ] || fail "a pod was replaced after the refused downgrade"
v=$(versions_of_apiservers)
[ "$(tr ' ' '\n' <<<"$v" | grep -c '=v1.37.2$')" = 2 ] || fail "after the refused downgrade the API servers report $v"

# --- 6. with one API server, the outage of a roll, measured ---
# Nothing can serve while the only API server is replaced: the roll's outage is what the
# clients see between the old pod leaving the endpoints and the new one becoming Ready.
kubectl -n "$ns" patch ncp roll --type merge -p '{"spec":{"version":"1.37.2"}}' >/dev/null
kubectl -n "$ns" patch nkas roll-apiserver --type merge -p '{"spec":{"replicas":1}}' >/dev/null
one_apiserver() { [ "$(uids | tr ' ' '\n' | grep -c '^roll-apiserver-')" = 1 ] && rolled; }
until_true 120 one_apiserver || fail "the API servers were not scaled to one: $(uids)"
before=$(uids)
ts=$(now)
kubectl -n "$ns" patch ncp roll --type merge -p "{\"spec\":{\"featureGates\":{\"$gate\":false}}}" >/dev/null
until_true 300 rolled || fail "one API server: the roll did not finish ($(kubectl -n "$ns" get pods --no-headers | tr '\n' ';'))"
log "one API server: rolled in $(elapsed "$ts") s"
check_roll "feature gate, one API server" "$ts" "$before" no measure
finish
