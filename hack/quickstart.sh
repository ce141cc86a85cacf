#!/usr/bin/env bash
# Runs a tenant Kubernetes control plane on this machine, from a fresh Debian bookworm:
# installs what is missing, builds nestcp, builds Kubernetes 1.37.2 (the super cluster), 1.36.3
# (the tenant) and etcd 3.6.17 once from the Go module proxy (cached), starts a local super
# cluster, the node agent (tenant pods become local processes) and `nestcp manager`, applies
# config/samples/capn-cluster.yaml (a 1.36 tenant), and prints how to use the tenant.
#
#   hack/quickstart.sh            start (or, when already up, say so and refresh the kubeconfig)
#   hack/quickstart.sh --status   what runs
#   hack/quickstart.sh --down     stop everything it started and remove its state
#
# Environment: NESTCP_QUICKSTART_DIR (state, default ${XDG_STATE_HOME:-~/.local/state}/nestcp/
# quickstart), NESTCP_QUICKSTART_BUILD_DIR (default build/), NESTCP_QUICKSTART_SAMPLE (default
# config/samples/capn-cluster.yaml), NESTCP_QUICKSTART_POD_NETWORK (pods get 127.N.x.y; default 0).
set -Eeuo pipefail
trap 'echo "quickstart: failed at line $LINENO: $BASH_COMMAND" >&2' ERR

root=$(cd "$(dirname "$0")/.." && pwd)
state=${NESTCP_QUICKSTART_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/nestcp/quickstart}
build=${NESTCP_QUICKSTART_BUILD_DIR:-$root/build}
sample=${NESTCP_QUICKSTART_SAMPLE:-$root/config/samples/capn-cluster.yaml}
pod_net=${NESTCP_QUICKSTART_POD_NETWORK:-0}
# The super cluster's release, and the tenant's: the sample's version (the stable channel).
super_version=1.37.2
tenant_version=1.36.3
etcd_version=3.6.17
cache=${NESTCP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nestcp}
# kubectl of the super cluster's release, as hack/kube-build.sh builds it (no other is needed).
PATH="$cache/kubernetes-$super_version/bin:$PATH"
ns=default
# Run through sudo, the tenant kubeconfig is also given to the user who ran sudo.
user_kubeconfig=
if [ -n "${SUDO_UID:-}" ] && [ "${SUDO_UID}" != 0 ]; then
    user_kubeconfig=$(getent passwd "$SUDO_UID" | cut -d: -f6)/.kube/nestcp-quickstart.kubeconfig
fi
t_start=$(date +%s.%N)

die() {
    echo "quickstart: $*" >&2
    [ -d "$state" ] && echo "quickstart: what was started keeps running; hack/quickstart.sh --down stops it" >&2
    exit 1
}
usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%5.1f s", b - a }'; }
step_n=0
step() {
    step_n=$((step_n + 1))
    t_step=$(now)
    printf '[%d/7] %s\n' "$step_n" "$*"
}
done_step() { printf '      %s (%s)\n' "${1:-done}" "$(since "$t_step")"; }

# Only the processes this script started, by their pid files.
pid_alive() { [ -f "$state/$1.pid" ] && kill -0 "$(cat "$state/$1.pid")" 2>/dev/null; }

stop_pidfile() {
    local name=$1 secs=$2 pid
    [ -f "$state/$name.pid" ] || return 0
    pid=$(cat "$state/$name.pid")
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 $((secs * 5))); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.2
        done
        kill -KILL "$pid" 2>/dev/null || true
        while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
    fi
    rm -f "$state/$name.pid"
}

super() { KUBECONFIG="$state/kube/kubeconfig" command kubectl --request-timeout=20s "$@"; }

cmd_down() {
    if [ ! -d "$state" ]; then
        echo "quickstart: nothing to stop ($state does not exist)"
        return 0
    fi
    echo "quickstart: stopping the manager, the node agent (and with it every tenant process)" \
        "and the super cluster"
    stop_pidfile manager 20
    stop_pidfile nodeagent 60
    if [ -f "$state/kube/bin-dir" ]; then
        "$root/hack/kube-env.sh" down --dir "$state/kube" >/dev/null 2>&1 || true
    fi
    rm -rf "$state"
    [ -n "$user_kubeconfig" ] && rm -f "$user_kubeconfig"
    echo "quickstart: stopped; removed $state"
}

