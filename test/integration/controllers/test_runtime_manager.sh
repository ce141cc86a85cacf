#!/usr/bin/env bash
# `nestcp manager` as its own process against the real super cluster:
#   - it syncs its caches; /healthz and /readyz answer, /metrics parses as Prometheus text and
#     carries the build info; SIGTERM exits 0 quickly;
#   - with --leader-elect, of two replicas only one leads (both are ready); after kill -9 of the
#     leader the standby takes over within lease duration + retry period (the time is printed);
#     SIGTERM releases the Lease; a leader whose Lease is taken from it exits 1 with a clear line.
set -euo pipefail
: "${KUBECONFIG:?KUBECONFIG must point at the super cluster}"
: "${NESTCP_BIN:?}"
: "${NESTCP_SOURCE_DIR:?}"

ns=runtime-mgr-$$
work=$(mktemp -d)
pids=()
kubectl() { command kubectl --request-timeout=30s "$@"; }

cleanup() {
    for p in "${pids[@]}"; do
        kill -9 "$p" 2>/dev/null || true
    done
    kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*" >&2
    for f in "$work"/*.log; do
        [ -e "$f" ] || continue
        echo "--- $(basename "$f")" >&2
        tail -n 20 "$f" >&2
    done
    exit 1
}

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

# start NAME ARGS...: runs the manager in the background; its log is $work/NAME.log.
start() {
    local name=$1
    shift
    "$NESTCP_BIN" manager --namespace "$ns" "$@" >"$work/$name.log" 2>&1 &
    pids+=($!)
    eval "pid_$name=$!"
}

# port NAME KEY: the port the manager logged for KEY (metrics_port or health_port).
port() {
    local p
    for _ in $(seq 1 100); do
        p=$(grep -o "$2=[0-9]*" "$work/$1.log" 2>/dev/null | head -n 1 | cut -d= -f2)
        [ -n "$p" ] && { echo "$p"; return 0; }
        sleep 0.1
    done
    fail "$1 did not log its $2"
}

code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$1$2" || true; }
metric() { curl -s --max-time 5 "http://127.0.0.1:$1/metrics" | awk -v k="$2" '$1 == k { print $2 }'; }

# until_true SECONDS CMD...: polls CMD every 0.1 s.
until_true() {
    local end
    end=$(awk -v s="$1" -v n="$(now)" 'BEGIN { printf "%.3f", n + s }')
    shift
    while ! "$@"; do
        awk -v e="$end" -v n="$(now)" 'BEGIN { exit !(n > e) }' && return 1
        sleep 0.1
    done
}

# never SECONDS CMD...: fails (returns 1) as soon as CMD succeeds within SECONDS, polling
# every 0.1 s: a property that must hold over a window, not a wait.
never() {
    local end
    end=$(awk -v s="$1" -v n="$(now)" 'BEGIN { printf "%.3f", n + s }')
    shift
    while awk -v e="$end" -v n="$(now)" 'BEGIN { exit !(n <= e) }'; do
        "$@" && return 1
        sleep 0.1
    done
    return 0
}

is_code() { [ "$(code "$1" "$2")" = "$3" ]; }
is_metric() { [ "$(metric "$1" "$2")" = "$3" ]; }
exited() { ! kill -0 "$1" 2>/dev/null; }

# stop_and_wait PID: SIGTERM, then its exit status in $rc (not in a subshell: wait needs the
# manager to be this shell's child).
stop_and_wait() {
    rc=0
    kill -TERM "$1"
    wait "$1" || rc=$?
}

. "$NESTCP_SOURCE_DIR/test/support/crds.sh"
crds_install --no-capi || fail "the CRDs are not established"
kubectl create namespace "$ns" >/dev/null

# --- one replica ---
start solo --metrics-bind-address 127.0.0.1:0 --metrics-secure=false --health-probe-bind-address localhost:0
mport=$(port solo metrics_port)
hport=$(port solo health_port)
[ "$mport" != "$hport" ] || fail "metrics and health share port $mport"
is_code "$hport" /healthz 200 || fail "/healthz did not answer 200"
until_true 60 is_code "$hport" /readyz 200 || fail "/readyz not 200 within 60 s"
[ "$(code "$hport" /metrics)" = 404 ] || fail "/metrics served on the health port"
scrape=$(curl -s --max-time 5 "http://127.0.0.1:$mport/metrics")
ctype=$(curl -s -o /dev/null -w '%{content_type}' --max-time 5 "http://127.0.0.1:$mport/metrics")
case "$ctype" in "text/plain; version=0.0.4"*) ;; *) fail "content type $ctype" ;; esac
bad=$(printf '%s\n' "$scrape" |
    grep -Ev '^(# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .*|[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})? (-?[0-9.e+-]+|[+-]Inf|NaN))$' || true)
[ -z "$bad" ] || fail "lines that are not Prometheus text: $bad"
grep -q '^nestcp_build_info{version="[^"]*",commit="[^"]*"} 1$' <<<"$scrape" ||
    fail "no nestcp_build_info"
grep -q '^nestcp_informer_synced{resource="secrets"} 1$' <<<"$scrape" ||
    fail "the Secrets cache is not synced"
is_metric "$mport" 'leader_election_master_status{name="nestcp-manager"}' 1 ||
    fail "without leader election the replica should report itself leading"
t0=$(now)
stop_and_wait "$pid_solo"
took=$(elapsed "$t0")
echo "SIGTERM: exit $rc after ${took} s"
[ "$rc" = 0 ] || fail "exit status $rc after SIGTERM"
awk -v t="$took" 'BEGIN { exit !(t < 5) }' || fail "SIGTERM took $took s"

# Plain, unauthenticated metrics are refused anywhere but on a loopback address.
if "$NESTCP_BIN" manager --kubeconfig "$KUBECONFIG" --namespace "$ns" \
    --templates "$NESTCP_SOURCE_DIR/templates" --metrics-secure=false \
    --metrics-bind-address 0.0.0.0:0 --health-probe-bind-address 127.0.0.1:0 \
    >"$work/insecure.log" 2>&1; then
    fail "the manager served plain metrics on every interface"
fi
grep -q 'are served only on a loopback address' "$work/insecure.log" ||
    fail "no clear refusal of plain metrics on 0.0.0.0: $(cat "$work/insecure.log")"

# --- leader election ---
# The renew deadline counts from the start of the acquiring attempt, which a freshly started,
# sanitizer-slowed server can stretch past a second: keep it well above that.
lease=(--leader-elect --leader-election-namespace "$ns" --leader-elect-lease-duration 6s
    --leader-elect-renew-deadline 4s --leader-elect-retry-period 500ms
    --metrics-bind-address 127.0.0.1:0 --metrics-secure=false --health-probe-bind-address 127.0.0.1:0)
holder() { kubectl get lease nestcp-manager -n "$ns" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null || true; }
identity() { grep -o 'waiting for leadership.*identity=[^ ]*' "$work/$1.log" | sed 's/.*identity=//'; }

start a "${lease[@]}"
aport=$(port a metrics_port)
until_true 60 is_metric "$aport" 'leader_election_master_status{name="nestcp-manager"}' 1 ||
    fail "a did not become leader"
start b "${lease[@]}"
bport=$(port b metrics_port)
until_true 60 is_code "$bport" /readyz 200 || fail "standby b not ready"
saw_a() { grep -q "leader changed.*leader=$(identity a)" "$work/b.log"; }
until_true 30 saw_a || fail "b never read the Lease that a holds"
# b has read a's Lease; for four of its retry periods it must stay a standby.
never 2 is_metric "$bport" 'leader_election_master_status{name="nestcp-manager"}' 1 ||
    fail "b leads while a holds the Lease"
is_metric "$bport" 'leader_election_master_status{name="nestcp-manager"}' 0 ||
    fail "b does not report itself a standby"
[ "$(holder)" = "$(identity a)" ] || fail "Lease holder '$(holder)' is not a ('$(identity a)')"

kill -9 "$pid_a"
wait "$pid_a" 2>/dev/null || true
t0=$(now)
until_true 15 is_metric "$bport" 'leader_election_master_status{name="nestcp-manager"}' 1 ||
    fail "b did not take over"
took=$(elapsed "$t0")
echo "kill -9 of the leader: the standby took over after ${took} s (lease 6 s + retry 0.5 s)"
awk -v t="$took" 'BEGIN { exit !(t <= 6 + 0.5 + 2.5) }' || fail "takeover took $took s"
[ "$(holder)" = "$(identity b)" ] || fail "Lease holder '$(holder)' is not b"
grep -q 'became leader' "$work/b.log" || fail "b did not log that it became leader"

t0=$(now)
stop_and_wait "$pid_b"
echo "SIGTERM of the leader: exit $rc after $(elapsed "$t0") s"
[ "$rc" = 0 ] || fail "b exited $rc after SIGTERM"
[ -z "$(holder)" ] || fail "b did not release the Lease (holder '$(holder)')"

# A leader whose Lease names someone else stops and exits 1.
start c "${lease[@]}"
cport=$(port c metrics_port)
until_true 30 is_metric "$cport" 'leader_election_master_status{name="nestcp-manager"}' 1 ||
    fail "c did not become leader"
kubectl patch lease nestcp-manager -n "$ns" --type merge \
    -p '{"spec":{"holderIdentity":"someone-else","leaseDurationSeconds":60}}' >/dev/null
until_true 10 exited "$pid_c" || fail "c still runs after losing its Lease"
rc=0
wait "$pid_c" || rc=$?
[ "$rc" = 1 ] || fail "c exited $rc after losing its Lease, want 1"
grep -q 'leader election lost' "$work/c.log" || fail "c did not say why it stopped"
echo "PASS"
