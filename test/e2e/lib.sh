# shellcheck shell=bash
# Shared by the end-to-end tests (sourced, not run). Each test runs, as its own processes,
# nestcp-nodeagent (it binds the tenant pods to a Node of its own and runs their containers as
# host processes with loopback pod IPs) and `nestcp manager` for one namespace; tenants are
# created with kubectl as a user would. At exit everything the test started is stopped and its
# namespace, Node and Lease are deleted; `finish` checks that no tenant process is left.
#
# Tenant access keeps TLS verification on: kubectl goes to a ready API server pod's IP with
# --tls-server-name set to the name in the kubeconfig (a SAN of the API server certificate);
# etcdctl runs in a private mount namespace whose /etc/hosts is the node agent's hosts file of a
# pod, so the members' DNS names resolve as they do inside the tenant.

: "${KUBECONFIG:?KUBECONFIG must point at the super cluster}"
: "${NESTCP_BIN:?}"
: "${NESTCP_SOURCE_DIR:?}"
: "${NESTCP_BUILD_DIR:?}"

agent_bin=${NESTCP_NODEAGENT:-$NESTCP_BUILD_DIR/test/nodeagent/nestcp-nodeagent}
[ -x "$agent_bin" ] || { echo "FAIL: no node agent binary at $agent_bin" >&2; exit 1; }

