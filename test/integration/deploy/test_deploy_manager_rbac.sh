#!/usr/bin/env bash
# The RBAC proof: `nestcp manager` as its own process, authenticated only by a ServiceAccount
# token bound to config/rbac (the ClusterRole, ClusterRoleBinding, leader-election Role and
# RoleBinding, exactly as built by `kubectl kustomize config/rbac`), against the real
# apiserver's RBAC (no system:masters):
#   - the kubeconfig's identity is the ServiceAccount: it cannot list nodes;
#   - it watches every namespace (the default install) and wins the Lease in its own namespace;
#   - config/samples/capn-cluster.yaml and config/samples/standalone.yaml become Ready (their
#     etcd members run for real under a node agent, the other pods are marked Running and Ready,
#     with the admin kubeconfig: test/support/kubelets.sh);
#   - the manager records Events; deleting the samples removes the control planes, their
#     components, Secrets, Services and StatefulSets;
#   - with `create` on Services taken from its ClusterRole and the API server's Service deleted,
#     the real 403 shows in the NestedAPIServer's Ready (WriteRejected, the server's message)
#     and a Warning Event; config/rbac applied again, the Service comes back and Ready with it;
#   - outside that phase the manager's log shows no request refused by RBAC, and no other 403
#     is counted in its metrics;
#   - secure metrics (the default), with config/rbac's metrics roles: /metrics over HTTPS with
#     the certificate of --metrics-cert-dir; a ServiceAccount token bound to the metrics-reader
#     ClusterRole gets 200, one without it 403 naming the user, no token or a bad one 401, and
#     plain HTTP no answer. The manager reviews the tokens with its own rights only.
#   - a real Prometheus scrapes it as config/prometheus's ServiceMonitor says, with the
#     reader's token: every metric of the kit's alerts and dashboard is there, every query and
#     alert evaluates, and with both samples Ready no alert is pending or firing.
# Docs commands covered here: docs/create-cluster.md "kubectl apply -f config/samples/...",
# "kubectl get nestedcontrolplanes", "kubectl wait --for=condition=Ready ncp/NAME",
# "kubectl describe ncp NAME", "kubectl get nc", "kubectl get capn", "kubectl get ncp -o wide",
# "kubectl get statefulsets,services,secrets -l cluster.x-k8s.io/cluster-name=...", the
# kubeconfig Secret (jsonpath + base64 -d), and "kubectl delete -f ... --ignore-not-found".
set -euo pipefail
: "${KUBECONFIG:?KUBECONFIG must point at the super cluster}"
: "${NESTCP_SOURCE_DIR:?}"
: "${NESTCP_BIN:?}"
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
. "$NESTCP_SOURCE_DIR/test/support/kubelets.sh"
. "$NESTCP_SOURCE_DIR/test/support/prometheus.sh"

