#!/usr/bin/env bash
# The node agent against the real super cluster: a StatefulSet of two etcd members with a
# headless Service is bound and run by nestcp-nodeagent; the members find each other by their
# StatefulSet DNS names and form a quorum; a deleted pod is stopped, removed and recreated on
# the same data directory; deleting the StatefulSet stops every process. Claims are honoured as
# a kubelet does: a StatefulSet pod starts only once its claim is Bound (to a hostPath volume the
# super cluster provisions), its data outlives the pod, and the volume and its directory go with
# the claim; a claim that never binds keeps its pod's container waiting. A pod with scheduling
# gates stays unbound until its last gate is removed, then runs with the annotation its env
# reads through the downward API. The agent leaves no process behind when it exits.
set -euo pipefail
: "${KUBECONFIG:?KUBECONFIG must point at the super cluster}"
agent_bin=${NESTCP_NODEAGENT:-${NESTCP_BUILD_DIR:-build}/test/nodeagent/nestcp-nodeagent}
[ -x "$agent_bin" ] || { echo "FAIL: no node agent binary at $agent_bin" >&2; exit 1; }

id=$$
ns=nodeagent-it-$id
node=nodeagent-it-$id
net=$((60 + RANDOM % 150))
state=$(mktemp -d /tmp/nodeagent-it.XXXXXX)
agent_pid=
created_kcm_binding=0
pids_seen=()

kubectl() { command kubectl --request-timeout=20s "$@"; }
etcdctl() { ETCDCTL_API=3 command etcdctl --command-timeout=5s "$@"; }
log() { echo "--- $*"; }
fail() {
    echo "FAIL: $*" >&2
    echo "---- agent log (last 60 lines) ----" >&2
    tail -n 60 "$state/agent.log" >&2 || true
    exit 1
}

cleanup() {
    if [ -n "$agent_pid" ] && kill -0 "$agent_pid" 2>/dev/null; then
        kill -TERM "$agent_pid" 2>/dev/null || true
        for _ in $(seq 1 100); do kill -0 "$agent_pid" 2>/dev/null || break; sleep 0.2; done
        kill -KILL "$agent_pid" 2>/dev/null || true
    fi
    # Pods left on the stopped node would stay Terminating (no kubelet finishes them).
    kubectl -n "$ns" delete pods --all --grace-period=0 --force --wait=false >/dev/null 2>&1 ||
        true
    # Claims (and so their volumes' directories) go while the controller manager still runs.
    kubectl -n "$ns" delete pvc --all --timeout=30s >/dev/null 2>&1 || true
    kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
    kubectl delete storageclass "late-$id" --wait=false >/dev/null 2>&1 || true
    kubectl delete node "$node" --wait=false >/dev/null 2>&1 || true
    kubectl -n kube-node-lease delete lease "$node" --wait=false >/dev/null 2>&1 || true
    if [ "$created_kcm_binding" = 1 ]; then
        kubectl delete clusterrolebinding "nodeagent-it-kcm-$id" >/dev/null 2>&1 || true
    fi
    rm -rf "$state"
    # The mount point the agent made on the host for the claim test, if nothing else uses it.
    rmdir /var/lib/nodeagent-it 2>/dev/null || true
}
trap cleanup EXIT

# Polls a command until it succeeds: wait_for SECONDS WHAT CMD...
wait_for() {
    local secs=$1 what=$2
    shift 2
    for _ in $(seq 1 $((secs * 2))); do
        if "$@" >/dev/null 2>&1; then return 0; fi
        sleep 0.5
    done
    fail "timed out after ${secs}s waiting for $what"
}