test_name=$(basename "$0" .sh)
short=${test_name#test_}
short=${short//_/-}
ns=e2e-${short:0:40}-$$
node=e2e-$$
. "$NESTCP_SOURCE_DIR/test/support/podnet.sh"
# shellcheck source=../support/crds.sh
. "$NESTCP_SOURCE_DIR/test/support/crds.sh"
podnet_claim || { echo "FAIL: no free pod network" >&2; exit 1; }
pod_net=$podnet
work=$(mktemp -d /tmp/nestcp-e2e.XXXXXX)
agent_state=$work/agent
agent_pid=
mgr_pid=
pids=()
pids_seen=()
agent_args=() # extra node agent flags a test may set before setup
fail_logs=()   # more logs `fail` shows the end of (a second super cluster's manager and agent)
fail_agents=() # more node agent state directories whose pod logs `fail` shows

kubectl() { command kubectl --request-timeout=20s "$@"; }

now() { date +%s.%N; }
# elapsed T0: seconds since T0, one decimal.
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
log() { echo "[$(date +%T)] $*"; }

fail() {
    echo "FAIL: $*" >&2
    local f d
    for f in "$work"/manager.log "$work"/agent.log "${fail_logs[@]}"; do
        [ -f "$f" ] || continue
        echo "---- ${f#"$work"/} (last 30 lines)" >&2
        grep -v ' debug ' "$f" | tail -n 30 >&2
    done
    for d in "$agent_state" "${fail_agents[@]}"; do
        for f in "$d"/pods/*/*.log; do
            [ -f "$f" ] || continue
            echo "---- ${f#"$work"/} (last 8 lines)" >&2
            tail -n 8 "$f" >&2
        done
    done
    exit 1
}

# until_true SECONDS CMD...: runs CMD every 0.5 s until it succeeds; 1 on timeout.
until_true() {
    local end
    end=$(awk -v s="$1" -v n="$(now)" 'BEGIN { printf "%.3f", n + s }')
    shift
    while ! "$@" >/dev/null 2>&1; do
        awk -v e="$end" -v n="$(now)" 'BEGIN { exit !(n > e) }' && return 1
        sleep 0.5
    done
}

# stop_pid PID SECONDS: SIGTERM, then SIGKILL once SECONDS have passed.
stop_pid() {
    local pid=$1 secs=$2
    [ -n "$pid" ] || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    for _ in $(seq 1 $((secs * 5))); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.2
    done
    kill -KILL "$pid" 2>/dev/null || true
    return 1
}

# Background helpers go into pids, by their own pid: start commands, not shell functions
# (`kubectl` here is one), so that killing the pid stops the command.

# Remembers every container pid the node agent has recorded, to check they are gone at the end.
record_pids() {
    local f
    for f in "$agent_state"/pods/*/*.pid; do
        [ -f "$f" ] && pids_seen+=("$(cat "$f" 2>/dev/null)")
    done
    return 0
}

# The processes left that were started for this test's pods: recorded pids still alive, and
# any process whose command line names an address of this test's pod network.
leftover_processes() {
    local p
    for p in "${pids_seen[@]}"; do
        [ -n "$p" ] && kill -0 "$p" 2>/dev/null && echo "$p"
    done
    pgrep -f "127\\.$pod_net\\.[0-9]+\\.[0-9]+" 2>/dev/null | grep -vx "$$" || true
}

cleanup() {
    local p
    [ -n "$mgr_pid" ] && stop_pid "$mgr_pid" 20
    for p in "${pids[@]}"; do
        { kill -9 "$p" && wait "$p"; } 2>/dev/null || true
    done
    [ -n "$agent_pid" ] && stop_pid "$agent_pid" 60
    # With the manager gone, nothing removes its finalizers: the namespace would stay
    # Terminating.
    kubectl -n "$ns" get ncp,netcd,nkas,nkcm,nc,clusters.cluster.x-k8s.io -o name 2>/dev/null |
        xargs -r kubectl --request-timeout=20s -n "$ns" patch --type merge -p '{"metadata":{"finalizers":null}}' \
            >/dev/null 2>&1 || true
    # Pods left on the stopped node would stay Terminating (no kubelet finishes them).
    kubectl -n "$ns" delete pods --all --grace-period=0 --force --wait=false >/dev/null 2>&1 ||
        true
    kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
    kubectl delete node "$node" --wait=false >/dev/null 2>&1 || true
    kubectl -n kube-node-lease delete lease "$node" --wait=false >/dev/null 2>&1 || true
    if [ -z "${NESTCP_E2E_KEEP:-}" ]; then
        rm -rf "$work"
    else
        echo "kept $work (NESTCP_E2E_KEEP is set)" >&2
    fi
    podnet_release
}
trap cleanup EXIT

install_crds() {
    # nestcp's CRDs and Cluster API's Cluster CRD (test/support/crds.sh), until Established;
    # then until kubectl, which discovers new resources lazily, knows every kind.
    crds_install || fail "the CRDs are not established"
    until_true 30 kubectl get ncp,netcd,nkas,nkcm,nc,clusters.cluster.x-k8s.io -A ||
        fail "kubectl does not discover the CRDs"
}

# setup: CRDs, the test's namespace, the node agent and the manager.
setup() {
    install_crds
    kubectl create namespace "$ns" >/dev/null
    mkdir -p "$agent_state"
    # Only this test's tenant pods, and the pods of nestcp's etcd snapshot and restore Jobs:
    # the namespace and selectors keep this agent away from other tests' pods.
    "$agent_bin" --node-name "$node" --namespace "$ns" --state-dir "$agent_state" \
        --pod-network "$pod_net" --selector app.kubernetes.io/managed-by=nestcp \
        --selector app.kubernetes.io/component=etcd-snapshot \
        --selector app.kubernetes.io/component=etcd-restore \
        --restart-backoff 1 --stop-grace-max 5 "${agent_args[@]}" >"$work/agent.log" 2>&1 &
    agent_pid=$!
    start_manager
    until_true 30 node_ready || fail "the node agent's Node $node is not Ready"
    log "namespace $ns, node $node (pods on 127.$pod_net.0.0/16), agent pid $agent_pid," \
        "manager pid $mgr_pid"
}

# start_manager: `nestcp manager` for the test's namespace, its log appended to manager.log.
start_manager() {
    "$NESTCP_BIN" manager --namespace "$ns" --templates "$NESTCP_SOURCE_DIR/templates" \
        --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 \
        >>"$work/manager.log" 2>&1 &
    mgr_pid=$!
}

node_ready() {
    [ "$(kubectl get node "$node" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]
}

# phases NCP_NAME: "<etcd phase> <apiserver phase> <controller-manager phase>" of the
# components a control plane names.
phases() {
    local c=$1 e a m
    e=$(kubectl -n "$ns" get ncp "$c" -o jsonpath='{.spec.etcd.name}')
    a=$(kubectl -n "$ns" get ncp "$c" -o jsonpath='{.spec.apiserver.name}')
    m=$(kubectl -n "$ns" get ncp "$c" -o jsonpath='{.spec.controllerManager.name}')
    echo "$(kubectl -n "$ns" get netcd "$e" -o jsonpath='{.status.phase}' 2>/dev/null || true)" \
        "$(kubectl -n "$ns" get nkas "$a" -o jsonpath='{.status.phase}' 2>/dev/null || true)" \
        "$(kubectl -n "$ns" get nkcm "$m" -o jsonpath='{.status.phase}' 2>/dev/null || true)"
}

ncp_ready() {
    [ "$(kubectl -n "$ns" get ncp "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]
}

# events_of NAME: the reasons of the Events about the object NAME in the namespace, one a line.
events_of() {
    kubectl -n "$ns" get events --field-selector "involvedObject.name=$1" \
        -o jsonpath='{range .items[*]}{.reason}{"\n"}{end}'
}

# has_event NAME REASON: an Event REASON about the object NAME was recorded. An Event follows
# the write it reports, so wait for it with until_true.
has_event() { events_of "$1" | grep -qx "$2"; }

# wait_ready NCP_NAME SECONDS [T0]: waits for the control plane's Ready condition, printing when
# each component became Ready (seconds since T0, default now).
wait_ready() {
    local c=$1 secs=$2 t0=${3:-$(now)} end seen="" p i
    local names=(etcd kube-apiserver kube-controller-manager)
    end=$(awk -v s="$secs" -v n="$(now)" 'BEGIN { printf "%.3f", n + s }')
    while ! ncp_ready "$c"; do
        read -r -a p <<<"$(phases "$c")"
        for i in 0 1 2; do
            if [ "${p[$i]:-}" = Ready ] && [[ " $seen " != *" $i "* ]]; then
                seen="$seen $i"
                log "$c: ${names[$i]} Ready after $(elapsed "$t0") s"
            fi
        done
        awk -v e="$end" -v n="$(now)" 'BEGIN { exit !(n > e) }' &&
            fail "ncp/$c not Ready within $secs s (components: $(phases "$c"))"
        sleep 0.5
    done
    log "$c: control plane Ready after $(elapsed "$t0") s"
    record_pids
}

# ready_pod_ips SERVICE: the IPs of the ready pods a Service selects. (Endpoints stay empty:
# the API server refuses loopback addresses in them.)
ready_pod_ips() {
    local sel
    sel=$(kubectl -n "$ns" get service "$1" \
        -o go-template='{{range $k, $v := .spec.selector}}{{$k}}={{$v}},{{end}}')
    [ -n "$sel" ] || return 1
    kubectl -n "$ns" get pods -l "${sel%,}" -o go-template='{{range .items}}{{$ip := .status.podIP}}
{{- if not .metadata.deletionTimestamp}}{{range .status.conditions}}
{{- if and (eq .type "Ready") (eq .status "True")}}{{$ip}} {{end}}{{end}}{{end}}{{end}}'
}

# apiserver_ips CLUSTER: the IPs of the ready pods behind Service <cluster>-apiserver.
apiserver_ips() { ready_pod_ips "$1-apiserver"; }
apiserver_ready() { [ -n "$(apiserver_ips "$1")" ]; }

# tenant_kubeconfig CLUSTER FILE: the admin kubeconfig of Secret <cluster>-kubeconfig, its
# server moved to a ready API server pod's IP and its TLS server name set to the host the
# Secret names, so the certificate is still verified.
tenant_kubeconfig() {
    local c=$1 f=$2 server host cl ip
    kubectl -n "$ns" get secret "$c-kubeconfig" -o jsonpath='{.data.value}' | base64 -d >"$f" ||
        fail "no Secret $c-kubeconfig"
    chmod 600 "$f"
    server=$(command kubectl config view --kubeconfig "$f" -o jsonpath='{.clusters[0].cluster.server}')
    cl=$(command kubectl config view --kubeconfig "$f" -o jsonpath='{.clusters[0].name}')
    host=${server#https://}
    host=${host%:*}
    # An API server may be briefly not Ready after a roll (its etcd client reconnecting to a
    # member that restarted): wait for one, as a user would.
    until_true 60 apiserver_ready "$c" || fail "Service $c-apiserver has no ready endpoint"
    ip=$(apiserver_ips "$c" | awk '{ print $1 }')
    command kubectl config set-cluster "$cl" --kubeconfig "$f" --server "https://$ip:${server##*:}" \
        --tls-server-name "$host" >/dev/null
}

# kubeconfig_pems KUBECONFIG DIR: its CA, client certificate and key as ca.crt, client.crt and
# client.key in DIR.
kubeconfig_pems() {
    local f=$1 dir=$2
    mkdir -p "$dir"
    command kubectl config view --kubeconfig "$f" --raw \
        -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d >"$dir/ca.crt"
    command kubectl config view --kubeconfig "$f" --raw \
        -o jsonpath='{.users[0].user.client-certificate-data}' | base64 -d >"$dir/client.crt"
    command kubectl config view --kubeconfig "$f" --raw \
        -o jsonpath='{.users[0].user.client-key-data}' | base64 -d >"$dir/client.key"
    chmod 600 "$dir"/*
}

# tkubectl FILE ARGS...: kubectl against a tenant through a kubeconfig from tenant_kubeconfig.
tkubectl() {
    local f=$1
    shift
    command kubectl --kubeconfig "$f" --request-timeout=10s "$@"
}

# in_pod_names POD CMD...: CMD in a private mount namespace whose /etc/hosts is the node
# agent's hosts file of POD (in this test's namespace): tenant DNS names resolve there.
in_pod_names() {
    local hosts="$agent_state/pods/${ns}_$1/hosts"
    shift
    [ -f "$hosts" ] || fail "no hosts file $hosts"
    unshare -m sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$hosts" "$@"
}

# etcd_client_certs CLUSTER DIR: ca.crt and the healthcheck client pair of the etcd certs Secret.
etcd_client_certs() {
    local c=$1 dir=$2 s k
    s=$(kubectl -n "$ns" get statefulset "$c-etcd" \
        -o jsonpath='{.spec.template.spec.volumes[?(@.name=="certs")].secret.secretName}')
    [ -n "$s" ] || fail "statefulset $c-etcd mounts no certs Secret"
    mkdir -p "$dir"
    for k in ca.crt healthcheck-client.crt healthcheck-client.key; do
        kubectl -n "$ns" get secret "$s" -o jsonpath="{.data.${k//./\\.}}" | base64 -d >"$dir/$k"
    done
    chmod 600 "$dir"/*
}

# pod_pid POD CONTAINER: the pid of the container's process, from the node agent.
pod_pid() { cat "$agent_state/pods/${ns}_$1/$2.pid" 2>/dev/null; }

# pod_cmdline POD CONTAINER: the running process's command line, one argument per line.
pod_cmdline() {
    local pid
    pid=$(pod_pid "$1" "$2") || return 1
    tr '\0' '\n' <"/proc/$pid/cmdline"
}

# runs_restricted POD CONTAINER: the container's process runs as the packages' securityContext
# asks (the node agent applies it): uid and gid 65532 with the fsGroup, no capability in any
# set, no_new_privs, and its root filesystem mounted read-only.
runs_restricted() {
    local pid st root
    pid=$(pod_pid "$1" "$2") || fail "$1/$2 has no process"
    st=$(cat "/proc/$pid/status")
    grep -qP '^Uid:\t65532\t65532\t65532\t65532$' <<<"$st" || fail "$1/$2 does not run as uid 65532: $(grep ^Uid <<<"$st")"
    grep -qP '^Gid:\t65532\t65532\t65532\t65532$' <<<"$st" || fail "$1/$2 does not run as gid 65532: $(grep ^Gid <<<"$st")"
    grep -qP '^Groups:\t65532 ?$' <<<"$st" || fail "$1/$2 is not in its fsGroup alone: $(grep ^Groups <<<"$st")"
    grep -qP '^NoNewPrivs:\t1$' <<<"$st" || fail "$1/$2 may gain privileges (no_new_privs unset)"
    for set in CapInh CapPrm CapEff CapBnd CapAmb; do
        grep -qP "^$set:\t0{16}$" <<<"$st" || fail "$1/$2 keeps capabilities: $(grep "^$set" <<<"$st")"
    done
    root=$(awk '$5 == "/" { print $6 }' "/proc/$pid/mountinfo")
    case ",$root," in *,ro,*) ;; *) fail "$1/$2's root filesystem is mounted '$root', not read-only" ;; esac
}

# finish: stops the manager and the node agent and checks that every process started for this
# test's pods is gone; then PASS.
finish() {
    local p
    record_pids
    for p in "${pids[@]}"; do
        { kill -9 "$p" && wait "$p"; } 2>/dev/null || true
        kill -0 "$p" 2>/dev/null && fail "helper process $p did not stop"
    done
    pids=()
    stop_pid "$mgr_pid" 20 || fail "the manager did not stop on SIGTERM"
    mgr_pid=
    stop_pid "$agent_pid" 60 || fail "the node agent did not stop on SIGTERM"
    agent_pid=
    local left
    left=$(leftover_processes | sort -u | tr '\n' ' ')
    [ -z "$left" ] || fail "processes left behind: $left"
    log "no process left ($(printf '%s\n' "${pids_seen[@]}" | sort -u | grep -c .) container" \
        "processes were seen)"
    echo PASS
}

# tenant_manifest NAME VERSION ETCD_REPLICAS APISERVER_REPLICAS [ETCD_SPEC_YAML
#                 [APISERVER_SPEC_YAML]]: a NestedControlPlane and its three components, as a
# user writes them. The spec YAML is added to the NestedEtcd's or NestedAPIServer's spec
# (indented two spaces, e.g. "  storage: {emptyDir: {}}").
no_endpoint_reconciler="  extraArgs: {endpoint-reconciler-type: none}"
tenant_manifest() {
    local c=$1 version=$2 etcd=$3 kas=$4 extra=${5:-} kas_extra=${6:-}
    # The node agent's pod IPs are loopback addresses, which kube-apiserver 1.37 refuses to
    # advertise to its endpoint reconciler.
    case $version in 1.37.*) [ -n "$kas_extra" ] || kas_extra=$no_endpoint_reconciler ;; esac
    cat <<YAML
apiVersion: controlplane.cluster.x-k8s.io/v1beta1
kind: NestedControlPlane
metadata:
  name: $c
spec:
  version: "$version"
  etcd: {kind: NestedEtcd, name: $c-etcd}
  apiserver: {kind: NestedAPIServer, name: $c-apiserver}
  controllerManager: {kind: NestedControllerManager, name: $c-controller-manager}
---
apiVersion: controlplane.cluster.x-k8s.io/v1beta1
kind: NestedEtcd
metadata:
  name: $c-etcd
spec:
  replicas: $etcd
$extra
---
apiVersion: controlplane.cluster.x-k8s.io/v1beta1
kind: NestedAPIServer
metadata:
  name: $c-apiserver
spec:
  replicas: $kas
$kas_extra
---
apiVersion: controlplane.cluster.x-k8s.io/v1beta1
kind: NestedControllerManager
metadata:
  name: $c-controller-manager
spec:
  replicas: 1
YAML
}

# snapshot_claim NAME: the PersistentVolumeClaim a user makes for etcd snapshots, as a
# document to put before tenant_manifest's.
snapshot_claim() {
    cat <<YAML
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: $1
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
YAML
}

# shared_snapshot_claim CLAIM PV DIR: a PersistentVolumeClaim for etcd snapshots bound to
# PersistentVolume PV, a hostPath volume on DIR kept when the claim goes (Retain). Applied in
# two super clusters with the same DIR, it stands for storage both mount (NFS or similar).
shared_snapshot_claim() {
    cat <<YAML
apiVersion: v1
kind: PersistentVolume
metadata:
  name: $2
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteMany]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: ""
  hostPath: {path: $3, type: Directory}
  claimRef: {namespace: $ns, name: $1}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: $1
  namespace: $ns
spec:
  accessModes: [ReadWriteMany]
  storageClassName: ""
  volumeName: $2
  resources: {requests: {storage: 1Gi}}
YAML
}

# etcdctl_of CLUSTER POD ARGS...: etcdctl with the healthcheck client certificate of the
# cluster's etcd, names resolved as inside POD.
etcdctl_of() {
    local c=$1 pod=$2 certs=$work/$1-etcd-pki
    shift 2
    [ -f "$certs/ca.crt" ] || etcd_client_certs "$c" "$certs"
    in_pod_names "$pod" env ETCDCTL_API=3 etcdctl --cacert "$certs/ca.crt" \
        --cert "$certs/healthcheck-client.crt" --key "$certs/healthcheck-client.key" \
        --dial-timeout 3s --command-timeout 5s "$@"
}

# etcd_endpoints CLUSTER N: the client URLs of members 0..N-1.
etcd_endpoints() {
    local c=$1 n=$2 i out=""
    for ((i = 0; i < n; i++)); do
        out+="${out:+,}https://$c-etcd-$i.$c-etcd.$ns.svc:2379"
    done
    echo "$out"
}

# etcd_ids CLUSTER N: "<cluster id> <lowest revision>" over members 0..N-1 (each asked on its
# own); fails unless every member answers with the same cluster ID.
etcd_ids() {
    local c=$1 n=$2 status
    status=$(etcdctl_of "$c" "$c-etcd-0" --endpoints "$(etcd_endpoints "$c" "$n")" \
        endpoint status -w json) || return 1
    python3 -c '
import json, sys
st = json.loads(sys.argv[1])
ids = {e["Status"]["header"]["cluster_id"] for e in st}
if len(st) != int(sys.argv[2]) or len(ids) != 1:
    sys.exit("members answered %d, cluster ids %s" % (len(st), sorted(ids)))
print(ids.pop(), min(e["Status"]["header"]["revision"] for e in st))' "$status" "$n"
}

# start_writer KUBECONFIG NAME: a background writer that creates ConfigMap NAME-<n> in the
# tenant every 0.2 s until stop_writer NAME; each created n goes to $work/NAME.ok, each failed
# one to $work/NAME.failed.
start_writer() {
    local kc=$1 name=$2
    : >"$work/$name.ok"
    : >"$work/$name.failed"
    rm -f "$work/$name.stop"
    cat >"$work/$name.sh" <<'SH'
kc=$1 name=$2 dir=$3 n=0
while [ ! -e "$dir/$name.stop" ]; do
    n=$((n + 1))
    if kubectl --kubeconfig "$kc" --request-timeout=10s create configmap "$name-$n" \
        --from-literal=n="$n" >/dev/null 2>&1; then
        echo "$n" >>"$dir/$name.ok"
    else
        echo "$n" >>"$dir/$name.failed"
    fi
    sleep 0.2
done
SH
    bash "$work/$name.sh" "$kc" "$name" "$work" &
    pids+=($!)
    eval "writer_pid_${name//-/_}=$!"
}

# stop_writer NAME: stops the writer after its current write.
stop_writer() {
    local name=$1 var
    var=writer_pid_${name//-/_}
    touch "$work/$name.stop"
    wait "${!var}" 2>/dev/null || true
}

# all_written KUBECONFIG NAME: every ConfigMap the writer reported created is in the tenant.
all_written() {
    local kc=$1 name=$2 have missing
    have=$(tkubectl "$kc" get configmaps -o name | sed -n "s|^configmap/$name-||p" | sort) ||
        return 1
    missing=$(comm -23 <(sort "$work/$name.ok") <(echo "$have") | tr '\n' ' ')
    [ -z "$missing" ] || { echo "lost ConfigMaps $name-{$missing}" >&2; return 1; }
}

# writes_at_least NAME N: the writer NAME has created at least N ConfigMaps.
writes_at_least() { [ "$(wc -l <"$work/$1.ok")" -ge "$2" ]; }
