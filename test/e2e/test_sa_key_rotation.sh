#!/usr/bin/env bash
# The service-account key of a tenant with two API servers rotated on real processes
# (docs/certificates.md), with the overlap cut to 60 s so that the test takes minutes (the
# default is the maximum token life, a day; the tokens here may live an hour, the API server's
# minimum). Asserted:
#   - every phase happens, in order, with its Event: TrustingNewKey, SigningWithNewKey,
#     Overlap, DroppingOldKey, Complete;
#   - a token from TokenRequest issued before the rotation keeps working, on every API server,
#     through phases 1 and 2 and the overlap: a client using it reads and writes a ConfigMap
#     every 200 ms through the API server Service's name, and not one of its requests fails
#     until the old key is dropped; a client with the admin certificate does the same
#     throughout, the drop's roll included. Both behave as client-go does (availability.py): a
#     request fails when it is refused (401 or 403 at once) or gets no 2xx within 10 s (no
#     server reached while the pods roll); the two are counted apart and printed per phase;
#   - a token issued once every component signs with the new key names another key (its JWT
#     kid) and works on every API server, during the overlap and after the drop;
#   - after the drop, the token signed by the old key is refused (401) by every API server;
#   - the API servers run with --service-account-max-token-expiration=3600s and
#     --service-account-extend-token-expiration=false.
# Failed/total of both clients is printed per phase.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

c=sak
setup
tenant_manifest "$c" 1.36.3 1 2 | awk '{ print } /^  version: / && !done {
    print "  certificates:"
    print "    serviceAccountKey: {maxTokenExpirationSeconds: 3600, rotationOverlapSeconds: 60}"
    done = 1 }' >"$work/$c.yaml"
t0=$(now)
kubectl -n "$ns" apply -f "$work/$c.yaml" >/dev/null
wait_ready "$c" 300 "$t0"

kc=$work/$c.kubeconfig
tenant_kubeconfig "$c" "$kc"
kubeconfig_pems "$kc" "$work/admin"
for pod in $c-apiserver-0 $c-apiserver-1; do
    args=$(pod_cmdline "$pod" kube-apiserver)
    grep -qx -- '--service-account-max-token-expiration=3600s' <<<"$args" ||
        fail "$pod does not run --service-account-max-token-expiration=3600s"
    grep -qx -- '--service-account-extend-token-expiration=false' <<<"$args" ||
        fail "$pod does not run --service-account-extend-token-expiration=false"
done
log "both API servers run --service-account-max-token-expiration=3600s and --service-account-extend-token-expiration=false"

# A ServiceAccount that may read and write the probe's ConfigMap, and its token, issued before
# the rotation.
tkubectl "$kc" -n default create configmap avail-probe --from-literal=n=0 >/dev/null ||
    fail "cannot create the probe's ConfigMap"
tkubectl "$kc" -n default create serviceaccount probe >/dev/null
tkubectl "$kc" -n default create role probe --verb=get,patch --resource=configmaps \
    --resource-name=avail-probe >/dev/null
tkubectl "$kc" -n default create rolebinding probe --role=probe \
    --serviceaccount=default:probe >/dev/null
tkubectl "$kc" -n default create token probe --duration=3600s >"$work/old.token" ||
    fail "TokenRequest failed"

# kid FILE: the key ID in a token's JWT header.
kid() {
    python3 -c 'import base64, json, sys
h = open(sys.argv[1]).read().strip().split(".")[0]
print(json.loads(base64.urlsafe_b64decode(h + "=" * (-len(h) % 4)))["kid"])' "$1"
}
# codes TOKEN_FILE: "<ip>=<HTTP status>" of a read of the probe's ConfigMap with the token on
# every ready API server, TLS verified against the Service name.
codes() {
    local ip
    for ip in $(apiserver_ips "$c"); do
        printf '%s=%s ' "$ip" "$(curl -sS -o /dev/null -w '%{http_code}' --max-time 5 \
            --cacert "$work/admin/ca.crt" -H "Authorization: Bearer $(cat "$1")" \
            --connect-to "$c-apiserver:6443:$ip:6443" \
            "https://$c-apiserver:6443/api/v1/namespaces/default/configmaps/avail-probe")"
    done
}
# all_codes TOKEN_FILE CODE [N]: every ready API server, and at least N of them (default 1),
# answers CODE.
all_codes() {
    local got n ok
    got=$(codes "$1")
    n=$(wc -w <<<"$got")
    ok=$(tr ' ' '\n' <<<"$got" | grep -c "=$2\$" || true)
    [ "$n" -ge "${3:-1}" ] && [ "$ok" = "$n" ]
}
until_true 60 all_codes "$work/old.token" 200 2 || fail "the token does not work before the rotation: $(codes "$work/old.token")"
old_kid=$(kid "$work/old.token")
log "a token issued before the rotation (kid $old_kid) reads the ConfigMap on both API servers"

