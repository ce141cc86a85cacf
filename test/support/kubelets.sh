# shellcheck shell=bash
# Sourced by the controllers' and deploy integration tests: what runs a namespace's pods on a
# super cluster without nodes. Needs KUBECONFIG, NESTCP_FAKE_KUBELET and NESTCP_BUILD_DIR (or
# NESTCP_NODEAGENT).
#
# etcd members run for real: the manager talks to them to add, promote and remove members, and
# lifts each pod's scheduling gate only once it knows how the member joins. nestcp-nodeagent
# (test/nodeagent) binds the namespace's etcd pods to a Node of its own and runs etcd as a host
# process on a loopback pod IP, from the claims the super cluster binds. Every other pod is only
# marked Running and Ready by nestcp-fake-kubelet (test/nodeagent/fakekubelet.c), which runs
# nothing.

. "$NESTCP_SOURCE_DIR/test/support/podnet.sh"

kubelets_pids=()
kubelets_agents=()
kubelets_nodes=()

# kubelets_start NS LOGDIR: both, in the background, for namespace NS; logs
# LOGDIR/kubelet-NS.log and LOGDIR/agent-NS.log, the agent's pods under LOGDIR/agent-NS.
kubelets_start() {
    local ns=$1 dir=$2 agent=${NESTCP_NODEAGENT:-${NESTCP_BUILD_DIR:-}/test/nodeagent/nestcp-nodeagent}
    local node=${ns:0:50}-$$
    [ -x "${NESTCP_FAKE_KUBELET:-}" ] || {
        echo "FAIL: NESTCP_FAKE_KUBELET (${NESTCP_FAKE_KUBELET:-unset}) is not an executable" >&2
        return 1
    }
    [ -x "$agent" ] || { echo "FAIL: no node agent at $agent" >&2; return 1; }
    "$NESTCP_FAKE_KUBELET" --kubeconfig "$KUBECONFIG" --namespace "$ns" \
        --selector 'app.kubernetes.io/component!=etcd' >>"$dir/kubelet-$ns.log" 2>&1 &
    kubelets_pids+=($!)
    kubelet_pid=$!
    podnet_claim || { echo "FAIL: no free pod network" >&2; return 1; }
    "$agent" --kubeconfig "$KUBECONFIG" --node-name "$node" --namespace "$ns" \
        --selector app.kubernetes.io/component=etcd --state-dir "$dir/agent-$ns" \
        --pod-network "$podnet" --restart-backoff 1 --stop-grace-max 5 \
        >>"$dir/agent-$ns.log" 2>&1 &
    kubelets_agents+=($!)
    kubelets_nodes+=("$node")
}

# kubelets_stop: stops them all; the node agents stop their etcd processes first (SIGTERM,
# SIGKILL after 5 s), then their Nodes go.
kubelets_stop() {
    local p n
    for p in "${kubelets_pids[@]}"; do
        kill -9 "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    for p in "${kubelets_agents[@]}"; do
        kill -TERM "$p" 2>/dev/null || true
    done
    for p in "${kubelets_agents[@]}"; do
        for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
        kill -9 "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    for n in "${kubelets_nodes[@]}"; do
        command kubectl delete node "$n" --wait=false >/dev/null 2>&1 || true
        command kubectl -n kube-node-lease delete lease "$n" --wait=false >/dev/null 2>&1 || true
    done
    kubelets_pids=() kubelets_agents=() kubelets_nodes=()
    podnet_release
}
