#!/usr/bin/env bash
# The requests the manager sends to create one standalone control plane, one by one.
#
#   eval "$(hack/kube-env.sh up)"
#   NESTCP_BIN=build/nestcp test/bench/bench_requests.sh
#
# Runs `nestcp manager --log-level debug` and nestcp-fake-kubelet (as bench_clusters.sh does)
# for one control plane until it is Ready, and prints every plan action the manager sent
# (verb, resource, object, why, HTTP status), the reads the runtime made for them (claim
# checks, objects found), then the totals from its /metrics: plan actions, HTTP requests of
# its client (lists, watches, leader election and Events included), watches opened and Events.
# Figures only; nothing is asserted. Not part of CTest.
set -euo pipefail
: "${KUBECONFIG:?run inside a super cluster: eval \"\$(hack/kube-env.sh up)\"}"
: "${NESTCP_BIN:?set NESTCP_BIN to the nestcp binary}"
NESTCP_FAKE_KUBELET=${NESTCP_FAKE_KUBELET:-$(dirname "$NESTCP_BIN")/test/nodeagent/nestcp-fake-kubelet}
export NESTCP_FAKE_KUBELET
NESTCP_BUILD_DIR=${NESTCP_BUILD_DIR:-$(dirname "$NESTCP_BIN")}
export NESTCP_BUILD_DIR
NESTCP_SOURCE_DIR=${NESTCP_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
export NESTCP_SOURCE_DIR
. "$NESTCP_SOURCE_DIR/test/integration/controllers/lib.sh"

(install_crds 2>/dev/null) || install_crds
ns=requests-$$
new_namespace "$ns"
fake_kubelet "$ns"
# Every version of the control plane and its components, to say what each status write changed.
for kind in ncp netcd nkas nkcm; do
    command kubectl -n "$ns" get "$kind" -w -o json >"$work/watch-$kind.json" 2>/dev/null &
    pids+=($!)
done
MANAGER_LOG_LEVEL=debug start_manager mgr "$ns"
synced() { [ "$(metric_sum nestcp_informer_synced)" -ge 9 ]; }
until_true 60 synced || fail "the caches did not sync"
snapshot() {
    curl -s --max-time 10 "http://127.0.0.1:$mgr_metrics/metrics" >"$work/$1.txt"
}
sum() { awk -v k="$2" '$1 == k || index($1, k "{") == 1 { s += $2 } END { printf "%d", s }' "$work/$1.txt"; }
snapshot start
t0=$(now)
cluster one | kubectl -n "$ns" apply -f - >/dev/null
wait_ready "$ns" one 300
t_ready=$(elapsed "$t0")
# The last status writes after Ready, and nothing more: wait until two scrapes a second apart
# count the same plan actions.
prev=-1
for _ in $(seq 1 30); do
    snapshot end
    cur=$(sum end nestcp_api_requests_total)
    [ "$cur" = "$prev" ] && break
    prev=$cur
    sleep 1
done
log=$work/mgr.log
echo "# plan actions (verb resource object: why -> status), in the order they ended"
awk '/ action done / || /action conflicted/ || /action failed/ || /action rejected/' "$log" |
    sed -E 's/.*(action [a-z]+).*controller=([^ ]+) key=[^ ]+ verb=([^ ]+)( resource=[^ ]+ object=([^ ]+))? why=(.*) (status|error)=([^ ]+).*/\3\t\5\t\6\t\8/' |
    awk -F '\t' '{ printf "%-8s %-60s %s\n", $1, $3, $4 }'
echo
echo "# reads the runtime made for them"
{ grep -c 'claim check' "$log" || true; } | sed 's/^/claim checks (GET before an apply): /'
{ grep -c 'found an existing object' "$log" || true; } | sed 's/^/objects found (GET after AlreadyExists): /'
echo
actions=$(($(sum end nestcp_api_requests_total) - $(sum start nestcp_api_requests_total)))
http=$(($(sum end nestcp_kube_client_requests_total) - $(sum start nestcp_kube_client_requests_total)))
watches=$(($(sum end nestcp_kube_client_watches_total) - $(sum start nestcp_kube_client_watches_total)))
events=$(($(sum end nestcp_events_total) - $(sum start nestcp_events_total)))
echo "# totals for one control plane (Ready after $t_ready s; load $(cut -d' ' -f1-3 /proc/loadavg))"
echo "plan actions, by verb and code:"
paste <(awk '/^nestcp_api_requests_total\{/ { print $1, $2 }' "$work/end.txt") /dev/null |
    sed 's/^nestcp_api_requests_total/  /'
echo "plan actions: $actions"
echo "HTTP requests: $http (watches opened: $watches; Events created or patched: $events)"
echo "HTTP requests without Events: $((http - events))"
echo
echo "# what each write of the control plane and its components changed, in order"
cat "$work"/watch-*.json | python3 -c '
import json, sys
def flat(o, p=""):
    if isinstance(o, dict):
        r = {}
        for k, v in o.items():
            if k in ("lastTransitionTime", "resourceVersion", "managedFields", "time"):
                continue
            r.update(flat(v, p + "." + k))
        return r
    if isinstance(o, list) and all(isinstance(x, dict) and "type" in x for x in o):
        r = {}
        for x in o:
            r.update(flat(x, p + "[" + x["type"] + "]"))
        return r
    return {p: json.dumps(o)}
dec = json.JSONDecoder()
text = sys.stdin.read()
i, seen = 0, []
while i < len(text):
    while i < len(text) and text[i].isspace():
        i += 1
    if i >= len(text):
        break
    o, i = dec.raw_decode(text, i)
    seen.append(o)
seen.sort(key=lambda o: int(o["metadata"]["resourceVersion"]))
last = {}
for o in seen:
    k = o["kind"] + "/" + o["metadata"]["name"]
    f = flat({"metadata": {x: o["metadata"].get(x) for x in ("finalizers", "ownerReferences", "annotations", "generation")}, "status": o.get("status", {})})
    old = last.get(k)
    last[k] = f
    if old is None:
        print(k, "first seen")
        continue
    ch = sorted(x for x in set(f) | set(old) if f.get(x) != old.get(x))
    if ch:
        print(k, "; ".join("%s=%s" % (x, f.get(x, "-")[:60]) for x in ch))
'