# cluster_name: the tenant's name in object names (<c>-kubeconfig, <c>-apiserver): the Cluster's
# name when the sample has a Cluster, else the control plane's cluster-name label, else its name.
cluster_name() {
    local c
    c=$(super -n "$ns" get ncp "$ncp" -o jsonpath='{.metadata.ownerReferences[?(@.kind=="Cluster")].name}')
    [ -n "$c" ] || c=$(super -n "$ns" get clusters.cluster.x-k8s.io \
        -o jsonpath="{.items[?(@.spec.controlPlaneRef.name==\"$ncp\")].metadata.name}" 2>/dev/null || true)
    [ -n "$c" ] || c=$(super -n "$ns" get ncp "$ncp" -o jsonpath='{.metadata.labels.cluster\.x-k8s\.io/cluster-name}')
    echo "${c:-$ncp}"
}

# apiserver_ip CLUSTER: a ready API server pod's IP (the Service's ClusterIP is not routable
# here; pod IPs are loopback addresses).
apiserver_ip() {
    super -n "$ns" get pods -l "cluster.x-k8s.io/cluster-name=$1,app.kubernetes.io/component=apiserver" \
        -o go-template='{{range .items}}{{$ip := .status.podIP}}{{range .status.conditions}}
{{- if and (eq .type "Ready") (eq .status "True")}}{{$ip}} {{end}}{{end}}{{end}}' | awk '{ print $1 }'
}

