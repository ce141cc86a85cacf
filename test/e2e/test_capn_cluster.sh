#!/usr/bin/env bash
# CAPN's cluster template shape (config/samples/capn-cluster.yaml), applied with kubectl to a
# manager and a node agent, runs for real:
#   - the control plane becomes Ready, each component after the one before it;
#   - real etcd, kube-apiserver and kube-controller-manager processes run, with the pod IPs;
#   - kubectl with the admin kubeconfig of Secret sample-kubeconfig lists the tenant's
#     namespaces (TLS verified against the certificate's Service name);
#   - the tenant's controller manager works: a new namespace gets its `default` ServiceAccount
#     and token, signed with the service-account key nestcp generated.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

setup
t0=$(now)
kubectl -n "$ns" apply -f "$NESTCP_SOURCE_DIR/config/samples/capn-cluster.yaml" >/dev/null
wait_ready sample-control-plane 240 "$t0"

# --- real processes ---
for pc in sample-etcd-0/etcd sample-apiserver-0/kube-apiserver \
    sample-controller-manager-0/kube-controller-manager; do
    pod=${pc%/*}
    ctr=${pc#*/}
    pid=$(pod_pid "$pod" "$ctr") || fail "no process for $pc"
    exe=$(readlink "/proc/$pid/exe") || fail "process $pid of $pc is gone"
    ip=$(kubectl -n "$ns" get pod "$pod" -o jsonpath='{.status.podIP}')
    log "$pc: pid $pid, $exe, pod IP $ip"
    case "$exe" in */"$ctr") ;; *) fail "$pc runs $exe, not $ctr" ;; esac
    if [ "$ctr" != kube-controller-manager ]; then
        grep -q "$ip" <<<"$(pod_cmdline "$pod" "$ctr")" || fail "$pc does not listen on its pod IP $ip"
    fi
done

# --- the tenant through its admin kubeconfig ---
kc=$work/sample.kubeconfig
tenant_kubeconfig sample "$kc"
log "tenant API server: $(command kubectl config view --kubeconfig "$kc" \
    -o jsonpath='{.clusters[0].cluster.server} (TLS server name {.clusters[0].cluster.tls-server-name})')"
nss=$(tkubectl "$kc" get namespaces -o jsonpath='{.items[*].metadata.name}') ||
    fail "kubectl get namespaces in the tenant"
log "tenant namespaces: $nss"
for n in default kube-system kube-public kube-node-lease; do
    [[ " $nss " == *" $n "* ]] || fail "the tenant has no namespace $n"
done
# Verification stays on: without the CA the server is refused.
grep -v certificate-authority-data "$kc" >"$work/no-ca.kubeconfig"
if out=$(tkubectl "$work/no-ca.kubeconfig" get namespaces 2>&1); then
    fail "kubectl trusted the tenant API server without its CA"
fi
grep -q "certificate signed by unknown authority" <<<"$out" || fail "unexpected error: $out"

# --- the tenant's controller manager ---
t1=$(now)
tkubectl "$kc" create namespace e2e-team-a >/dev/null
until_true 60 tkubectl "$kc" -n e2e-team-a get serviceaccount default ||
    fail "namespace e2e-team-a got no default ServiceAccount"
log "tenant controller manager: default ServiceAccount after $(elapsed "$t1") s"
# A bound token (TokenRequest; no token Secrets since 1.24), signed with the key of Secret
# sample-sa and issued by the configured issuer: the API server accepts it.
tok=$(tkubectl "$kc" -n e2e-team-a create token default --duration=10m) ||
    fail "the API server issued no token for the default ServiceAccount"
iss=$(python3 -c 'import base64,json,sys; p=sys.argv[1].split(".")[1]; print(json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))["iss"])' "$tok")
log "token issuer: $iss"
[ -n "$iss" ] || fail "the token has no issuer"
server=$(command kubectl config view --kubeconfig "$kc" -o jsonpath='{.clusters[0].cluster.server}')
code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 10 \
    --cacert <(command kubectl config view --kubeconfig "$kc" --raw \
        -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d) \
    --resolve "sample-apiserver:${server##*:}:$(apiserver_ips sample | awk '{ print $1 }')" \
    -H "Authorization: Bearer $tok" \
    "https://sample-apiserver:${server##*:}/api/v1/namespaces/e2e-team-a/serviceaccounts/default")
# Authenticated as system:serviceaccount:e2e-team-a:default, which may not read ServiceAccounts.
[ "$code" = 403 ] || fail "the ServiceAccount token was answered with HTTP $code, not 403"
log "the default ServiceAccount's token authenticates (HTTP 403: authenticated, not authorised)"

finish