src=$NESTCP_SOURCE_DIR
id=rbac-proof-$$
sys_ns=$id-system # the manager's namespace (ServiceAccount, Lease)
ns=$id            # the clusters' namespace
work=$(mktemp -d)
mgr=""
cleanup() {
    local p
    for p in $mgr; do kill -KILL "$p" 2>/dev/null || true; done
    prom_stop
    kubelets_stop
    # With the manager gone, nothing removes its finalizer: let the namespace go.
    for p in $(kubectl -n "$ns" get ncp -o name 2>/dev/null); do
        kubectl -n "$ns" patch "$p" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1 || true
    done
    kubectl delete clusterrolebinding "$id-manager-rolebinding" "$id-metrics-auth-rolebinding" \
        "$id-metrics-reader-binding" --ignore-not-found >/dev/null 2>&1 || true
    kubectl delete clusterrole "$id-manager-role" "$id-metrics-auth-role" "$id-metrics-reader" \
        --ignore-not-found >/dev/null 2>&1 || true
    kubectl delete namespace "$ns" "$sys_ns" --wait=false >/dev/null 2>&1 || true
    if [ -n "${DEPLOY_TEST_KEEP:-}" ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
die_with_log() {
    echo "--- manager log (last lines)" >&2
    grep -v ' debug ' "$work/manager.log" 2>/dev/null | tail -n 30 >&2 || true
    fail "$*"
}

install_crds "$src"
kubectl create namespace "$sys_ns" >/dev/null
kubectl create namespace "$ns" >/dev/null

# --- config/rbac, in a namespace and with a prefix of this test's own, and a kubeconfig
# with the ServiceAccount's token and nothing else ---
rbac_kubeconfig "$src" "$sys_ns" "$id" "$work"
grep -q 'client-certificate' "$kc" && fail "the ServiceAccount kubeconfig has a client certificate"
# The identity is the ServiceAccount, with its rights only.
KUBECONFIG=$kc kubectl get nodes >/dev/null 2>"$work/who.err" &&
    fail "the ServiceAccount token can list nodes"
grep -q "system:serviceaccount:$sys_ns:$sa" "$work/who.err" ||
    fail "the refusal does not name the ServiceAccount: $(cat "$work/who.err")"
[ "$(KUBECONFIG=$kc kubectl auth can-i get nodes 2>/dev/null || true)" = no ] ||
    fail "the ServiceAccount can get nodes"
[ "$(KUBECONFIG=$kc kubectl auth can-i create secrets -n "$ns" 2>/dev/null || true)" = yes ] ||
    fail "the ServiceAccount cannot create secrets"

# --- the metrics serving certificate, from a CA of this test's own ---
certs=$work/metrics-certs
mkdir -p "$certs"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
    -subj "/CN=metrics-test-ca" -keyout "$certs/ca.key" -out "$certs/ca.crt" 2>/dev/null
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=nestcp-metrics" \
    -keyout "$certs/tls.key" -out "$certs/tls.csr" 2>/dev/null
openssl x509 -req -in "$certs/tls.csr" -CA "$certs/ca.crt" -CAkey "$certs/ca.key" -days 1 \
    -extfile <(printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n') \
    -out "$certs/tls.crt" 2>/dev/null

# This manager watches every namespace, so an earlier test's namespace still being deleted
# would answer its writes there 403 (the namespace is terminating, not RBAC refusing), which
# the checks below count as refusals: start once no namespace is terminating.
end=$((SECONDS + 300))
while [ -n "$(kubectl get namespaces --no-headers 2>/dev/null | awk '$2 == "Terminating"')" ]; do
    [ "$SECONDS" -lt "$end" ] ||
        fail "namespaces still terminating after 300 s: $(kubectl get namespaces --no-headers | awk '$2 == "Terminating" { print $1 }')"
    sleep 1
done

# --- the manager, every namespace, leader election in its own namespace ---
# Lease timings longer than the defaults: on a loaded test machine a renewal can take more
# than the 10 s deadline, and a manager that loses its lease exits (as it should).
"$NESTCP_BIN" manager --kubeconfig "$kc" --templates "$src/templates" --leader-elect \
    --leader-election-namespace "$sys_ns" --leader-elect-lease-duration 90s \
    --leader-elect-renew-deadline 60s --leader-elect-retry-period 5s \
    --metrics-bind-address 127.0.0.1:0 --metrics-cert-dir "$certs" \
    --health-probe-bind-address 127.0.0.1:0 --log-level debug >"$work/manager.log" 2>&1 &
mgr=$!
metrics=""
for _ in $(seq 1 100); do
    metrics=$(sed -n 's/.*metrics_port=\([0-9]*\).*/\1/p' "$work/manager.log" | head -n 1)
    [ -n "$metrics" ] && break
    kill -0 "$mgr" 2>/dev/null || die_with_log "the manager exited"
    sleep 0.1
done
[ -n "$metrics" ] || die_with_log "the manager did not log its metrics port"

# --- secure metrics: who may scrape ---
# Prometheus's stand-in is bound to config/rbac's metrics-reader ClusterRole; another
# ServiceAccount is bound to nothing.
kubectl -n "$sys_ns" create serviceaccount prometheus >/dev/null
kubectl -n "$sys_ns" create serviceaccount nobody >/dev/null
kubectl create clusterrolebinding "$id-metrics-reader-binding" --clusterrole "$id-metrics-reader" \
    --serviceaccount "$sys_ns:prometheus" >/dev/null
reader_token=$(kubectl -n "$sys_ns" create token prometheus --duration=1h)
nobody_token=$(kubectl -n "$sys_ns" create token nobody --duration=1h)
# scrape TOKEN: the HTTP status of GET /metrics, verified against the test's CA; the body in
# $work/scrape.
scrape() {
    local auth=()
    [ -n "$1" ] && auth=(-H "Authorization: Bearer $1")
    curl -sS --max-time 10 --cacert "$certs/ca.crt" "${auth[@]}" -o "$work/scrape" \
        -w '%{http_code}' "https://127.0.0.1:$metrics/metrics"
}
code=$(scrape "")
[ "$code" = 401 ] || die_with_log "a scrape without a token got HTTP $code, want 401"
code=$(scrape "not-a-token")
[ "$code" = 401 ] || die_with_log "a scrape with a bad token got HTTP $code, want 401"
code=$(scrape "$nobody_token")
[ "$code" = 403 ] || die_with_log "a scrape by a ServiceAccount without the reader role got HTTP $code, want 403"
grep -q "Authorization denied for user system:serviceaccount:$sys_ns:nobody" "$work/scrape" ||
    fail "the 403 does not name the user: $(cat "$work/scrape")"
code=$(scrape "$reader_token")
[ "$code" = 200 ] || die_with_log "a scrape with the reader role got HTTP $code, want 200: $(cat "$work/scrape")"
grep -q '^nestcp_build_info{' "$work/scrape" || fail "the reader's scrape lacks nestcp_build_info"
if curl -s --max-time 5 -o /dev/null "http://127.0.0.1:$metrics/metrics"; then
    fail "plain HTTP on the metrics port got an answer"
fi
grep -q 'metrics_secure=true' "$work/manager.log" || fail "the manager does not log metrics_secure=true"
echo "secure metrics: no token 401, bad token 401, no reader role 403, reader role 200, no plain HTTP"

# The samples' pods run (test/support/kubelets.sh: etcd for real, the rest marked Ready), with
# the admin kubeconfig.
kubelets_start "$ns" "$work" || fail "cannot start the kubelets"

t0=$(date +%s)
kubectl -n "$ns" apply -f "$src/config/samples/capn-cluster.yaml" -f "$src/config/samples/standalone.yaml" >/dev/null
for ncp in sample-control-plane standalone; do
    kubectl -n "$ns" wait --for=condition=Ready "ncp/$ncp" --timeout=240s >/dev/null 2>&1 ||
        die_with_log "ncp/$ncp is not Ready: $(kubectl -n "$ns" get ncp "$ncp" -o jsonpath='{.status.conditions}')"
done
echo "both samples Ready after $(($(date +%s) - t0)) s, with the ServiceAccount's rights only"

# --- Prometheus scrapes as config/prometheus's ServiceMonitor says ---
# A real Prometheus (test/support/prometheus.sh) with the ServiceMonitor's endpoint settings,
# the reader's token and the kit's alerts: the target is up (HTTPS, token reviewed, the whole
# output parsed by Prometheus itself); the tenant's namespace label survives next to the
# manager's; every metric the alerts and dashboard name has series of job nestcp; every
# dashboard query and every alert evaluates without error; and no alert is even pending.
mkdir -p "$work/prom"
printf '%s' "$reader_token" >"$work/prom/token"
prom_start "$work/prom" "127.0.0.1:$metrics" "$work/prom/token" "$sys_ns" ||
    fail "Prometheus did not start: $(tail -n 5 "$work/prom/prometheus.log")"
prom_value() { prom_query "$1" | python3 -c '
import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if len(r) == 1 else "")'; }
# Scraped once every control plane the manager sees is Ready: both samples, and none that an
# earlier test's namespace still holds while it is deleted.
all_ready() {
    [ "$(prom_value 'up{job="nestcp"}')" = 1 ] &&
        [ -n "$(prom_value 'nestcp_control_planes_ready{job="nestcp"} >= 2')" ] &&
        [ "$(prom_value 'sum without (phase) (nestcp_control_planes{job="nestcp"}) - nestcp_control_planes_ready{job="nestcp"}')" = 0 ]
}
for i in $(seq 1 120); do
    all_ready && break
    [ "$i" -eq 120 ] && fail "Prometheus does not see the manager with every control plane Ready:" \
        "$(curl -s "http://127.0.0.1:$prom_port/api/v1/targets")" \
        "$(prom_query '{job="nestcp",__name__=~"nestcp_control_planes.*"}')"
    sleep 0.5
done
t_scraped=$(date +%s)
[ "$(prom_value "nestcp_certificate_expiry_seconds{job=\"nestcp\",namespace=\"$ns\",cluster=\"standalone\"}")" != "" ] ||
    fail "Prometheus has no expiry series labelled with the tenant's namespace $ns"
[ "$(prom_value "leader_election_master_status{job=\"nestcp\",namespace=\"$sys_ns\"}")" = 1 ] ||
    fail "Prometheus does not see the manager leading, in namespace $sys_ns"
python3 "$src/test/support/promql.py" selectors "$src/config/prometheus" | cut -f2 | sort -u >"$work/prom/names"
python3 "$src/test/support/promql.py" exprs "$src/config/prometheus" >"$work/prom/exprs"
python3 - "$prom_port" "$t_scraped" "$work/prom/names" "$work/prom/exprs" <<'EOF' ||
import calendar, json, sys, time, urllib.parse, urllib.request
port, t_scraped, names, exprs = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def get(path, **q):
    url = "http://127.0.0.1:%s/api/v1/%s?%s" % (port, path, urllib.parse.urlencode(q))
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)
bad = []
for name in open(names).read().split():
    if not get("query", query='%s{job="nestcp"}' % name)["data"]["result"]:
        bad.append("no series %s{job=\"nestcp\"} in Prometheus" % name)
for line in open(exprs).read().splitlines():
    src, expr = line.split("\t")
    try:
        get("query", query=expr.replace("$__rate_interval", "1m"))
    except Exception as e:
        bad.append("%s: %s: %s" % (src, expr, e))
# Every alert evaluated after the first scrape with both control planes Ready, healthy.
for _ in range(60):
    rules = [r for g in get("rules")["data"]["groups"] for r in g["rules"]]
    if rules and all(calendar.timegm(time.strptime(r["lastEvaluation"][:19], "%Y-%m-%dT%H:%M:%S")) > t_scraped
                     for r in rules):
        break
    time.sleep(0.5)
else:
    bad.append("the alerts were not evaluated after the scrape: %s" % [(r["name"], r.get("lastEvaluation")) for r in rules])
bad += ["alert %s: %s %s" % (r["name"], r["health"], r.get("lastError", "")) for r in rules if r["health"] != "ok"]
firing = get("query", query="ALERTS")["data"]["result"]
bad += ["alert %s is %s" % (a["metric"]["alertname"], a["metric"]["alertstate"]) for a in firing]
if bad:
    sys.exit("\n".join(bad))
print("Prometheus: the manager scraped as the ServiceMonitor says; %d metrics, %d queries, %d alerts evaluated, none pending or firing"
      % (len(open(names).read().split()), len(open(exprs).read().splitlines()), len(rules)))
EOF
    fail "Prometheus disagrees with config/prometheus (above)"
prom_stop
# Figures for docs/install.md ("Resources"): printed, not asserted.
kubectl -n "$ns" get ncp,netcd,nkas,nkcm,nc,clusters.cluster.x-k8s.io,secrets,services,statefulsets \
    -o json >"$work/cached.json"
read -r nobj <<<"$(grep -c '"resourceVersion"' "$work/cached.json")"
echo "figures: manager peak RSS $(awk '/^VmHWM/ { print $2 }' "/proc/$mgr/status") KiB," \
    "CPU $(awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$mgr/stat") s;" \
    "the 2 clusters' objects in its caches: ~$((nobj - 1)), $(($(wc -c <"$work/cached.json") / 1024)) KiB of JSON"

# What a user sees (docs/create-cluster.md).
kubectl -n "$ns" get nestedcontrolplanes >"$work/get.txt"
grep -qE '^standalone +v?1\.36\.3 +true' "$work/get.txt" ||
    fail "kubectl get nestedcontrolplanes does not show standalone Ready: $(cat "$work/get.txt")"
kubectl -n "$ns" describe ncp standalone >"$work/describe.txt"
grep -q 'Type: *Ready' "$work/describe.txt" || grep -q 'Ready' "$work/describe.txt" ||
    fail "kubectl describe ncp shows no Ready condition"
for i in $(seq 1 30); do
    [ "$(kubectl -n "$ns" get nc sample -o jsonpath='{.status.ready}')" = true ] && break
    [ "$i" -eq 30 ] && die_with_log "NestedCluster sample is not ready"
    sleep 1
done
kubectl -n "$ns" get capn >"$work/capn.txt"
for o in nestedcontrolplane.controlplane.cluster.x-k8s.io/standalone nestedetcd.controlplane.cluster.x-k8s.io/standalone-etcd \
    nestedcluster.infrastructure.cluster.x-k8s.io/sample; do
    grep -q "^$o " "$work/capn.txt" || fail "kubectl get capn does not list $o: $(cat "$work/capn.txt")"
done
grep -q 'INITIALIZED' <<<"$(kubectl -n "$ns" get ncp -o wide)" || fail "kubectl get ncp -o wide lacks INITIALIZED"
[ "$(kubectl -n "$ns" get statefulsets,services -l cluster.x-k8s.io/cluster-name=standalone -o name | wc -l)" -ge 6 ] ||
    fail "the standalone StatefulSets and Services do not carry the cluster-name label"
kubectl -n "$ns" get secret standalone-kubeconfig -o jsonpath='{.data.value}' | base64 -d >"$work/tenant.kubeconfig"
grep -q "server: https://standalone-apiserver.$ns.svc:6443" "$work/tenant.kubeconfig" ||
    fail "the tenant kubeconfig's server is not the apiserver Service: $(grep server: "$work/tenant.kubeconfig")"
kubectl -n "$ns" get secret sample-kubeconfig >/dev/null || fail "sample-kubeconfig is missing"
[ "$(kubectl -n "$sys_ns" get lease nestcp-manager -o jsonpath='{.spec.holderIdentity}')" != "" ] ||
    fail "the manager holds no Lease in $sys_ns"
events=$(kubectl -n "$ns" get events -o jsonpath='{range .items[?(@.source.component=="nestcp")]}{.reason}{"\n"}{end}' | wc -l)
[ "$events" -gt 0 ] || fail "the manager recorded no Event"

# --- an RBAC that forbids one verb: the server's 403 is shown on the object, then it heals ---
# The ClusterRole loses `create` on Services; the API server Service is deleted. The manager's
# re-apply (a server-side apply that would create) gets a real 403 from the API server's RBAC:
# the NestedAPIServer says so in Ready (WriteRejected, the server's message) with a Warning
# Event, and the manager keeps serving. Once config/rbac is applied again, the retry creates the
# Service and Ready comes back, with no change to the object.
log_from=$(wc -l <"$work/manager.log")
rules=$(kubectl get clusterrole "$id-manager-role" -o jsonpath='{range .rules[*]}{.resources}{"\n"}{end}')
rule=$(($(grep -n '"services"' <<<"$rules" | head -n 1 | cut -d: -f1) - 1))
[ "$rule" -ge 0 ] || fail "no rule for services in $id-manager-role"
verbs=$(kubectl get clusterrole "$id-manager-role" -o jsonpath="{.rules[$rule].verbs}")
grep -q '"create"' <<<"$verbs" || fail "rule $rule of $id-manager-role does not create services: $verbs"
kubectl patch clusterrole "$id-manager-role" --type=json -p \
    "[{\"op\":\"replace\",\"path\":\"/rules/$rule/verbs\",\"value\":$(sed 's/"create",\?//' <<<"$verbs")}]" >/dev/null
for i in $(seq 1 30); do
    [ "$(KUBECONFIG=$kc kubectl auth can-i create services -n "$ns" 2>/dev/null || true)" = no ] && break
    [ "$i" -eq 30 ] && fail "the ServiceAccount can still create services"
    sleep 1
done
kubectl -n "$ns" delete service standalone-apiserver --wait=true >/dev/null
ready=""
for _ in $(seq 1 120); do
    ready=$(kubectl -n "$ns" get nkas standalone-apiserver \
        -o jsonpath='{range .status.conditions[?(@.type=="Ready")]}{.status}|{.reason}|{.message}{end}')
    case $ready in False\|WriteRejected\|*) break ;; esac
    sleep 1
done
case $ready in
False\|WriteRejected\|*"Service $ns/standalone-apiserver was rejected"*forbidden*) ;;
*) die_with_log "with create on services forbidden, NestedAPIServer standalone-apiserver's Ready is '$ready'" ;;
esac
echo "403 shown: Ready=$ready"
[ -n "$(kubectl -n "$ns" get events -o name \
    --field-selector reason=WriteRejected,involvedObject.name=standalone-apiserver,type=Warning)" ] ||
    fail "no Warning Event WriteRejected on standalone-apiserver"
