#!/usr/bin/env bash
# The cluster CA, then the etcd CA, of a tenant with three etcd members and two API servers
# rotated on real processes (docs/certificates.md, "Rotating a CA"). Asserted:
#   - every phase happens, in order, with its Event: TrustingNewCA, IssuingFromNewCA,
#     ServingFromNewCA, DroppingOldCA, Complete;
#   - a client with the admin kubeconfig from before the rotation (it trusts the old CA only
#     and presents a certificate from it) reads and writes a ConfigMap every 200 ms through
#     the API server Service's name, and not one of its requests fails until serving
#     certificates switch to the new CA (phase 3); it behaves as client-go does
#     (availability.py);
#   - a client with the kubeconfig nestcp wrote once client certificates came from the new CA
#     (phase 2) does the same from then on, through the end of the etcd CA's rotation, and not
#     one of its requests fails;
#   - afterwards the old CA verifies no API server, and a client certificate it signed is
#     refused by every API server; etcd's members trust only the new etcd CA;
#   - a ConfigMap written before the rotations reads back after them;
#   - the manager restarted during the etcd CA's rotation carries it on to the end.
# Failed/total of each client is printed per phase.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

c=car
setup
tenant_manifest "$c" 1.36.3 3 2 >"$work/$c.yaml"
t0=$(now)
kubectl -n "$ns" apply -f "$work/$c.yaml" >/dev/null
wait_ready "$c" 300 "$t0"

kc=$work/$c.kubeconfig
tenant_kubeconfig "$c" "$kc"
kubeconfig_pems "$kc" "$work/old"
tkubectl "$kc" -n default create configmap avail-probe --from-literal=n=0 >/dev/null ||
    fail "cannot create the probe's ConfigMap"
tkubectl "$kc" -n default create configmap kept --from-literal=before=rotation >/dev/null ||
    fail "cannot create a ConfigMap"

phase() {
    kubectl -n "$ns" get ncp "$c" -o jsonpath="{.status.certificates.$1.phase}"
}
phase_is() { [ "$(phase "$1")" = "$2" ]; }
condition() {
    kubectl -n "$ns" get ncp "$c" \
        -o jsonpath='{.status.conditions[?(@.type=="CertificatesRotating")].status} {.status.conditions[?(@.type=="CertificatesRotating")].reason}: {.status.conditions[?(@.type=="CertificatesRotating")].message}'
}
hosts="$agent_state/pods/${ns}_$c-etcd-0/hosts"
# probe NAME DIR: a client reading and writing through the Service name with DIR's
# ca.crt, client.crt and client.key, logging to $work/NAME.log.
probe() {
    python3 "$(dirname "$0")/availability.py" "$hosts" "$c-apiserver" 6443 "$2/ca.crt" \
        "$2/client.crt" "$2/client.key" "$work/$1.log" 0.2 readwrite &
    pids+=($!)
}
probing() { [ "$(grep -c ' ok .* write ' "$work/$1.log" 2>/dev/null)" -ge 3 ]; }

# rotate FIELD REQUEST SUFFIX: requests the rotation of the CA in Secret $c-SUFFIX, follows
# its phases (recorded with the local time each was first seen in $work/FIELD.watch) to
# Complete, and checks its Events and that the Secret keeps the new CA alone.
rotate() {
    local field=$1 request=$2 prefix t
    command kubectl -n "$ns" get ncp "$c" -w --request-timeout=0 --no-headers \
        -o custom-columns="PHASE:.status.certificates.$field.phase" 2>/dev/null \
        > >(while read -r line; do echo "$(now) $line"; done >"$work/$field.watch") &
    pids+=($!)
    t=$(now)
    echo "$t requested" >"$work/$field.start"
    kubectl -n "$ns" patch ncp "$c" --type merge \
        -p "{\"spec\":{\"certificates\":{\"rotate\":{\"$field\":\"$request\"}}}}" >/dev/null
    until_true 60 phase_is "$field" TrustingNewCA || fail "the $field rotation did not start: $(condition)"
    log "$field: requested; $(condition)"
    if [ "$field" = clusterCA ]; then
        # Once client certificates come from the new CA, the kubeconfig nestcp writes is the
        # one a user picks up: its client runs from here to the end.
        until_true 300 phase_is "$field" ServingFromNewCA ||
            fail "$field: phases 1 and 2 did not complete: $(condition)"
        tenant_kubeconfig "$c" "$kc"
        kubeconfig_pems "$kc" "$work/new"
        probe new "$work/new"
        until_true 30 probing new || fail "the client with the new kubeconfig does not get through: $(tail -n 2 "$work/new.log")"
        log "$field: phase 2 done after $(elapsed "$t") s; a client with the kubeconfig of phase 2 runs"
    fi
    if [ "$field" = etcdCA ]; then
        # The manager restarts in the middle (as on a leader failover): the rotation goes on
        # from what the Secret and the status hold. (A new process also starts a new Event
        # budget: client-go's spam filter, 25 Events per object then one per 5 minutes, would
        # otherwise drop the last Events of a second rotation within minutes of the first.)
        until_true 300 phase_is "$field" IssuingFromNewCA ||
            fail "$field: phase 1 did not complete: $(condition)"
        stop_pid "$mgr_pid" 20
        start_manager
        log "$field: phase 1 done after $(elapsed "$t") s; the manager was restarted (pid $mgr_pid)"
    fi
    until_true 600 phase_is "$field" Complete || fail "$field: the rotation did not complete: $(condition)"
    log "$field: complete after $(elapsed "$t") s; $(condition)"
    now >"$work/$field.end"
    case $field in clusterCA) prefix=ClusterCA ;; etcdCA) prefix=EtcdCA ;; esac
    # The last Event is posted after the status write that the wait above saw.
    for r in RotationStarted Trusted ClientsReissued ServingReissued Rotated; do
        until_true 30 has_event "$c" "$prefix$r" ||
            fail "no Event $prefix$r (events: $(events_of "$c" | tr '\n' ' '))"
    done
    [ "$(kubectl -n "$ns" get secret "$c-${3}" -o go-template='{{range $k, $v := .data}}{{$k}} {{end}}')" = "tls.crt tls.key " ] ||
        fail "Secret $c-$3 keeps more than the new CA"
}

