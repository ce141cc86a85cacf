# Shared by the controllers' integration tests (sourced, not run): the manager as its own
# process, a stand-in kubelet, polling, and comparisons with `nestcp render`.
#
# The super cluster has no nodes of its own: its kube-controller-manager creates the Pods of
# each StatefulSet. fake_kubelet runs the etcd members for real, through a node agent, and
# marks the other Pods Running and Ready through their status subresource (this works for
# unscheduled Pods, and the real StatefulSet controller then counts them ready); an
# unscheduled Pod is deleted at once, so rolling updates go through without a kubelet.

: "${KUBECONFIG:?KUBECONFIG must point at the super cluster}"
: "${NESTCP_BIN:?}"
: "${NESTCP_SOURCE_DIR:?}"
. "$NESTCP_SOURCE_DIR/test/support/crds.sh"
. "$NESTCP_SOURCE_DIR/test/support/kubelets.sh"

work=$(mktemp -d)
pids=()
kubectl() { command kubectl --request-timeout=30s "$@"; }

cleanup() {
    local p
    for p in "${pids[@]}"; do
        kill -9 "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    kubelets_stop
    for n in ${namespaces:-}; do
        # With the manager gone nothing would remove the control planes' finalizers.
        for o in $(kubectl -n "$n" get ncp -o name 2>/dev/null); do
            kubectl -n "$n" patch "$o" --type merge -p '{"metadata":{"finalizers":null}}' \
                >/dev/null 2>&1 || true
        done
        kubectl delete namespace "$n" --wait=false >/dev/null 2>&1 || true
    done
    if [ -n "${NESTED_TEST_KEEP:-}" ]; then
        echo "kept $work" >&2
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*" >&2
    for f in "$work"/*.log; do
        [ -e "$f" ] || continue
        echo "--- $(basename "$f") (last lines)" >&2
        grep -v ' debug ' "$f" | tail -n 25 >&2
    done
    exit 1
}

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# until_true SECONDS CMD...: polls CMD every POLL_S seconds (0.5 unless set) until it
# succeeds; 1 on timeout.
until_true() {
    local end
    end=$(awk -v s="$1" -v n="$(now)" 'BEGIN { printf "%.3f", n + s }')
    shift
    while ! "$@"; do
        awk -v e="$end" -v n="$(now)" 'BEGIN { exit !(n > e) }' && return 1
        sleep "${POLL_S:-0.5}"
    done
}

install_crds() {
    crds_install || fail "the CRDs are not established"
    # kubectl discovers new resources lazily; wait until it knows every kind.
    until_true 30 kubectl get ncp,netcd,nkas,nkcm,nc,clusters.cluster.x-k8s.io -A >/dev/null 2>&1 ||
        fail "kubectl does not discover the CRDs"
}

new_namespace() {
    kubectl create namespace "$1" >/dev/null
    namespaces="${namespaces:-} $1"
}

# start_manager NAME NS [ARGS...]: runs `nestcp manager` for namespace NS in the background;
# its log is $work/NAME.log, its pid $mgr_pid, its metrics port $mgr_metrics.
start_manager() {
    local name=$1 ns=$2 p
    shift 2
    "$NESTCP_BIN" manager --kubeconfig "$KUBECONFIG" --namespace "$ns" \
        --templates "$NESTCP_SOURCE_DIR/templates" --metrics-bind-address 127.0.0.1:0 --metrics-secure=false \
        --health-probe-bind-address 127.0.0.1:0 --log-level "${MANAGER_LOG_LEVEL:-info}" "$@" \
        >>"$work/$name.log" 2>&1 &
    mgr_pid=$!
    pids+=("$mgr_pid")
    mgr_metrics=
    for _ in $(seq 1 100); do
        p=$(grep -o 'metrics_port=[0-9]*' "$work/$name.log" 2>/dev/null | tail -n 1 | cut -d= -f2 ||
            true)
        [ -n "$p" ] && { mgr_metrics=$p; return 0; }
        kill -0 "$mgr_pid" 2>/dev/null || fail "the manager $name exited"
        sleep 0.1
    done
    fail "the manager $name did not log its metrics port"
}

# metric_sum NAME: the sum of every sample of a metric family of the running manager.
metric_sum() {
    curl -s --max-time 5 "http://127.0.0.1:$mgr_metrics/metrics" |
        awk -v k="$1" '$1 == k || index($1, k "{") == 1 { s += $2 } END { printf "%d", s }'
}

# fake_kubelet NS: the pods of NS run, in the background (test/support/kubelets.sh: etcd for
# real through a node agent, the rest marked Ready); logs $work/kubelet-NS.log and
# $work/agent-NS.log, the stand-in kubelet's pid $kubelet_pid.
fake_kubelet() {
    kubelets_start "$1" "$work" || fail "cannot start the kubelets"
}

# cond NS KIND/NAME TYPE: the status, reason and message of a condition, tab-separated.
cond() {
    kubectl -n "$1" get "$2" -o json | python3 -c '
import json, sys
o = json.load(sys.stdin)
for c in o.get("status", {}).get("conditions", []):
    if c.get("type") == sys.argv[1]:
        print(c.get("status", ""), c.get("reason", ""), c.get("message", ""), sep="\t")
' "$3"
}

is_ready() { [ "$(cond "$1" "$2" Ready | cut -f1)" = True ]; }

# wait_ready NS NCP SECONDS: waits for the control plane's Ready condition.
wait_ready() {
    kubectl -n "$1" wait --for=condition=Ready "ncp/$2" --timeout="${3}s" >/dev/null 2>&1 ||
        fail "ncp/$2 not Ready within $3 s: $(cond "$1" "ncp/$2" Ready)"
}

# versions NS: name=resourceVersion of every object the controllers own or read in NS, one
# per line, sorted (Pods excluded: the stand-in kubelet writes them).
versions() {
    kubectl -n "$1" get ncp,netcd,nkas,nkcm,nc,clusters.cluster.x-k8s.io,secrets,services,statefulsets \
        -o jsonpath='{range .items[*]}{.kind}/{.metadata.name}={.metadata.resourceVersion}{"\n"}{end}' |
        grep -v '^Secret/default-token' | sort
}

# render_matches NS: what `nestcp render` prints for the cluster objects and Secrets read back
# from NS equals what runs: no Secret to create or replace, and every object packages render
# (Services, StatefulSets, ConfigMaps, NetworkPolicies) with the same config hash as the live
# one, and nothing of those kinds nestcp manages that is not rendered. Prints the number of
# objects compared.
render_matches() {
    local ns=$1 out
    kubectl -n "$ns" get clusters.cluster.x-k8s.io,nc,ncp,netcd,nkas,nkcm,secrets -o yaml \
        >"$work/render-in.yaml"
    "$NESTCP_BIN" render --templates "$NESTCP_SOURCE_DIR/templates" -n "$ns" -o json \
        -f "$work/render-in.yaml" >"$work/render-out.json" 2>"$work/render.err" ||
        { cat "$work/render.err" >&2; return 1; }
    kubectl -n "$ns" get services,statefulsets,configmaps,networkpolicies \
        -l app.kubernetes.io/managed-by=nestcp -o json >"$work/live.json"
    python3 - "$work/render-out.json" "$work/live.json" <<'EOF'
import json, sys
rendered = json.load(open(sys.argv[1]))["items"]
live = {(o["kind"], o["metadata"]["name"]): o for o in json.load(open(sys.argv[2]))["items"]}
key = "nestcp.x-k8s.io/config-hash"
bad = []
for o in rendered:
    k = (o["kind"], o["metadata"]["name"])
    if o["kind"] == "Secret":
        bad.append("render would create %s %s" % k)
        continue
    l = live.get(k)
    if l is None:
        bad.append("%s %s is not running" % k)
        continue
    want = o["metadata"]["annotations"][key]
    have = l["metadata"].get("annotations", {}).get(key)
    if want != have:
        bad.append("%s %s: config hash %s, rendered %s" % (k[0], k[1], have, want))
    if o.get("spec", {}).get("template") and (o["spec"]["template"]["spec"]["containers"][0]["args"] !=
                                      l["spec"]["template"]["spec"]["containers"][0]["args"]):
        bad.append("%s %s: container args differ" % k)
extra = set(live) - {(o["kind"], o["metadata"]["name"]) for o in rendered}
bad += ["%s %s runs but is not rendered" % k for k in sorted(extra)]
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
print(len(rendered))
EOF
}

# cluster NAME [NCP-SPEC-EXTRA] [APISERVER-SPEC-EXTRA] [VERSION] [ETCD-SPEC-EXTRA]: a standalone
# control plane, as YAML. The extras are added to the objects' specs.
cluster() {
    local name=$1 ncp_extra=${2:-} kas_extra=${3:-} version=${4:-1.36.3} etcd_extra=${5:-}
    cat <<EOF
apiVersion: controlplane.cluster.x-k8s.io/v1beta1
kind: NestedControlPlane
metadata: {name: $name, labels: {cluster.x-k8s.io/cluster-name: $name}}
spec:
  version: "$version"
  etcd: {kind: NestedEtcd, name: $name-etcd}
  apiserver: {kind: NestedAPIServer, name: $name-apiserver}
  controllerManager: {kind: NestedControllerManager, name: $name-cm}
  $ncp_extra
---
apiVersion: controlplane.cluster.x-k8s.io/v1beta1
kind: NestedEtcd
metadata: {name: $name-etcd, labels: {cluster.x-k8s.io/cluster-name: $name}}
spec:
  replicas: 1
  $etcd_extra
---
apiVersion: controlplane.cluster.x-k8s.io/v1beta1
kind: NestedAPIServer
metadata: {name: $name-apiserver, labels: {cluster.x-k8s.io/cluster-name: $name}}
spec:
  replicas: 1
  $kas_extra
---
apiVersion: controlplane.cluster.x-k8s.io/v1beta1
kind: NestedControllerManager
metadata: {name: $name-cm, labels: {cluster.x-k8s.io/cluster-name: $name}}
spec: {replicas: 1}
EOF
}