# write_kubeconfig CLUSTER: $state/tenant.kubeconfig, the admin kubeconfig of Secret
# <c>-kubeconfig with its server moved to a ready API server pod's IP; TLS is verified
# against the name the Secret gives (a SAN of the certificate) through tls-server-name.
write_kubeconfig() {
    local c=$1 f=$state/tenant.kubeconfig server host cl ip
    ip=$(apiserver_ip "$c")
    [ -n "$ip" ] || return 1
    (
        umask 077
        super -n "$ns" get secret "$c-kubeconfig" -o jsonpath='{.data.value}' | base64 -d >"$f.tmp"
    )
    server=$(command kubectl config view --kubeconfig "$f.tmp" -o jsonpath='{.clusters[0].cluster.server}')
    cl=$(command kubectl config view --kubeconfig "$f.tmp" -o jsonpath='{.clusters[0].name}')
    host=${server#https://}
    host=${host%:*}
    command kubectl config set-cluster "$cl" --kubeconfig "$f.tmp" \
        --server "https://$ip:${server##*:}" --tls-server-name "$host" >/dev/null
    mv "$f.tmp" "$f"
    if [ -n "$user_kubeconfig" ]; then
        local dir gid=${SUDO_GID:-$SUDO_UID}
        dir=$(dirname "$user_kubeconfig")
        [ -d "$dir" ] || install -d -m 700 -o "$SUDO_UID" -g "$gid" "$dir"
        install -m 600 -o "$SUDO_UID" -g "$gid" "$f" "$user_kubeconfig"
    fi
}

tenant() { command kubectl --kubeconfig "$state/tenant.kubeconfig" --request-timeout=10s "$@"; }

print_use() {
    echo
    echo "Tenant namespaces:"
    tenant get namespaces | sed 's/^/  /'
    echo
    echo "The tenant runs Kubernetes $(tenant version -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])')" \
        "on a $super_version super cluster."
    echo "Use it (TLS verified; the server is the API server pod's loopback address), with the"
    echo "kubectl built here ($cache/kubernetes-$super_version/bin/kubectl):"
    echo
    echo "  export KUBECONFIG=${user_kubeconfig:-$state/tenant.kubeconfig}"
    echo
    echo "The super cluster: KUBECONFIG=$state/kube/kubeconfig kubectl get pods -A"
    echo "Logs: $state/logs/ (manager, node agent), $state/agent/pods/<ns>_<pod>/<container>.log"
    echo "Stop everything: hack/quickstart.sh --down"
}

cmd_status() {
    [ -d "$state" ] || { echo "quickstart: not running ($state does not exist)"; return 1; }
    local c
    for c in manager nodeagent; do
        if pid_alive "$c"; then echo "$c: running (pid $(cat "$state/$c.pid"))"; else echo "$c: stopped"; fi
    done
    "$root/hack/kube-env.sh" status --dir "$state/kube" | sed 's/^/super cluster /'
    super get ncp -A 2>/dev/null || true
}

up_already() {
    pid_alive manager && pid_alive nodeagent &&
        "$root/hack/kube-env.sh" status --dir "$state/kube" >/dev/null 2>&1
}

cmd_up() {
    if [ -d "$state" ] && up_already; then
        echo "quickstart: already up (state in $state)."
        ncp=$(cat "$state/ncp")
        write_kubeconfig "$(cluster_name)" || die "no ready API server pod; see hack/quickstart.sh --status"
        echo "quickstart: kubeconfig refreshed."
        print_use
        return 0
    fi
    if [ -d "$state" ]; then
        echo "quickstart: $state holds a quickstart that is not fully running; cleaning it up first"
        cmd_down >/dev/null
    fi
    [ "$(id -u)" -eq 0 ] ||
        die "the node agent runs tenant pods in private mount namespaces and needs root; run: sudo $0"

    echo "nestcp quickstart: state and logs in $state"
    mkdir -p "$state/logs"
    local r releases=("kubernetes $super_version" "kubernetes $tenant_version" "etcd $etcd_version")
    local missing=0
    for r in "$cache/kubernetes-$super_version/bin/kube-apiserver" \
        "$cache/kubernetes-$tenant_version/bin/kube-apiserver" "$cache/etcd-$etcd_version/bin/etcd"; do
        [ -x "$r" ] || missing=1
    done
    if [ "$missing" = 1 ]; then
        echo "Kubernetes $super_version and $tenant_version and etcd $etcd_version are not all cached yet:"
        echo "this first run builds them once with Go from the Go module proxy (about 8 minutes per"
        echo "Kubernetes release on 2 cores, about 8 GB of disk with Go's caches) and caches them"
        echo "in $cache; later runs take about a minute."
    fi

    step "dependencies (hack/install-deps.sh)"
    "$root/hack/install-deps.sh"
    done_step

    step "build nestcp and the node agent ($build)"
    if [ ! -f "$build/CMakeCache.txt" ]; then
        cmake -S "$root" -B "$build" >"$state/logs/cmake.log" 2>&1 ||
            { tail -n 30 "$state/logs/cmake.log" >&2; die "cmake failed (log: $state/logs/cmake.log)"; }
    fi
    cmake --build "$build" --target nestcp nestcp-nodeagent -j"$(nproc)" >>"$state/logs/cmake.log" 2>&1 ||
        { tail -n 30 "$state/logs/cmake.log" >&2; die "the build failed (log: $state/logs/cmake.log)"; }
    done_step "$build/nestcp"

    step "Kubernetes $super_version, $tenant_version and etcd $etcd_version binaries (hack/kube-build.sh)"
    [ "$missing" = 1 ] && echo "      building (log: $state/logs/kube-build.log)"
    for r in "${releases[@]}"; do
        # shellcheck disable=SC2086
        "$root/hack/kube-build.sh" $r >/dev/null 2>>"$state/logs/kube-build.log" ||
            { tail -n 30 "$state/logs/kube-build.log" >&2; die "building $r failed"; }
    done
    done_step "$cache"

    step "super cluster: etcd, kube-apiserver, kube-controller-manager (hack/kube-env.sh)"
    KUBE_VERSION=$super_version ETCD_VERSION=$etcd_version \
        "$root/hack/kube-env.sh" up --dir "$state/kube" >"$state/kube.env" 2>"$state/logs/kube-env.log" ||
        { cat "$state/logs/kube-env.log" >&2; die "the super cluster did not start"; }
    done_step "$(grep -o 'kube-apiserver [0-9.]* https://[^ ,]*' "$state/logs/kube-env.log")"

    step "CRDs, node agent and nestcp manager"
    # nestcp's CRDs and Cluster API's own Cluster CRD (the sample's Cluster is v1beta2), taken
    # from the Cluster API module (hack/capi-crd.sh; Cluster API itself does not run here).
    "$root/hack/capi-crd.sh" >"$state/capi-cluster-crd.yaml" 2>>"$state/logs/kube-build.log" ||
        { tail -n 30 "$state/logs/kube-build.log" >&2; die "Cluster API's Cluster CRD is not available (hack/capi-crd.sh)"; }
    super apply -f "$root/config/crd/bases" -f "$state/capi-cluster-crd.yaml" >/dev/null
    # Right after creation a CRD has no conditions yet, and `kubectl wait` fails on that.
    for _ in $(seq 1 120); do
        super wait --for condition=established --timeout=30s crd --all >/dev/null 2>&1 && break
        sleep 0.5
    done
    setsid "$build/test/nodeagent/nestcp-nodeagent" --kubeconfig "$state/kube/kubeconfig" \
        --bin-root "$cache" --state-dir "$state/agent" --pod-network "$pod_net" \
        --stop-grace-max 10 >"$state/logs/nodeagent.log" 2>&1 </dev/null &
    echo $! >"$state/nodeagent.pid"
    setsid "$build/nestcp" manager --kubeconfig "$state/kube/kubeconfig" \
        --templates "$root/templates" --metrics-bind-address 127.0.0.1:0 --metrics-secure=false \
        --health-probe-bind-address 127.0.0.1:0 >"$state/logs/manager.log" 2>&1 </dev/null &
    echo $! >"$state/manager.pid"
    for _ in $(seq 1 100); do
        [ "$(super get nodes -o jsonpath='{.items[*].status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ] && break
        pid_alive nodeagent || die "the node agent exited (log: $state/logs/nodeagent.log)"
        sleep 0.2
    done
    # kubectl discovers new resources lazily.
    for _ in $(seq 1 60); do
        super get ncp -A >/dev/null 2>&1 && break
        sleep 0.5
    done
    done_step "node agent pid $(cat "$state/nodeagent.pid"), manager pid $(cat "$state/manager.pid")"

    step "tenant control plane from ${sample#"$root"/}"
    t_apply=$(now)
    ncp=$(super -n "$ns" apply -f "$sample" -o name | sed -n 's|^nestedcontrolplane[^/]*/||p' | head -n 1)
    [ -n "$ncp" ] || die "$sample has no NestedControlPlane"
    echo "$ncp" >"$state/ncp"
    local seen="" p i names=(etcd kube-apiserver kube-controller-manager)
    while true; do
        # p: the three component names, then the control plane's Ready status (empty until set).
        read -r -a p <<<"$(super -n "$ns" get ncp "$ncp" -o jsonpath='{.spec.etcd.name} {.spec.apiserver.name} {.spec.controllerManager.name} {.status.conditions[?(@.type=="Ready")].status}')"
        local phases=(
            "$(super -n "$ns" get netcd "${p[0]}" -o jsonpath='{.status.phase}' 2>/dev/null || true)"
            "$(super -n "$ns" get nkas "${p[1]}" -o jsonpath='{.status.phase}' 2>/dev/null || true)"
            "$(super -n "$ns" get nkcm "${p[2]}" -o jsonpath='{.status.phase}' 2>/dev/null || true)")
        for i in 0 1 2; do
            if [ "${phases[$i]}" = Ready ] && [[ " $seen " != *" $i "* ]]; then
                seen="$seen $i"
                printf '      %-30s %s\n' "${names[$i]} ready" "$(since "$t_apply")"
            fi
        done
        # Ready comes from the StatefulSets and each phase from its component's own reconciler,
        # so either can be seen first: wait for both.
        [ "${p[3]:-}" = True ] && [ "$(wc -w <<<"$seen")" -eq 3 ] && break
        if awk -v a="$t_apply" -v b="$(now)" 'BEGIN { exit !(b - a > 600) }'; then
            super -n "$ns" get ncp "$ncp" -o jsonpath='{range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\n"}{end}' >&2
            die "the control plane is not Ready after 10 minutes (logs in $state/logs, $state/agent/pods)"
        fi
        sleep 0.5
    done
    printf '      %-30s %s\n' "control plane Ready" "$(since "$t_apply")"

    step "waiting for the tenant to answer"
    local c
    c=$(cluster_name)
    for _ in $(seq 1 120); do
        write_kubeconfig "$c" 2>/dev/null && tenant get --raw /readyz >/dev/null 2>&1 && break
        sleep 0.5
    done
    tenant get --raw /readyz >/dev/null || die "the tenant does not answer"
    done_step "$(since "$t_apply") after kubectl apply; $(since "$t_start") in all"

    print_use
}

case "${1:-}" in
"") cmd_up ;;
--down) cmd_down ;;
--status) cmd_status ;;
-h | --help) usage ;;
*) usage >&2; exit 2 ;;
esac
