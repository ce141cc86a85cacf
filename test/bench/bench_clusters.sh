#!/usr/bin/env bash
# N tenant control planes applied at once to a manager running against the real super cluster,
# against a raw client creating the same objects on the same apiserver in the same run.
#
#   eval "$(hack/kube-env.sh up)"
#   NESTCP_BIN=build/nestcp test/bench/bench_clusters.sh            # N = 10, 100, 500
#   BENCH_CLUSTERS="10 50" NESTCP_BIN=build/nestcp test/bench/bench_clusters.sh
#   BENCH_CLUSTERS=1000 BENCH_ETCD=fake NESTCP_BIN=build/nestcp test/bench/bench_clusters.sh
#
# NESTCP_FAKE_KUBELET defaults to test/nodeagent/nestcp-fake-kubelet next to NESTCP_BIN, and
# NESTCP_FAKE_ETCD (BENCH_ETCD=fake) to nestcp-fake-etcd beside it.
# For each N it prints:
#   - objects: seconds until every cluster has its 8 Secrets, 3 Services and 3 StatefulSets
#     (nestcp-fake-kubelet marks Pods ready, so the rollout gates open as they would);
#   - ready:   seconds until every NestedControlPlane is Ready;
#   - requests per cluster the manager made (its plan actions, and every HTTP request of its
#     client including lists and watches), from its /metrics;
#   - the manager's peak RSS (VmHWM), and what its caches hold once every control plane is
#     Ready: heap MiB of all cached objects, and per kind the objects and bytes per object
#     (nestcp_informer_objects and nestcp_informer_bytes), printed after the table;
#   - whether creation was clean: the manager's plan actions answered otherwise than 2xx (409
#     conflicts above all), Warning Events in the namespace, container restarts;
#   - raw: `nestcp render` of the same clusters applied with `kubectl apply` in another
#     namespace (no readiness gates, no status, no key generation while applying), with the
#     same pod machinery running there (the super cluster's kube-controller-manager creating
#     Pods, the same kubelets marking them ready; the etcd Pods' scheduling gate, which nestcp
#     lifts, is left out): raw_s until the objects are created, raw_ready_s until every
#     StatefulSet has its replicas ready, and the ratios ready_s / raw_ready_s and
#     objects_s / raw_s;
#   - the manager's CPU seconds from apply to every control plane Ready;
#   - the steady state after that, for BENCH_STEADY seconds (default 300, 0 skips it): the
#     manager's HTTP requests, its writes (plan actions) and CPU seconds, per minute.
# The manager runs with GNUTLS_NO_IMPLICIT_INIT=1, as the image sets it (Dockerfile);
# BENCH_GNUTLS_INIT=1 runs it without (gnutls initialised when libcurl loads it, 0.8 MiB more).
# BENCH_PERF=DIR records the manager with perf(1) from apply to every control plane Ready
# (user-space cpu-clock samples at 99 Hz, DWARF call graphs) into DIR/perf-N.data.
# BENCH_HEAPTRACK=DIR runs the manager under heaptrack(1) from its start to its end, into
# DIR/heap-N.zst (or .gz): every allocation with its call stack, for `heaptrack_print
# --print-peaks 1 --print-allocators 1` (where the peak heap is). heaptrack's own buffers add
# to the RSS, so the peak_MiB of such a run is not the manager's: compare runs without it.
# BENCH_ETCD=real (default) runs each etcd member as a process (nestcp-nodeagent), as the
# tests do; BENCH_ETCD=fake, for N at which a machine cannot run N etcd processes (N = 1,000),
# runs none: nestcp-fake-kubelet marks the etcd Pods ready too, with an IP of a claimed pod
# network (test/support/podnet.sh), where nestcp-fake-etcd (NESTCP_FAKE_ETCD, beside the fake
# kubelet) answers the manager's etcd calls for every etcd Pod of the namespace: a benchmark
# stand-in that serves each Pod's certificate from its certs Secret by SNI and lists the
# members its initial cluster names (test/nodeagent/README.md). The manager talks to it as to
# etcd, TLS verified both ways; nothing of the product changes.
# Progress is read from the manager's /metrics (its caches' object counts and
# nestcp_control_planes_ready), not by listing thousands of Secrets with kubectl every half
# second, which at N=500 loads the apiserver more than the manager does; kubectl counts
# the objects once at the end and a mismatch is reported. Between two N the namespaces are
# deleted and waited for, so one N's teardown does not run during the next one's clock.
# BENCH_SAVE=DIR keeps, for each N, the lists of the kinds the manager caches as the server holds
# them once every control plane is Ready (DIR/N/<kind>.json, managed fields included), the input
# of test/bench/bench_cachekeep, and the manager's last /metrics scrape (DIR/N/metrics.txt).
# The manager's log of each N is kept whatever happens, as DIR/N/manager.log, or without
# BENCH_SAVE in a directory of its own under /tmp; the paths are printed at the end (the rest of
# the work directory is removed on exit unless NESTED_TEST_KEEP=1). After the counts of plan
# actions answered otherwise than 2xx, the lines of the log that name those actions are printed:
# at the default log level (MANAGER_LOG_LEVEL, info) a conflict, a rejection or a failure (a
# failed etcd call is logged as one too), and a create answered 409 whose object was read back;
# the 409 before a claimed apply, only at debug.
# Figures only; nothing is asserted. Not part of CTest.
set -euo pipefail
: "${KUBECONFIG:?run inside a super cluster: eval \"\$(hack/kube-env.sh up)\"}"
: "${NESTCP_BIN:?set NESTCP_BIN to the nestcp binary}"
NESTCP_FAKE_KUBELET=${NESTCP_FAKE_KUBELET:-$(dirname "$NESTCP_BIN")/test/nodeagent/nestcp-fake-kubelet}
export NESTCP_FAKE_KUBELET
NESTCP_BUILD_DIR=${NESTCP_BUILD_DIR:-$(dirname "$NESTCP_BIN")}
export NESTCP_BUILD_DIR
NESTCP_FAKE_ETCD=${NESTCP_FAKE_ETCD:-$(dirname "$NESTCP_FAKE_KUBELET")/nestcp-fake-etcd}
NESTCP_SOURCE_DIR=${NESTCP_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
export NESTCP_SOURCE_DIR
. "$NESTCP_SOURCE_DIR/test/integration/controllers/lib.sh"
# The manager runs as its image runs it (Dockerfile): without gnutls's initialisation at load
# time, which Debian's libcurl pulls in through libraries nestcp never uses. BENCH_GNUTLS_INIT=1
# measures it with that initialisation, as a binary started by hand without the setting is.
[ "${BENCH_GNUTLS_INIT:-0}" = 1 ] || export GNUTLS_NO_IMPLICIT_INIT=1

# On a fresh super cluster kubectl 1.32's `wait --for condition` can fail on a CRD that has no
# status yet; the second attempt finds them established.
(install_crds 2>/dev/null) || install_crds

# clusters N [FROM]: standalone control planes bFROM .. b(N-1).
clusters() {
    local i
    for ((i = ${2:-0}; i < $1; i++)); do
        cat <<EOF
---
apiVersion: controlplane.cluster.x-k8s.io/v1beta1
kind: NestedControlPlane
metadata: {name: b$i, labels: {cluster.x-k8s.io/cluster-name: b$i}}
spec:
  version: "1.36.3"
  etcd: {kind: NestedEtcd, name: b$i-etcd}
  apiserver: {kind: NestedAPIServer, name: b$i-apiserver}
  controllerManager: {kind: NestedControllerManager, name: b$i-cm}
---
apiVersion: controlplane.cluster.x-k8s.io/v1beta1
kind: NestedEtcd
metadata: {name: b$i-etcd, labels: {cluster.x-k8s.io/cluster-name: b$i}}
spec: {replicas: 1}
---
apiVersion: controlplane.cluster.x-k8s.io/v1beta1
kind: NestedAPIServer
metadata: {name: b$i-apiserver, labels: {cluster.x-k8s.io/cluster-name: b$i}}
spec: {replicas: 1}
---
apiVersion: controlplane.cluster.x-k8s.io/v1beta1
kind: NestedControllerManager
metadata: {name: b$i-cm, labels: {cluster.x-k8s.io/cluster-name: b$i}}
spec: {replicas: 1}
EOF
    done
}

count() { kubectl -n "$1" get "$2" -o name 2>/dev/null | wc -l; }
# pods_run NS: what runs the Pods of NS, in the background (BENCH_ETCD above).
pods_run() {
    local ip
    if [ "${BENCH_ETCD:-real}" = fake ]; then
        # The claim lasts while these processes hold its descriptor.
        podnet_claim || fail "no free pod network"
        ip=127.$podnet.0.2
        "$NESTCP_FAKE_KUBELET" --kubeconfig "$KUBECONFIG" --namespace "$1" --pod-ip "$ip" \
            >>"$work/kubelet-$1.log" 2>&1 &
        pids+=($!)
        "$NESTCP_FAKE_ETCD" --kubeconfig "$KUBECONFIG" --namespace "$1" --listen "$ip:2379" \
            >>"$work/etcd-$1.log" 2>&1 &
        pids+=($!)
    else
        fake_kubelet "$1"
    fi
}
# cpu_s PID: the user and system CPU seconds of a process so far.
cpu_s() {
    awk -v t="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); printf "%.2f", ($12 + $13) / t }' "/proc/$1/stat"
}
# sts_ready NS N [FIELD]: every one of the N StatefulSets of NS has its replicas ready (or
# FIELD, e.g. availableReplicas).
sts_ready() {
    [ "$(kubectl -n "$1" get statefulsets --request-timeout=60s \
        -o jsonpath="{range .items[*]}{.spec.replicas} {.status.${3:-readyReplicas}}{\"\\n\"}{end}" \
        2>/dev/null | awk '$1 == $2 { r++ } END { printf "%d", r }')" -ge "$2" ]
}
# ungate: the rendered objects (a v1 List) as a raw client must apply them: the etcd Pods carry
# no scheduling gate, and their initial cluster, which nestcp writes on each Pod when it lifts
# the gate, is written into the template (every member of a new cluster, state "new").
ungate() {
    python3 -c '
import json, sys
l = json.load(sys.stdin)
for o in l["items"]:
    if o.get("kind") != "StatefulSet":
        continue
    pod = o["spec"]["template"]["spec"]
    pod.pop("schedulingGates", None)
    name, ns = o["metadata"]["name"], o["metadata"]["namespace"]
    members = ",".join("%s-%d=https://%s-%d.%s.%s.svc:2380" % (name, i, name, i, name, ns)
                       for i in range(o["spec"]["replicas"]))
    for c in pod["containers"]:
        for e in c.get("env", []):
            if e["name"] == "NESTCP_INITIAL_CLUSTER":
                e.pop("valueFrom"); e["value"] = members
            elif e["name"] == "NESTCP_INITIAL_CLUSTER_STATE":
                e.pop("valueFrom"); e["value"] = "new"
json.dump(l, sys.stdout)'
}
ready_count() {
    kubectl -n "$1" get ncp -o jsonpath='{range .items[*]}{.status.ready}{"\n"}{end}' |
        grep -c '^true$' || true
}
# metric SAMPLE: one sample of the running manager, e.g. 'nestcp_informer_objects{resource="secrets"}'.
# A busy manager on a loaded machine may not answer within the timeout: then 0.
metric() {
    { curl -s --max-time 5 "http://127.0.0.1:$mgr_metrics/metrics" || true; } |
        awk -v k="$1" '$1 == k { v = $2 } END { printf "%d", v }'
}
cached() { metric "nestcp_informer_objects{resource=\"$1\"}"; }
# The figures at the end come from one scrape, retried until the manager answers;
# final KEY and final_sum FAMILY read it.
scrape_final() {
    local i
    for i in 1 2 3 4 5 6; do
        curl -s --max-time 10 "http://127.0.0.1:$mgr_metrics/metrics" >"$work/final.txt" && return 0
    done
    echo "N=$n: the manager's metrics did not answer" >&2
}
final() { awk -v k="$1" '$1 == k { v = $2 } END { printf "%d", v }' "$work/final.txt"; }
# codes FILE: plan actions answered with anything but 2xx (or 404 to a DELETE, which counts as
# done), by verb and code, "patch:409=12 create:none=1", from a scrape; "-" when none.
codes() {
    local c
    c=$(awk '/^nestcp_api_requests_total\{/ && !/code="2[0-9][0-9]"/ && $2 > 0 &&
        !(/verb="delete"/ && /code="404"/) {
        c = $1; sub(/.*code="/, "", c); sub(/".*/, "", c)
        v = $1; sub(/.*verb="/, "", v); sub(/".*/, "", v); n[v ":" c] += $2 }
        END { for (k in n) printf "%s=%d ", k, n[k] }' "$1" 2>/dev/null)
    echo "${c:--}"
}
# verbs FILE: plan actions by verb and code, "verb:code count" per line, from a scrape.
verbs() {
    awk '/^nestcp_api_requests_total\{/ {
        c = $1; sub(/.*code="/, "", c); sub(/".*/, "", c)
        v = $1; sub(/.*verb="/, "", v); sub(/".*/, "", v); n[v ":" c] += $2 }
        END { for (k in n) print k, n[k] }' "$1" | sort
}
final_sum() {
    awk -v k="$1" '$1 == k || index($1, k "{") == 1 { s += $2 } END { printf "%d", s }' \
        "$work/final.txt"
}
# The managers' logs, which outlive the work directory.
logs=${BENCH_SAVE:-$(mktemp -d "${TMPDIR:-/tmp}/nestcp-bench-clusters.XXXXXX")}
mkdir -p "$logs"
logs=$(cd "$logs" && pwd)
# refused FILE: the lines of a manager's log about plan actions answered otherwise than 2xx
# (lib/ctrl/executor.c), the first 50 of them, then how many more there are.
refused() {
    { grep -E 'action (conflicted|failed|rejected)|found an existing object the caches do not hold|claim check' \
        "$1" || true; } |
        awk -v f="$1" 'NR <= 50 { print } END { if (NR > 50) printf "... %d more in %s\n", NR - 50, f }'
}
# The resources the manager caches, as its metrics label them.
kinds="nestedcontrolplanes nestedetcds nestedapiservers nestedcontrollermanagers nestedclusters
clusters secrets services statefulsets pods persistentvolumeclaims configmaps networkpolicies"

# teardown NS...: with the manager gone, frees the control planes' finalizers in one kubectl
# call, then deletes the namespaces and waits until they are gone.
teardown() {
    local n
    for n in "$@"; do
        kubectl -n "$n" get ncp -o json | python3 -c '
import json, sys
l = json.load(sys.stdin)
for o in l["items"]:
    o["metadata"].pop("finalizers", None)
json.dump(l, sys.stdout)' | kubectl replace -f - >/dev/null 2>&1 || true
    done
    kubectl delete namespace "$@" --timeout=900s >/dev/null 2>&1 ||
        echo "namespaces $* still terminating" >&2
}

printf '%-6s %10s %10s %14s %14s %10s %10s %8s %10s %12s %9s %9s %10s\n' N objects_s ready_s \
    actions/clust http/cluster peak_MiB cache_MiB cpu_s raw_s raw_ready_s ready/raw obj/raw load1
: >"$work/caches.txt"
: >"$work/steady.txt"
: >"$work/steady-verbs.txt"
: >"$work/clean.txt"
: >"$work/warnings.txt"
: >"$work/rss.txt"
for n in ${BENCH_CLUSTERS:-10 100 500}; do
    ns=bench-$n-$$
    raw=bench-raw-$n-$$
    new_namespace "$ns"
    new_namespace "$raw"
    clusters "$n" >"$work/clusters-$n.yaml"
    pods_run "$ns"
    # The manager logs where its log is kept: start_manager's $work/mgr-N.log links there.
    mkdir -p "$logs/$n"
    : >"$logs/$n/manager.log"
    ln -sf "$logs/$n/manager.log" "$work/mgr-$n.log"
    if [ -n "${BENCH_HEAPTRACK:-}" ]; then
        # The manager as heaptrack's child; mgr_pid is then the manager itself (VmHWM, CPU,
        # the signal that ends it) and heap_pid heaptrack, waited for so its file is complete.
        printf '#!/bin/sh\nexec heaptrack -o "%s/heap-%s" "%s" "$@"\n' "$BENCH_HEAPTRACK" "$n" \
            "$(realpath "$NESTCP_BIN")" >"$work/heaptrack-$n.sh"
        chmod +x "$work/heaptrack-$n.sh"
        NESTCP_BIN="$work/heaptrack-$n.sh" start_manager "mgr-$n" "$ns" --concurrency 8
        heap_pid=$mgr_pid
        mgr_pid=$(pgrep -P "$heap_pid" -x "$(basename "$NESTCP_BIN")")
    else
        start_manager "mgr-$n" "$ns" --concurrency 8
    fi
    until_true 60 [ "$(metric_sum nestcp_informer_synced)" -ge 9 ] || true
    load0=$(cut -d' ' -f1 /proc/loadavg)

    curl -s --max-time 10 "http://127.0.0.1:$mgr_metrics/metrics" >"$work/start.txt" || true
    actions0=$(metric_sum nestcp_api_requests_total)
    http0=$(metric_sum nestcp_kube_client_requests_total)
    if [ -n "${BENCH_PERF:-}" ]; then
        perf record -e cpu-clock:u -F 99 --call-graph dwarf,16384 -p "$mgr_pid" \
            -o "$BENCH_PERF/perf-$n.data" >"$work/perf-$n.log" 2>&1 &
        perf_pid=$!
    fi
    cpu0=$(cpu_s "$mgr_pid")
    t0=$(now)
    kubectl -n "$ns" apply -f "$work/clusters-$n.yaml" >/dev/null
    # One scrape a poll: each one walks every control plane for the cluster metrics, and at
    # N = 500 the polls were a sixth of the manager's CPU when each read one figure.
    all_objects() {
        { curl -s --max-time 5 "http://127.0.0.1:$mgr_metrics/metrics" || true; } | awk -v n="$n" '
            $1 == "nestcp_informer_objects{resource=\"secrets\"}" { s = $2 }
            $1 == "nestcp_informer_objects{resource=\"services\"}" { v = $2 }
            $1 == "nestcp_informer_objects{resource=\"statefulsets\"}" { t = $2 }
            END { exit !(s >= n * 8 && v >= n * 3 && t >= n * 3) }'
    }
    # Polled as the raw client's StatefulSets are below: every half second up to N = 100, then
    # more slowly. Each scrape is a walk of every control plane, and at N = 1,000 a poll every
    # half second was a large share of the manager's CPU (a Prometheus scrapes every 15 to
    # 60 s); the times are then known to a second per 100 clusters.
    poll=$(awk -v n="$n" 'BEGIN { p = int((n + 99) / 100); print (n <= 100 ? 0.5 : p) }')
    POLL_S=$poll until_true $((120 + n * 4)) all_objects ||
        echo "N=$n: not every object after $(elapsed "$t0") s" >&2
    t_objects=$(elapsed "$t0")
    all_ready() { [ "$(metric nestcp_control_planes_ready)" -ge "$n" ]; }
    POLL_S=$poll until_true $((120 + n * 4)) all_ready ||
        echo "N=$n: $(metric nestcp_control_planes_ready) of $n Ready" >&2
    t_ready=$(elapsed "$t0")
    cpu=$(awk -v a="$cpu0" -v b="$(cpu_s "$mgr_pid")" 'BEGIN { printf "%.1f", b - a }')
    if [ -n "${BENCH_PERF:-}" ]; then
        kill -INT "$perf_pid"
        wait "$perf_pid" || true
    fi
    load1=$(cut -d' ' -f1 /proc/loadavg)
    # What the server holds, counted once, against what the clock was stopped on.
    for kind in secrets:8 services:3 statefulsets:3; do
        have=$(count "$ns" "${kind%:*}" | tr -d ' ')
        [ "$have" -ge $((n * ${kind#*:})) ] || echo "N=$n: only $have ${kind%:*} on the server" >&2
    done
    [ "$(ready_count "$ns")" -ge "$n" ] || echo "N=$n: only $(ready_count "$ns") Ready on the server" >&2
    sleep 2
    scrape_final
    actions=$(($(final_sum nestcp_api_requests_total) - actions0))
    # Creation is clean: no plan action refused, no Warning Event, no container restarted.
    warnings=$(kubectl -n "$ns" get events --field-selector type=Warning -o name | wc -l)
    # Who warned about what, counted, with one message of each.
    kubectl -n "$ns" get events --field-selector type=Warning \
        -o jsonpath='{range .items[*]}{.source.component} {.reason}{"\t"}{.message}{"\n"}{end}' |
        awk -F '\t' -v n="$n" '{ c[$1]++; m[$1] = $2 }
            END { for (k in c) printf "N=%s warnings: %d %s (e.g. %.160s)\n", n, c[k], k, m[k] }' |
        sort -t: -k2 -rn >>"$work/warnings.txt"
    restarts=$(kubectl -n "$ns" get pods \
        -o jsonpath='{range .items[*]}{range .status.containerStatuses[*]}{.restartCount}{"\n"}{end}{end}' |
        awk '{ s += $1 } END { printf "%d", s }')
    printf '%-6s %-24s %-24s %10s %10s\n' "$n" "$(codes "$work/start.txt")" "$(codes "$work/final.txt")" \
        "$warnings" "$restarts" >>"$work/clean.txt"
    http=$(($(final_sum nestcp_kube_client_requests_total) - http0))
    hwm=$(awk '/VmHWM/ { printf "%.1f", $2 / 1024 }' "/proc/$mgr_pid/status")
    # The resident memory once all are Ready, split: anonymous (the heap, stacks) and file
    # pages (the binary and its shared libraries).
    awk -v n="$n" '/^(VmHWM|VmRSS|RssAnon|RssFile):/ { m[$1] = $2 / 1024 }
        END { printf "%-6s %8.1f %8.1f %8.1f %8.1f\n", n, m["VmHWM:"], m["VmRSS:"], m["RssAnon:"],
            m["RssFile:"] }' "/proc/$mgr_pid/status" >>"$work/rss.txt"
    cache_total=0
    for kind in $kinds; do
        objs=$(final "nestcp_informer_objects{resource=\"$kind\"}")
        bytes=$(final "nestcp_informer_bytes{resource=\"$kind\"}")
        cache_total=$((cache_total + bytes))
        [ "$objs" -gt 0 ] || continue
        printf '%-6s %-26s %8d %10d %10.2f\n' "$n" "$kind" "$objs" $((bytes / objs)) \
            "$(awk -v b="$bytes" 'BEGIN { print b / 1048576 }')" >>"$work/caches.txt"
    done
    # The steady state: the converged control planes left alone, once every Pod is also
    # available (the API servers' minReadySeconds after Ready, which their status reports).
    steady=${BENCH_STEADY:-300}
    if [ "$steady" -gt 0 ]; then
        until_true 300 sts_ready "$ns" $((n * 3)) availableReplicas ||
            echo "N=$n: not every StatefulSet available" >&2
        scrape_final
        s_http0=$(final_sum nestcp_kube_client_requests_total)
        s_act0=$(final_sum nestcp_api_requests_total)
        s_cpu0=$(cpu_s "$mgr_pid")
        verbs "$work/final.txt" >"$work/steady0.txt"
        sleep "$steady" # the span measured, not a synchronisation
        scrape_final
        # What the writes were, by verb and code.
        verbs "$work/final.txt" | join -a 1 - "$work/steady0.txt" |
            awk -v n="$n" '$2 - $3 > 0 { printf "N=%s steady: %s x%d\n", n, $1, $2 - $3 }' \
                >>"$work/steady-verbs.txt"
        awk -v n="$n" -v m="$(awk -v s="$steady" 'BEGIN { print s / 60 }')" \
            -v h="$(($(final_sum nestcp_kube_client_requests_total) - s_http0))" \
            -v a="$(($(final_sum nestcp_api_requests_total) - s_act0))" \
            -v c="$(awk -v a="$s_cpu0" -v b="$(cpu_s "$mgr_pid")" 'BEGIN { print b - a }')" \
            -v l="$(cut -d' ' -f1 /proc/loadavg)" -v s="$steady" \
            'BEGIN { printf "%-6s %8d %14.1f %14.1f %14.2f %8s\n", n, s, h / m, a / m, c / m, l }' \
            >>"$work/steady.txt"
    fi
    kill -TERM "$mgr_pid"
    if [ -n "${BENCH_HEAPTRACK:-}" ]; then
        wait "$heap_pid" 2>/dev/null || true
    else
        wait "$mgr_pid" 2>/dev/null || true
    fi
    if [ -n "${BENCH_SAVE:-}" ]; then
        mkdir -p "$BENCH_SAVE/$n"
        cp "$work/final.txt" "$BENCH_SAVE/$n/metrics.txt"
        for kind in nestedcontrolplanes nestedetcds nestedapiservers nestedcontrollermanagers \
            secrets services statefulsets pods persistentvolumeclaims networkpolicies; do
            kubectl -n "$ns" get "$kind" -o json --show-managed-fields >"$BENCH_SAVE/$n/$kind.json"
        done
    fi

    # The raw client: render the same clusters (keys made before the clock starts) and apply
    # them where the same pod machinery runs. `nestcp render` takes at most 256 control planes
    # at once: 200 per call, one file each.
    files=()
    for ((from = 0; from < n; from += 200)); do
        clusters $((from + 200 < n ? from + 200 : n)) "$from" |
            sed "s/name: b\([0-9]*\)/name: r\1/g; s/cluster-name: b/cluster-name: r/g; s/-b\([0-9]\)/-r\1/g" \
                >"$work/raw-$n-$from.yaml"
        "$NESTCP_BIN" render --templates "$NESTCP_SOURCE_DIR/templates" -n "$raw" -o json \
            -f "$work/raw-$n-$from.yaml" | ungate >"$work/rendered-$n-$from.json"
        files+=(-f "$work/raw-$n-$from.yaml" -f "$work/rendered-$n-$from.json")
    done
    pods_run "$raw"
    t1=$(now)
    kubectl -n "$raw" apply "${files[@]}" >/dev/null
    t_raw=$(elapsed "$t1")
    # Polled more slowly as N grows (as the manager's metrics above): each poll lists every
    # StatefulSet.
    POLL_S=$poll until_true $((120 + n * 4)) sts_ready "$raw" $((n * 3)) ||
        echo "N=$n: the raw StatefulSets are not all ready" >&2
    t_raw_ready=$(elapsed "$t1")

    printf '%-6s %10s %10s %14s %14s %10s %10s %8s %10s %12s %9s %9s %10s\n' "$n" "$t_objects" \
        "$t_ready" "$(awk -v a="$actions" -v n="$n" 'BEGIN { printf "%.1f", a / n }')" \
        "$(awk -v a="$http" -v n="$n" 'BEGIN { printf "%.1f", a / n }')" "$hwm" \
        "$(awk -v b="$cache_total" 'BEGIN { printf "%.1f", b / 1048576 }')" "$cpu" "$t_raw" \
        "$t_raw_ready" \
        "$(awk -v a="$t_ready" -v b="$t_raw_ready" 'BEGIN { printf "%.2fx", (b > 0 ? a / b : 0) }')" \
        "$(awk -v a="$t_objects" -v b="$t_raw" 'BEGIN { printf "%.1fx", (b > 0 ? a / b : 0) }')" \
        "$load0-$load1"
    # The node agents delete their Pods while the namespaces go; then every kubelet stops.
    teardown "$ns" "$raw"
    kubelets_stop 2>/dev/null || true
    # SIGTERM: the stand-ins log what they did as they exit.
    for p in "${pids[@]}"; do
        kill -TERM "$p" 2>/dev/null || true
    done
    for p in "${pids[@]}"; do
        wait "$p" 2>/dev/null || true
    done
    pids=()
done
echo
printf '%-6s %8s %14s %14s %14s %8s\n' N steady_s http/min writes/min cpu_s/min load1
cat "$work/steady.txt"
cat "$work/steady-verbs.txt"
echo
printf '%-6s %-26s %8s %10s %10s\n' N cache objects bytes/obj MiB
cat "$work/caches.txt"
echo
printf '%-6s %8s %8s %8s %8s\n' N VmHWM VmRSS RssAnon RssFile
cat "$work/rss.txt"
echo
printf '%-6s %-24s %-24s %10s %10s\n' N non-2xx_before non-2xx_after warnings restarts
cat "$work/clean.txt"
cat "$work/warnings.txt"
for n in ${BENCH_CLUSTERS:-10 100 500}; do
    [ -e "$logs/$n/manager.log" ] || continue
    refused "$logs/$n/manager.log" | sed "s/^/N=$n refused: /"
done
echo
echo "non-2xx: the manager's plan actions answered otherwise than 2xx, by code, when the clock"
echo "started and once every control plane was Ready; warnings: Warning Events in the namespace;"
echo "restarts: container restarts its pods report; refused: the manager's log lines about its"
echo "plan actions answered otherwise than 2xx, over its whole run (the steady state included)."
echo "objects_s: until every cluster has all 14 objects; ready_s: until every control plane is"
echo "Ready; actions: the plan actions the controllers sent; http: every request of the"
echo "manager's client (lists, watches, events included); peak_MiB: the manager's peak RSS;"
echo "cache_MiB: heap of every cached object once all are Ready (per cache below); cpu_s: the"
echo "manager's CPU seconds from apply to all Ready; raw_s: kubectl apply of nestcp render's"
echo "output for the same clusters, raw_ready_s: until its StatefulSets are all ready with the"
echo "same pod machinery running; ready/raw = ready_s / raw_ready_s, obj/raw = objects_s / raw_s;"
echo "steady: the converged manager left alone (writes = plan actions);"
echo "VmHWM, VmRSS, RssAnon, RssFile (MiB): the manager's peak and resident memory once all are"
echo "Ready, the latter split into anonymous memory (heap, stacks) and file pages (libraries)."
echo "load1: the 1-minute load average when the manager's clock started and when every control"
echo "plane was Ready."
echo
for n in ${BENCH_CLUSTERS:-10 100 500}; do
    if [ -e "$logs/$n/manager.log" ]; then
        echo "N=$n manager log: $logs/$n/manager.log"
    fi
done