kill -0 "$mgr" 2>/dev/null || die_with_log "the manager exited on a 403"
kubectl apply -k "$work/kust" >/dev/null
for i in $(seq 1 180); do
    ready=$(kubectl -n "$ns" get nkas standalone-apiserver \
        -o jsonpath='{range .status.conditions[?(@.type=="Ready")]}{.status}|{.reason}{end}')
    [ "${ready%%|*}" = True ] && kubectl -n "$ns" get service standalone-apiserver >/dev/null 2>&1 && break
    [ "$i" -eq 180 ] && die_with_log "180 s after config/rbac was applied again, Ready is '$ready'"
    sleep 1
done
echo "healed $i s after config/rbac was applied again: the Service is back, Ready=$ready"
log_to=$(wc -l <"$work/manager.log")
scrape "$reader_token" >/dev/null
denied_phase=$(awk '$1 ~ /code="403"/ { s += $2 } END { printf "%d", s }' "$work/scrape")
[ "$denied_phase" -gt 0 ] || fail "the manager's metrics count no 403 while create was forbidden"

# --- deletion: the control planes take their components and objects with them ---
# (--ignore-not-found: the control plane deletes its components before kubectl reaches them.)
kubectl -n "$ns" delete -f "$src/config/samples/capn-cluster.yaml" -f "$src/config/samples/standalone.yaml" \
    --ignore-not-found --wait=true --timeout=180s >/dev/null 2>"$work/delete.err" ||
    die_with_log "deleting the samples did not finish: $(cat "$work/delete.err") $(kubectl -n "$ns" get ncp,netcd,nkas,nkcm -o name)"
