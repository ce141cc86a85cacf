#!/usr/bin/env bash
# Two tenants side by side in one namespace (config/samples/capn-cluster.yaml "sample" and
# config/samples/standalone.yaml "standalone"):
#   - isolation: each one's admin kubeconfig is refused by the other's API server, both
#     directions: the client does not trust the other server (x509: certificate signed by
#     unknown authority), and with the other's CA trusted, the server does not accept the
#     client certificate (401; its log names the same x509 error);
#   - deletion: `kubectl delete -f` of one tenant's manifest stops every process of its pods
#     and removes every object it had (no StatefulSet, Service, Secret or Pod left), while the
#     other keeps running untouched; then the second one goes the same way.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

setup
t0=$(now)
kubectl -n "$ns" apply -f "$NESTCP_SOURCE_DIR/config/samples/capn-cluster.yaml" >/dev/null
kubectl -n "$ns" apply -f "$NESTCP_SOURCE_DIR/config/samples/standalone.yaml" >/dev/null
wait_ready sample-control-plane 300 "$t0"
wait_ready standalone 300 "$t0"

# Pod Security admission enforces the restricted profile in this namespace (the super
# cluster's default): every pod above was admitted under it. Each runs that way too.
[ -z "$(kubectl get namespace "$ns" -o jsonpath='{.metadata.labels.pod-security\.kubernetes\.io/enforce}')" ] ||
    fail "namespace $ns overrides the super cluster's Pod Security default"
for c in sample standalone; do
    runs_restricted "$c-etcd-0" etcd
    runs_restricted "$c-apiserver-0" kube-apiserver
    runs_restricted "$c-controller-manager-0" kube-controller-manager
done
log "every component of both tenants runs as uid 65532, no capabilities, no_new_privs, read-only root"