probe old "$work/old"
until_true 30 probing old || fail "the client with the old kubeconfig does not get through: $(tail -n 2 "$work/old.log")"

rotate clusterCA e2e-1 ca
rotate etcdCA e2e-1 etcd

# Failed/total per phase of both clients; the old kubeconfig must not fail before phase 3 of
# the cluster CA, the new one never.
python3 - "$work" <<'PY' || fail "a request failed that must not have"
import sys
w = sys.argv[1]
order = ["TrustingNewCA", "IssuingFromNewCA", "ServingFromNewCA", "DroppingOldCA", "Complete"]
def windows(field):
    start = float(open("%s/%s.start" % (w, field)).read().split()[0])
    end = float(open("%s/%s.end" % (w, field)).read().split()[0])
    seen = {}
    for line in open("%s/%s.watch" % (w, field)):
        f = line.split()
        if len(f) >= 2 and float(f[0]) >= start and f[1] in order:
            seen.setdefault(f[1], float(f[0]))
    missing = [p for p in order if p not in seen]
    assert not missing, "%s: phases never seen: %s" % (field, missing)
    times = [seen[p] for p in order]
    assert times == sorted(times), "%s: phases out of order: %s" % (field, seen)
    return [("requested", start, times[0])] + [
        (order[i], times[i], times[i + 1] if i + 1 < len(order) else end) for i in range(len(order))]
def count(name, a, b):
    n = failed = 0
    try:
        lines = open("%s/%s.log" % (w, name)).readlines()
    except FileNotFoundError:
        return 0, 0
    for line in lines:
        f = line.split(None, 4)
        if len(f) >= 4 and a <= float(f[0]) < b:
            n += 1
            failed += f[1] != "ok"
    return failed, n
ok = True
for field in ("clusterCA", "etcdCA"):
    print("%s rotation, failed/total per phase:" % field)
    for name, a, b in windows(field):
        of, on = count("old", a, b)
        nf, nn = count("new", a, b)
        print("  %-17s %6.1f s: old kubeconfig %d/%d, kubeconfig of phase 2 %d/%d" % (
            name, b - a, of, on, nf, nn))
        if nf or (of and field == "clusterCA" and name in ("requested", "TrustingNewCA", "IssuingFromNewCA")):
            ok = False
cw = windows("clusterCA")
of, on = count("old", cw[0][1], cw[3][1])
nf, nn = count("new", cw[3][1], windows("etcdCA")[-1][2])
print("old kubeconfig until serving certificates switched: %d/%d failed; kubeconfig of phase 2 "
      "from then to the end: %d/%d failed" % (of, on, nf, nn))
assert on > 50 and nn > 50, "the probes did not run"
sys.exit(0 if ok else 1)
PY

# The old CA verifies no API server; its client certificate is refused by every one.
tenant_kubeconfig "$c" "$kc"
kubeconfig_pems "$kc" "$work/final"
cmp -s "$work/final/ca.crt" "$work/old/ca.crt" && fail "the kubeconfig still holds the old CA"
for ip in $(apiserver_ips "$c"); do
    if curl -sS -o /dev/null --max-time 5 --cacert "$work/old/ca.crt" \
        --connect-to "$c-apiserver:6443:$ip:6443" "https://$c-apiserver:6443/readyz" 2>/dev/null; then
        fail "the old CA still verifies the API server at $ip"
    fi
    code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 5 --cacert "$work/final/ca.crt" \
        --cert "$work/old/client.crt" --key "$work/old/client.key" \
        --connect-to "$c-apiserver:6443:$ip:6443" \
        "https://$c-apiserver:6443/api/v1/namespaces/default/configmaps/kept" || true)
    case $code in 401 | 403) ;; *) fail "the API server at $ip answers $code to a certificate of the old CA" ;; esac
    code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 5 --cacert "$work/final/ca.crt" \
        --cert "$work/final/client.crt" --key "$work/final/client.key" \
        --connect-to "$c-apiserver:6443:$ip:6443" \
        "https://$c-apiserver:6443/api/v1/namespaces/default/configmaps/kept")
    [ "$code" = 200 ] || fail "the API server at $ip answers $code to the new kubeconfig"
done
log "the old CA verifies no API server and its client certificate is refused by both"

# etcd: every member trusts only the new etcd CA, and the data survived both rotations.
for pod in $c-etcd-0 $c-etcd-1 $c-etcd-2; do
    certs=$(kubectl -n "$ns" get pod "$pod" \
        -o jsonpath='{.spec.volumes[?(@.name=="certs")].secret.secretName}')
    n=$(kubectl -n "$ns" get secret "$certs" -o jsonpath='{.data.ca\.crt}' | base64 -d |
        grep -c 'BEGIN CERTIFICATE')
    [ "$n" = 1 ] || fail "$pod trusts $n etcd CAs"
done
[ "$(tkubectl "$kc" -n default get configmap kept -o jsonpath='{.data.before}')" = rotation ] ||
    fail "the ConfigMap written before the rotations is gone"
log "etcd members trust one CA; the ConfigMap written before the rotations reads back"
finish