# The rotation's phases as the control plane reports them, with the local time each was seen.
command kubectl -n "$ns" get ncp "$c" -w --request-timeout=0 --no-headers \
    -o custom-columns='PHASE:.status.certificates.serviceAccountKey.phase' 2>/dev/null \
    > >(while read -r line; do echo "$(now) $line"; done >"$work/phases.watch") &
pids+=($!)
hosts="$agent_state/pods/${ns}_$c-etcd-0/hosts"
python3 "$(dirname "$0")/availability.py" "$hosts" "$c-apiserver" 6443 "$work/admin/ca.crt" \
    "token:$work/old.token" - "$work/token.log" 0.2 readwrite &
pids+=($!)
python3 "$(dirname "$0")/availability.py" "$hosts" "$c-apiserver" 6443 "$work/admin/ca.crt" \
    "$work/admin/client.crt" "$work/admin/client.key" "$work/admin.log" 0.2 readwrite &
pids+=($!)
probing() {
    [ "$(grep -c ' ok .* write ' "$work/token.log" 2>/dev/null)" -ge 3 ] &&
        [ "$(grep -c ' ok .* write ' "$work/admin.log" 2>/dev/null)" -ge 3 ]
}
until_true 30 probing || fail "the probes do not get through: $(tail -n 2 "$work/token.log" "$work/admin.log" 2>/dev/null)"

phase() { kubectl -n "$ns" get ncp "$c" -o jsonpath='{.status.certificates.serviceAccountKey.phase}'; }
phase_is() { [ "$(phase)" = "$1" ]; }
condition() {
    kubectl -n "$ns" get ncp "$c" \
        -o jsonpath='{.status.conditions[?(@.type=="CertificatesRotating")].status} {.status.conditions[?(@.type=="CertificatesRotating")].reason}: {.status.conditions[?(@.type=="CertificatesRotating")].message}'
}

t_request=$(now)
kubectl -n "$ns" patch ncp "$c" --type merge \
    -p '{"spec":{"certificates":{"rotate":{"serviceAccountKey":"e2e-1"}}}}' >/dev/null
until_true 60 phase_is TrustingNewKey || fail "the rotation did not start: $(condition)"
log "requested; $(condition)"
until_true 300 phase_is Overlap || fail "phases 1 and 2 did not complete: $(condition)"
log "phase 2 done after $(elapsed "$t_request") s; $(condition)"

# Every component signs with the new key: a new token names another key and works; the old
# one still works. (The API server pods have new addresses since the rolls.)
tenant_kubeconfig "$c" "$kc"
tkubectl "$kc" -n default create token probe --duration=3600s >"$work/new.token" ||
    fail "TokenRequest failed after phase 2"
new_kid=$(kid "$work/new.token")
[ "$new_kid" != "$old_kid" ] || fail "the token issued after phase 2 names the old key $old_kid"
all_codes "$work/new.token" 200 || fail "the new token is refused during the overlap: $(codes "$work/new.token")"
all_codes "$work/old.token" 200 || fail "the old token is refused during the overlap: $(codes "$work/old.token")"
log "overlap: a new token (kid $new_kid) and the old one both work on every ready API server: $(codes "$work/old.token")"