# The NetworkPolicies' selectors against the running pods (the super cluster enforces none):
# etcd's policy applies to exactly the tenant's etcd pods, its peer rule admits exactly those,
# its client rule exactly the tenant's API server pods; the API server's applies to those.
# selected POLICY JSONPATH: the names of the pods of $ns the selector at JSONPATH selects.
selected() {
    local sel
    sel=$(kubectl -n "$ns" get networkpolicy "$1" -o jsonpath="{$2.matchLabels}" | python3 -c '
import json, sys
print(",".join("%s=%s" % kv for kv in sorted(json.load(sys.stdin).items())))')
    [ -n "$sel" ] || fail "networkpolicy $1 has no selector at $2"
    kubectl -n "$ns" get pods -l "$sel" -o jsonpath='{range .items[*]}{.metadata.name}{" "}{end}'
}
for c in sample standalone; do
    etcd_pods=$(kubectl -n "$ns" get pods -o name | sed -n "s|^pod/\($c-etcd-[0-9]*\)$|\1|p" | tr '\n' ' ')
    api_pods=$(kubectl -n "$ns" get pods -o name | sed -n "s|^pod/\($c-apiserver-[0-9]*\)$|\1|p" | tr '\n' ' ')
    [ -n "$etcd_pods" ] && [ -n "$api_pods" ] || fail "no etcd or API server pods of $c"
    [ "$(selected "$c-etcd" .spec.podSelector)" = "$etcd_pods" ] ||
        fail "networkpolicy $c-etcd does not apply to exactly $etcd_pods"
    [ "$(selected "$c-etcd" '.spec.ingress[0].from[0].podSelector')" = "$etcd_pods" ] ||
        fail "networkpolicy $c-etcd's peer rule does not admit exactly $etcd_pods"
    [ "$(kubectl -n "$ns" get networkpolicy "$c-etcd" -o jsonpath='{.spec.ingress[0].ports[*].port}')" = "2379 2380" ] ||
        fail "networkpolicy $c-etcd's first rule is not for ports 2379 and 2380"
    [ "$(selected "$c-etcd" '.spec.ingress[1].from[0].podSelector')" = "$api_pods" ] ||
        fail "networkpolicy $c-etcd's client rule does not admit exactly $api_pods"
    [ "$(kubectl -n "$ns" get networkpolicy "$c-etcd" -o jsonpath='{.spec.ingress[1].ports[*].port}')" = 2379 ] ||
        fail "networkpolicy $c-etcd's second rule is not for port 2379 only"
    [ "$(selected "$c-apiserver" .spec.podSelector)" = "$api_pods" ] ||
        fail "networkpolicy $c-apiserver does not apply to exactly $api_pods"
done
log "NetworkPolicies: each tenant's etcd admits its own members and API servers, by the running pods' labels"

for c in sample standalone; do
    tenant_kubeconfig "$c" "$work/$c.kubeconfig"
    kubeconfig_pems "$work/$c.kubeconfig" "$work/$c"
    tkubectl "$work/$c.kubeconfig" get namespaces -o name >/dev/null ||
        fail "$c's own kubeconfig does not work"
done
fp() { openssl x509 -noout -fingerprint -sha256 -in "$1" | cut -d= -f2; }
log "CA of sample: $(fp "$work/sample/ca.crt")"
log "CA of standalone: $(fp "$work/standalone/ca.crt")"
[ "$(fp "$work/sample/ca.crt")" != "$(fp "$work/standalone/ca.crt")" ] || fail "the tenants share a CA"

# refused FROM TO: FROM's admin kubeconfig against TO's API server.
refused() {
    local from=$1 to=$2 ip host out code
    ip=$(apiserver_ips "$to" | awk '{ print $1 }')
    host=$(command kubectl config view --kubeconfig "$work/$to.kubeconfig" \
        -o jsonpath='{.clusters[0].cluster.tls-server-name}')
    # The client does not trust the other tenant's server.
    if out=$(tkubectl "$work/$from.kubeconfig" --server "https://$ip:6443" --tls-server-name "$host" \
        get namespaces 2>&1); then
        fail "$from's kubeconfig was accepted by $to's API server"
    fi
    grep -q "x509: certificate signed by unknown authority" <<<"$out" ||
        fail "$from -> $to: unexpected error: $out"
    # Trusting the other server, the client certificate is refused by it.
    code=$(curl -sS -o "$work/body" -w '%{http_code}' --max-time 10 --cacert "$work/$to/ca.crt" \
        --cert "$work/$from/client.crt" --key "$work/$from/client.key" \
        --resolve "$host:6443:$ip" "https://$host:6443/api/v1/namespaces")
    [ "$code" = 401 ] || fail "$from's client certificate got HTTP $code from $to: $(cat "$work/body")"
    until_true 10 grep -q "Unable to authenticate the request.*x509: certificate signed by unknown authority" \
        "$agent_state/pods/${ns}_$to-apiserver-0/kube-apiserver.log" ||
        fail "$to's API server did not log the x509 error"
    log "$from -> $to: refused both ways (client: x509: certificate signed by unknown authority;" \
        "server: HTTP 401, x509: certificate signed by unknown authority)"
}
refused sample standalone
refused standalone sample

# objects_of CLUSTER: what exists of a tenant in the namespace: workloads, Services, Secrets,
# Pods and the nestcp objects, by name or by the cluster-name label.
objects_of() {
    kubectl -n "$ns" get statefulsets,services,secrets,pods,ncp,netcd,nkas,nkcm,nc,clusters.cluster.x-k8s.io \
        -o go-template='{{range .items}}{{.kind}}/{{.metadata.name}} {{with .metadata.labels}}{{index . "cluster.x-k8s.io/cluster-name"}}{{end}}{{"\n"}}{{end}}' |
        awk -v c="$1" 'index($1, "/" c "-") || $1 ~ "/" c "$" || $2 == c { print $1 }'
}

# pids_of CLUSTER: the pids of the tenant's running containers.
pids_of() {
    local f
    for f in "$agent_state/pods/${ns}_$1"-*/*.pid; do
        [ -f "$f" ] && cat "$f"
    done
    return 0
}

no_objects() { [ -z "$(objects_of "$1")" ]; }

# delete_tenant CLUSTER MANIFEST OTHER: deletes a tenant; checks everything of it is gone and
# that OTHER (if any) still serves with the same processes.
delete_tenant() {
    local c=$1 manifest=$2 other=$3 before other_pids p t
    before=$(objects_of "$c" | sort)
    record_pids
    local victims
    victims=$(pids_of "$c")
    other_pids=""
    [ -n "$other" ] && other_pids=$(pids_of "$other")
    log "$c: $(wc -l <<<"$before") objects, processes $(echo "$victims" | tr '\n' ' ')"
    t=$(now)
    kubectl -n "$ns" delete -f "$manifest" --ignore-not-found --wait=true --timeout=120s >/dev/null ||
        fail "kubectl delete -f $manifest"
    until_true 120 no_objects "$c" || fail "$c: objects left: $(objects_of "$c" | tr '\n' ' ')"
    for p in $victims; do
        until_true 60 eval "! kill -0 $p 2>/dev/null" || fail "$c: process $p still runs"
    done
    log "$c deleted in $(elapsed "$t") s: no StatefulSet, Service, Secret, Pod or nestcp object" \
        "left; its $(wc -w <<<"$victims") processes are gone"
    if [ -n "$other" ]; then
        for p in $other_pids; do
            kill -0 "$p" 2>/dev/null || fail "$other's process $p was stopped"
        done
        [ "$(pids_of "$other" | sort)" = "$(sort <<<"$other_pids")" ] ||
            fail "$other's processes changed"
        tkubectl "$work/$other.kubeconfig" get namespaces -o name >/dev/null ||
            fail "$other does not answer after $c was deleted"
        ncp_ready "$([ "$other" = sample ] && echo sample-control-plane || echo "$other")" ||
            fail "$other is not Ready after $c was deleted"
        log "$other is untouched: the same $(wc -w <<<"$other_pids") processes, Ready, answering"
    fi
}
delete_tenant sample "$NESTCP_SOURCE_DIR/config/samples/capn-cluster.yaml" standalone
delete_tenant standalone "$NESTCP_SOURCE_DIR/config/samples/standalone.yaml" ""
left=$(kubectl -n "$ns" get statefulsets,services,pods -o name)
[ -z "$left" ] || fail "left in the namespace: $left"

finish