# Remembers every container pid the agent records, to check they are all gone at the end.
record_pids() {
    local f
    for f in "$state"/pods/*/*.pid; do
        [ -f "$f" ] && pids_seen+=("$(cat "$f")")
    done
    return 0
}

sts_ready() {
    [ "$(kubectl -n "$ns" get statefulset etcd -o jsonpath='{.status.readyReplicas}')" = "$1" ]
}

pod_ready() {
    [ "$(kubectl -n "$ns" get pod "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]
}

pod_ip() { kubectl -n "$ns" get pod "$1" -o jsonpath='{.status.podIP}'; }
claim_phase() { kubectl -n "$ns" get pvc "$1" -o jsonpath='{.status.phase}'; }
claim_bound() { [ "$(claim_phase "$1")" = Bound ]; }
pv_gone() { kubectl wait --for=delete "pv/$1" --timeout=1s; }

# The pod's first container waits in ContainerCreating, its message naming the unbound claim.
waits_for_claim() {
    local pod=$1 claim=$2 st
    st=$(kubectl -n "$ns" get pod "$pod" -o jsonpath='{.status.containerStatuses[0].state.waiting.reason}|{.status.containerStatuses[0].state.waiting.message}')
    case "$st" in "ContainerCreating|"*"PersistentVolumeClaim $ns/$claim is not bound"*) return 0 ;; esac
    return 1
}

# Nothing of the pod's container ever ran: no process, no start, no restart.
never_started() {
    local pod=$1 container=$2
    [ ! -e "$state/pods/${ns}_$pod/$container.pid" ] || fail "$pod: $container has a pid file"
    [ "$(kubectl -n "$ns" get pod "$pod" -o jsonpath='{.status.containerStatuses[0].started}/{.status.containerStatuses[0].restartCount}/{.status.phase}')" = false/0/Pending ] ||
        fail "$pod: $container started, or the pod is not Pending"
}
pod_uid() { kubectl -n "$ns" get pod "$1" -o jsonpath='{.metadata.uid}'; }
no_pods() { [ -z "$(kubectl -n "$ns" get pods -o name)" ]; }

# The super cluster's controller manager runs as system:kube-controller-manager without
# --use-service-account-credentials; that user may not create ControllerRevisions, so no
# StatefulSet would get pods. Grant what the per-controller service accounts would have.
if [ "$(kubectl auth can-i create controllerrevisions.apps -n default \
        --as=system:kube-controller-manager)" != yes ]; then
    log "NOTE: granting system:kube-controller-manager cluster-admin for this test" \
        "(hack/kube-env.sh starts it without --use-service-account-credentials)"
    kubectl create clusterrolebinding "nodeagent-it-kcm-$id" --clusterrole=cluster-admin \
        --user=system:kube-controller-manager >/dev/null
    created_kcm_binding=1
fi

cat >"$state/images" <<MAP
nestcp.test/shell host
MAP
log "starting the node agent (node $node, pods on 127.$net.0.0/16)"
"$agent_bin" --node-name "$node" --state-dir "$state" --selector "nodeagent-test=$id" \
    --image-map "$state/images" --pod-network "$net" --restart-backoff 1s --heartbeat 2s \
    --stop-grace-max 10s --log-level debug >"$state/agent.log" 2>&1 &
agent_pid=$!
wait_for 30 "node $node Ready" \
    kubectl wait --for=condition=Ready "node/$node" --timeout=1s
kubectl create namespace "$ns" >/dev/null
# These pods test the agent's own mechanics (host shells writing host paths, as root): outside
# the restricted profile the super cluster enforces by default.
kubectl label namespace "$ns" pod-security.kubernetes.io/enforce=privileged >/dev/null

kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Service
metadata: {name: etcd, namespace: $ns}
spec:
  clusterIP: None
  publishNotReadyAddresses: true
  selector: {app: etcd, nodeagent-test: "$id"}
  ports: [{name: client, port: 2379}, {name: peer, port: 2380}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: etcd, namespace: $ns}
spec:
  serviceName: etcd
  replicas: 2
  podManagementPolicy: Parallel
  selector: {matchLabels: {app: etcd, nodeagent-test: "$id"}}
  template:
    metadata: {labels: {app: etcd, nodeagent-test: "$id"}}
    spec:
      # The node agent projects no service account tokens (nestcp's pods mount none either);
      # from 1.24 the ServiceAccount admission plugin would otherwise add one.
      automountServiceAccountToken: false
      terminationGracePeriodSeconds: 10
      containers:
      - name: etcd
        image: registry.k8s.io/etcd:3.6.17-0
        command: [etcd]
        args:
        - --name=\$(POD_NAME)
        - --data-dir=/var/lib/etcd/data
        - --listen-client-urls=http://\$(POD_IP):2379
        - --advertise-client-urls=http://\$(POD_NAME).etcd.\$(POD_NAMESPACE).svc:2379
        - --listen-peer-urls=http://\$(POD_IP):2380
        - --initial-advertise-peer-urls=http://\$(POD_NAME).etcd.\$(POD_NAMESPACE).svc:2380
        - --initial-cluster=etcd-0=http://etcd-0.etcd.\$(POD_NAMESPACE).svc:2380,etcd-1=http://etcd-1.etcd.\$(POD_NAMESPACE).svc.cluster.local:2380
        - --initial-cluster-token=nodeagent-it
        env:
        - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
        - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: POD_NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
        ports: [{name: client, containerPort: 2379}, {name: peer, containerPort: 2380}]
        volumeMounts: [{name: data, mountPath: /var/lib/etcd}]
        readinessProbe:
          httpGet: {path: /health, port: client}
          periodSeconds: 1
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
YAML

log "waiting for both members to be Ready"
wait_for 120 "StatefulSet readyReplicas 2" sts_ready 2
record_pids
for p in etcd-0 etcd-1; do
    [ "$(kubectl -n "$ns" get pod "$p" -o jsonpath='{.spec.nodeName}')" = "$node" ] ||
        fail "$p is not bound to $node"
    case "$(pod_ip "$p")" in 127.$net.*) ;; *) fail "$p has pod IP '$(pod_ip "$p")'" ;; esac
    kubectl -n "$ns" get pod "$p" -o jsonpath='{.status.containerStatuses[0].containerID}' |
        grep -q '^nestcp://' || fail "$p has no containerID"
done
ip0=$(pod_ip etcd-0)
ip1=$(pod_ip etcd-1)
[ "$ip0" != "$ip1" ] || fail "both pods have IP $ip0"

log "the members found each other by StatefulSet DNS names: a 2-member quorum"
members=$(etcdctl --endpoints "http://$ip0:2379" member list)
echo "$members"
[ "$(echo "$members" | grep -c ', started, ')" = 2 ] || fail "expected 2 started members"
echo "$members" | grep -q "http://etcd-1.etcd.$ns.svc.cluster.local:2380" ||
    fail "etcd-1's peer URL is not its DNS name"
etcdctl --endpoints "http://$ip0:2379,http://$ip1:2379" endpoint health ||
    fail "members are not healthy"
etcdctl --endpoints "http://$ip1:2379" put nodeagent-key kept >/dev/null
id0=$(etcdctl --endpoints "http://$ip0:2379" endpoint status | awk -F', ' '{print $2}')

log "deleting etcd-0: stopped, removed, recreated on the same data directory"
old_uid=$(pod_uid etcd-0)
old_pid=$(cat "$state/pods/${ns}_etcd-0/etcd.pid")
kubectl -n "$ns" delete pod etcd-0 --timeout=60s >/dev/null
kill -0 "$old_pid" 2>/dev/null && fail "the deleted pod's etcd (pid $old_pid) still runs"
wait_for 60 "a new etcd-0" bash -c "[ -n \"\$(kubectl -n $ns get pod etcd-0 -o jsonpath='{.metadata.uid}')\" ] &&
    [ \"\$(kubectl -n $ns get pod etcd-0 -o jsonpath='{.metadata.uid}')\" != $old_uid ]"
wait_for 90 "the new etcd-0 Ready" pod_ready etcd-0
wait_for 30 "StatefulSet readyReplicas 2 again" sts_ready 2
record_pids
ip0=$(pod_ip etcd-0)
new_id0=$(etcdctl --endpoints "http://$ip0:2379" endpoint status | awk -F', ' '{print $2}')
[ "$new_id0" = "$id0" ] || fail "etcd-0 came back as member $new_id0, not $id0 (data lost?)"
[ "$(etcdctl --endpoints "http://$ip0:2379" get --print-value-only nodeagent-key)" = kept ] ||
    fail "the key written before the restart is gone"

log "deleting the StatefulSet stops every process; deleting its claims deletes their volumes"
etcd_pvs=()
for c in data-etcd-0 data-etcd-1; do
    etcd_pvs+=("$(kubectl -n "$ns" get pvc "$c" -o jsonpath='{.spec.volumeName}')")
done
kubectl -n "$ns" delete statefulset etcd >/dev/null
wait_for 60 "every pod gone" no_pods
for p in "${pids_seen[@]}"; do
    kill -0 "$p" 2>/dev/null && fail "process $p of a deleted pod still runs"
done
etcd_paths=()
for pv in "${etcd_pvs[@]}"; do
    etcd_paths+=("$(kubectl get pv "$pv" -o jsonpath='{.spec.hostPath.path}')")
    [ -d "${etcd_paths[-1]}/data/member" ] ||
        fail "etcd's data is not in PV $pv ('${etcd_paths[-1]}')"
done
kubectl -n "$ns" delete pvc data-etcd-0 data-etcd-1 --timeout=60s >/dev/null
for i in "${!etcd_pvs[@]}"; do
    wait_for 60 "PV ${etcd_pvs[$i]} deleted" pv_gone "${etcd_pvs[$i]}"
    [ ! -e "${etcd_paths[$i]}" ] || fail "${etcd_paths[$i]} outlived PV ${etcd_pvs[$i]}"
done

log "a claim that never binds (no StorageClass absent-$id): its pod's container is not started"
kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: never, namespace: $ns}
spec:
  storageClassName: absent-$id
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: unbound, namespace: $ns, labels: {nodeagent-test: "$id"}}
spec:
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  containers:
  - name: sh
    image: nestcp.test/shell
    command: [/bin/sh, -c, 'exec sleep 600']
    volumeMounts: [{name: data, mountPath: /var/lib/nodeagent-it}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: never}}]
YAML
wait_for 30 "unbound's container waiting for claim never" waits_for_claim unbound never
never_started unbound sh

log "a StatefulSet pod starts only once its claim is Bound (StorageClass late-$id comes later)"
data=/var/lib/nodeagent-it
kubectl apply -f - >/dev/null <<YAML
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: files, namespace: $ns}
spec:
  serviceName: files
  replicas: 1
  selector: {matchLabels: {app: files, nodeagent-test: "$id"}}
  template:
    metadata: {labels: {app: files, nodeagent-test: "$id"}}
    spec:
      automountServiceAccountToken: false
      terminationGracePeriodSeconds: 2
      containers:
      - name: app
        image: nestcp.test/shell
        env: [{name: POD_UID, valueFrom: {fieldRef: {fieldPath: metadata.uid}}}]
        command:
        - /bin/sh
        - -c
        - |
          if [ -f $data/hello ]; then cp $data/hello "$data/seen-by-\$POD_UID"
          else echo "written by \$POD_UID" >$data/hello; fi
          exec sleep 600
        volumeMounts: [{name: data, mountPath: $data}]
        readinessProbe:
          exec: {command: [test, -f, $data/hello]}
          periodSeconds: 1
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      storageClassName: late-$id
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
YAML
wait_for 60 "files-0 waiting for claim data-files-0" waits_for_claim files-0 data-files-0
[ "$(claim_phase data-files-0)" = Pending ] || fail "data-files-0 is $(claim_phase data-files-0)"
never_started files-0 app
kubectl apply -f - >/dev/null <<YAML
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: late-$id}
provisioner: kubernetes.io/host-path
reclaimPolicy: Delete
volumeBindingMode: Immediate
YAML
# The PV controller retries a claim of a missing class at its resync (15 s).
wait_for 90 "data-files-0 Bound" claim_bound data-files-0
pv=$(kubectl -n "$ns" get pvc data-files-0 -o jsonpath='{.spec.volumeName}')
pv_path=$(kubectl get pv "$pv" -o jsonpath='{.spec.hostPath.path}')
case "$pv_path" in /tmp/hostpath_pv/?*) ;; *) fail "PV $pv is not hostPath under /tmp/hostpath_pv: '$pv_path'" ;; esac
wait_for 60 "files-0 Ready" pod_ready files-0
record_pids
uid1=$(pod_uid files-0)
[ "$(cat "$pv_path/hello" 2>/dev/null)" = "written by $uid1" ] ||
    fail "files-0 did not write into PV $pv ($pv_path): $(ls -la "$pv_path" 2>&1)"

log "files-0 is deleted and recreated on the same PersistentVolume, and finds the file"
kubectl -n "$ns" delete pod files-0 --timeout=60s >/dev/null
wait_for 60 "a new files-0" bash -c "uid=\$(kubectl -n $ns get pod files-0 -o jsonpath='{.metadata.uid}');
    [ -n \"\$uid\" ] && [ \"\$uid\" != $uid1 ]"
wait_for 60 "the new files-0 Ready" pod_ready files-0
record_pids
uid2=$(pod_uid files-0)
[ "$(cat "$pv_path/seen-by-$uid2" 2>/dev/null)" = "written by $uid1" ] ||
    fail "the new files-0 ($uid2) did not find the first one's file: $(ls -la "$pv_path" 2>&1)"

log "deleting the StatefulSet and its claim deletes PV $pv and its directory"
kubectl -n "$ns" delete statefulset files >/dev/null
wait_for 60 "files-0 gone" bash -c "[ -z \"\$(kubectl -n $ns get pods -l app=files -o name)\" ]"
[ -d "$pv_path" ] || fail "$pv_path went with the pod, before the claim"
kubectl -n "$ns" delete pvc data-files-0 --timeout=60s >/dev/null
wait_for 60 "PV $pv deleted" pv_gone "$pv"
[ ! -e "$pv_path" ] || fail "$pv_path outlived PV $pv"

log "the claim that never binds still keeps unbound's container from starting"
[ "$(claim_phase never)" = Pending ] || fail "claim never is $(claim_phase never)"
waits_for_claim unbound never || fail "unbound is no longer waiting for claim never"
never_started unbound sh
kubectl -n "$ns" delete pod unbound --timeout=60s >/dev/null
kubectl -n "$ns" delete pvc never --timeout=60s >/dev/null

log "a StatefulSet pod with scheduling gates is not bound until its last gate is removed"
ann_key=nestcp.dev/greeting
kubectl apply -f - >/dev/null <<YAML
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: gated, namespace: $ns}
spec:
  serviceName: gated
  replicas: 1
  selector: {matchLabels: {app: gated, nodeagent-test: "$id"}}
  template:
    metadata: {labels: {app: gated, nodeagent-test: "$id"}}
    spec:
      automountServiceAccountToken: false
      terminationGracePeriodSeconds: 1
      schedulingGates: [{name: nestcp.dev/hold}, {name: nestcp.dev/second}]
      containers:
      - name: app
        image: nestcp.test/shell
        env:
        - {name: GREETING, valueFrom: {fieldRef: {fieldPath: "metadata.annotations['$ann_key']"}}}
        command: [/bin/sh, -c, 'echo "greeting=[\$GREETING]"; exec sleep 600']
YAML
wait_for 30 "gated-0 created with its gates" bash -c \
    "[ \"\$(kubectl -n $ns get pod gated-0 -o jsonpath='{.spec.schedulingGates[*].name}')\" = 'nestcp.dev/hold nestcp.dev/second' ]"
# A pod created after gated-0 is bound and running: the agent has seen gated-0 and passed it by.
witness=0
passed_by() {
    local pod=$1
    witness=$((witness + 1))
    kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: witness-$witness, namespace: $ns, labels: {nodeagent-test: "$id"}}
spec:
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 1
  containers: [{name: sh, image: nestcp.test/shell, command: [/bin/sh, -c, 'exec sleep 600']}]
YAML
    wait_for 30 "witness-$witness Ready" pod_ready "witness-$witness"
    record_pids
    [ -z "$(kubectl -n "$ns" get pod "$pod" -o jsonpath='{.spec.nodeName}')" ] ||
        fail "$pod was bound while gated ($(kubectl -n "$ns" get pod "$pod" -o jsonpath='{.spec.schedulingGates}'))"
    [ "$(kubectl -n "$ns" get pod "$pod" -o jsonpath='{.status.phase}|{.status.containerStatuses}')" = 'Pending|' ] ||
        fail "$pod has container statuses or is not Pending while gated"
    [ ! -e "$state/pods/${ns}_$pod" ] || fail "$pod has a pod directory while gated"
    # The API server set this at creation; the agent writes no status for an unbound pod.
    [ "$(kubectl -n "$ns" get pod "$pod" -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].reason}')" = SchedulingGated ] ||
        fail "$pod has no PodScheduled condition with reason SchedulingGated"
    # Not tried and refused (the API server answers 409 to a gated pod's binding): skipped.
    grep -q "pod scheduling gated pod=$ns/$pod " "$state/agent.log" ||
        fail "the agent did not skip $pod as gated"
}
passed_by gated-0
# Removing one gate of two leaves it gated (a JSON patch may remove one element).
kubectl -n "$ns" patch pod gated-0 --type json \
    -p '[{"op": "remove", "path": "/spec/schedulingGates/0"}]' >/dev/null
[ "$(kubectl -n "$ns" get pod gated-0 -o jsonpath='{.spec.schedulingGates[*].name}')" = nestcp.dev/second ] ||
    fail "gated-0's gates after removing the first: $(kubectl -n "$ns" get pod gated-0 -o jsonpath='{.spec.schedulingGates}')"
passed_by gated-0
# The last gate goes (a merge patch: null removes the list) with the annotation its env reads.
kubectl -n "$ns" patch pod gated-0 --type merge -p "{\"metadata\": {\"annotations\": {\"$ann_key\": \"hello, gates\"}}, \"spec\": {\"schedulingGates\": null}}" >/dev/null
wait_for 30 "gated-0 Ready once ungated" pod_ready gated-0
record_pids
[ "$(kubectl -n "$ns" get pod gated-0 -o jsonpath='{.spec.nodeName}')" = "$node" ] ||
    fail "gated-0 is not bound to $node"
[ "$(kubectl -n "$ns" get pod gated-0 -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].status}')" = True ] ||
    fail "gated-0 is not PodScheduled once bound"
grep -qx 'greeting=\[hello, gates\]' "$state/pods/${ns}_gated-0/app.log" ||
    fail "gated-0's container did not see the annotation: $(cat "$state/pods/${ns}_gated-0/app.log" 2>&1)"
tr '\0' '\n' <"/proc/$(cat "$state/pods/${ns}_gated-0/app.pid")/environ" | grep -qx 'GREETING=hello, gates' ||
    fail "gated-0's process has no GREETING=hello, gates in its environment"
kubectl -n "$ns" delete statefulset gated >/dev/null
kubectl -n "$ns" delete pod $(seq -f 'witness-%g' 1 "$witness") --timeout=60s >/dev/null
wait_for 60 "gated-0 gone" bash -c "[ -z \"\$(kubectl -n $ns get pods -l app=gated -o name)\" ]"

log "a pod still running when the agent stops is stopped with it"
kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: sleeper, namespace: $ns, labels: {nodeagent-test: "$id"}}
spec:
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 3
  containers:
  - {name: sh, image: nestcp.test/shell, command: [/bin/sh, -c, 'trap "" TERM; sleep 600 & wait']}
YAML
wait_for 30 "sleeper Ready" pod_ready sleeper
record_pids
kill -TERM "$agent_pid"
for _ in $(seq 1 100); do kill -0 "$agent_pid" 2>/dev/null || break; sleep 0.2; done
kill -0 "$agent_pid" 2>/dev/null && fail "the agent did not exit within 20s of SIGTERM"
rc=0
wait "$agent_pid" || rc=$?
agent_pid=
[ "$rc" = 0 ] || fail "the agent exited with $rc"
for p in "${pids_seen[@]}"; do
    kill -0 "$p" 2>/dev/null && fail "process $p is left behind"
done
for p in "${pids_seen[@]}"; do
    pgrep -g "$p" >/dev/null && fail "process group $p still has members"
done
if pgrep -f "$state" >/dev/null; then fail "a process still refers to $state"; fi
[ "$(kubectl -n "$ns" get pod sleeper -o jsonpath='{.status.containerStatuses[0].ready}')" = false ] ||
    fail "sleeper is still reported ready"
log "PASS (${#pids_seen[@]} container processes checked)"