until_true 300 phase_is Complete || fail "phase 3 did not complete: $(condition)"
log "complete after $(elapsed "$t_request") s; $(condition)"
t_complete=$(now)
until_true 60 all_codes "$work/old.token" 401 2 || fail "the token signed by the old key is not refused after the drop: $(codes "$work/old.token")"
until_true 60 all_codes "$work/new.token" 200 2 || fail "the new token is refused after the drop: $(codes "$work/new.token")"
log "after the drop: the old token is refused (401) and the new one works on both API servers"

# Failed/total per phase, from the first time the control plane reported each.
python3 - "$work/phases.watch" "$t_request" "$t_complete" "$work/token.log" "$work/admin.log" <<'PY' || fail "a request was refused during the rotation"
import sys
watch, start, end, token_log, admin_log = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5]
order = ["TrustingNewKey", "SigningWithNewKey", "Overlap", "DroppingOldKey", "Complete"]
seen = {}
for line in open(watch):
    f = line.split()
    if len(f) >= 2 and float(f[0]) >= start and f[1] in order:
        seen.setdefault(f[1], float(f[0]))
missing = [p for p in order if p not in seen]
assert not missing, "phases never seen: %s" % missing
times = [seen[p] for p in order]
assert times == sorted(times), "phases out of order: %s" % seen
windows = [("requested", start, times[0])]
windows += [(order[i], times[i], times[i + 1] if i + 1 < len(order) else end) for i in range(len(order))]
def count(path, a, b, show=False):
    # Requests refused for their credentials (HTTP 401 or 403), and every other failure: no
    # 2xx within 10 s while the pods rolled (the roll's, not the keys').
    n = refused = unreachable = 0
    for line in open(path):
        f = line.split(None, 4)
        if len(f) >= 4 and a <= float(f[0]) < b:
            n += 1
            if f[1] == "ok":
                continue
            if len(f) > 4 and f[4].split(" ")[1:2] in (["401"], ["403"]):
                refused += 1
            else:
                unreachable += 1
            if show and refused + unreachable <= 5:
                print("    " + line.rstrip())
    return refused, unreachable, n
ok = True
print("failed/total per phase (refused for the credentials + the roll's):")
for name, a, b in windows:
    tr, tu, tn = count(token_log, a, b)
    ar, au, an = count(admin_log, a, b)
    print("  %-17s %6.1f s: old token %d/%d (%d + %d), admin certificate %d/%d (%d + %d)" % (
        name, b - a, tr + tu, tn, tr, tu, ar + au, an, ar, au))
    if ar or au or ((tr or tu) and name not in ("DroppingOldKey", "Complete")):
        ok = False
tr, tu, tn = count(token_log, start, times[3], True)
ar, au, an = count(admin_log, start, end, True)
print("old token until the drop: %d/%d failed (%d refused, %d the roll's); admin "
      "certificate throughout: %d/%d failed (%d refused, %d the roll's)" % (
          tr + tu, tn, tr, tu, ar + au, an, ar, au))
assert tn > 50 and an > 50, "the probes did not run"
tr, tu, tn = count(token_log, times[4], end)
print("old token after phase 3: %d/%d refused, %d accepted" % (tr, tn, tn - tr - tu))
if tn - tr - tu:
    ok = False
sys.exit(0 if ok else 1)
PY

# Each Event is posted after the write it reports; the last one after the status write that
# the wait for Complete saw.
for r in ServiceAccountKeyRotationStarted ServiceAccountKeyTrusted ServiceAccountKeySigning \
    ServiceAccountKeyDropped ServiceAccountKeyRotated; do
    until_true 30 has_event "$c" "$r" || fail "no Event $r (events: $(events_of "$c" | tr '\n' ' '))"
done
log "Events: every phase reported"
tenant_kubeconfig "$c" "$kc"
[ "$(kubectl -n "$ns" get secret "$c-sa" -o go-template='{{range $k, $v := .data}}{{$k}} {{end}}')" = "tls.crt tls.key " ] ||
    fail "Secret $c-sa keeps more than the signing key: $(kubectl -n "$ns" get secret "$c-sa" -o go-template='{{range $k, $v := .data}}{{$k}} {{end}}')"
finish