left=""
for _ in $(seq 1 60); do
    left=$(kubectl -n "$ns" get netcd,nkas,nkcm,statefulsets,services -o name 2>/dev/null)
    [ -z "$left" ] && break
    sleep 1
done
[ -z "$left" ] || die_with_log "left after deleting the samples: $left"

# --- no request was refused ---
kill -0 "$mgr" 2>/dev/null || die_with_log "the manager exited"
# (outside the phase above, where one verb was forbidden on purpose)
awk -v a="$log_from" -v b="$log_to" 'NR <= a || NR > b' "$work/manager.log" >"$work/manager.rest.log"
if grep -qE 'forbidden|error=EPERM' "$work/manager.rest.log"; then
    grep -E 'forbidden|error=EPERM' "$work/manager.rest.log" | head -n 10 >&2
    fail "the manager was refused requests (above)"
fi
[ "$(scrape "$reader_token")" = 200 ] || fail "the final scrape failed: $(cat "$work/scrape")"
denied=$(awk '$1 ~ /code="403"/ { s += $2 } END { printf "%d", s }' "$work/scrape")
[ "$denied" = "$denied_phase" ] ||
    fail "the manager's metrics count $denied responses with status 403, $denied_phase of them while create was forbidden"
kill -TERM "$mgr"
wait "$mgr" || die_with_log "the manager did not exit cleanly on SIGTERM"
mgr=""
echo "ok: nestcp manager reconciles, and deletes, with exactly config/rbac's rights"
