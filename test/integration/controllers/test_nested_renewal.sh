#!/usr/bin/env bash
# Certificates are renewed on time with nobody touching anything, against the real super cluster
# (etcd runs for real through the node agent):
#   - a manager with short-lived certificates (--cert-validity 2m: renewed with 40 s left) and a
#     frequent resync (--sync-period 15s);
#   - once the control plane is Ready nothing is written to it, yet within the certificates'
#     lifetime the API server's StatefulSet mounts a new certs Secret, the admin kubeconfig
#     carries a new client certificate, and the earliest NotAfter the manager reports
#     (nestcp_certificate_expiry_seconds) moves forward;
#   - the control plane is Ready again afterwards;
#   - the manager says when it resyncs everything.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

ns=nested-renewal-$$
install_crds
new_namespace "$ns"
fake_kubelet "$ns"
start_manager mgr "$ns" --cert-validity 2m --sync-period 15s
cluster r1 | kubectl -n "$ns" apply -f - >/dev/null
t0=$(now)
wait_ready "$ns" r1 180
echo "r1: Ready after $(elapsed "$t0") s"

mounted() {
    kubectl -n "$ns" get sts r1-apiserver \
        -o jsonpath='{.spec.template.spec.volumes[?(@.name=="certs")].secret.secretName}'
}
# The admin kubeconfig's client certificate, as its NotAfter in seconds since the epoch.
kubeconfig_not_after() {
    kubectl -n "$ns" get secret r1-kubeconfig -o jsonpath='{.data.value}' | base64 -d |
        awk '$1 == "client-certificate-data:" { print $2 }' | base64 -d |
        openssl x509 -noout -enddate -dateopt iso_8601 | cut -d= -f2 | xargs -I{} date -d {} +%s
}
# The earliest NotAfter the manager reports for r1, in seconds since the epoch.
reported_not_after() {
    local left
    left=$(metric_sum nestcp_certificate_expiry_seconds)
    [ "$left" -gt 0 ] || return 1
    echo $(($(date +%s) + left))
}

certs1=$(mounted)
kc1=$(kubeconfig_not_after)
until_true 30 reported_not_after >/dev/null || fail "no nestcp_certificate_expiry_seconds for r1"
rep1=$(reported_not_after)
[ -n "$certs1" ] || fail "r1-apiserver mounts no certs Secret"
left=$((kc1 - $(date +%s)))
[ "$left" -gt 0 ] && [ "$left" -le 125 ] ||
    fail "the kubeconfig's client certificate has $left s left; --cert-validity 2m asked for 120"
echo "r1: the API server mounts $certs1; the kubeconfig's certificate has $left s left"

# --- hands off: the manager renews on its own ---
t1=$(now)
renewed() {
    local c
    c=$(mounted)
    [ -n "$c" ] && [ "$c" != "$certs1" ] && [ "$(kubeconfig_not_after)" -gt "$kc1" ]
}
until_true 150 renewed || fail "nothing renewed within 150 s: the API server mounts $(mounted)"
echo "r1: renewed $(elapsed "$t1") s after Ready, untouched: the API server mounts $(mounted)"
renewed_ready() { is_ready "$ns" ncp/r1 && [ "$(reported_not_after)" -gt "$rep1" ]; }
until_true 120 renewed_ready ||
    fail "after renewal: Ready is '$(cond "$ns" ncp/r1 Ready)', earliest NotAfter $(reported_not_after) (was $rep1)"
echo "r1: Ready again; the earliest NotAfter moved $(($(reported_not_after) - rep1)) s forward"

grep -q 'periodic resync' "$work/mgr.log" || fail "the manager never said it resynced"
echo PASS
