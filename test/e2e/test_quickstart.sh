#!/usr/bin/env bash
# hack/quickstart.sh, as a user runs it (with its own state directory and super cluster, and
# this build): it prints each component's readiness with timings, the tenant's namespaces and
# an `export KUBECONFIG=...` line that works from the host with TLS verified; a second run says
# it is already up; `--down` stops every process it started and removes its state.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

qs=$NESTCP_SOURCE_DIR/hack/quickstart.sh
export NESTCP_QUICKSTART_DIR=$work/quickstart
export NESTCP_QUICKSTART_BUILD_DIR=$NESTCP_BUILD_DIR
export NESTCP_QUICKSTART_POD_NETWORK=$pod_net
qs_cleanup() {
    [ -d "$NESTCP_QUICKSTART_DIR" ] && "$qs" --down >/dev/null 2>&1
    cleanup
}
trap qs_cleanup EXIT

t0=$(now)
"$qs" 2>&1 | tee "$work/up.txt" || fail "hack/quickstart.sh failed"
log "hack/quickstart.sh took $(elapsed "$t0") s"
for w in "etcd ready" "kube-apiserver ready" "kube-controller-manager ready" "control plane Ready"; do
    grep -Eq "^ +$w +[0-9.]+ s$" "$work/up.txt" || fail "no timing for '$w'"
done
line=$(grep -E '^ +export KUBECONFIG=' "$work/up.txt") || fail "no export KUBECONFIG line"
tkc=${line#*export KUBECONFIG=}
[ "$tkc" = "$NESTCP_QUICKSTART_DIR/tenant.kubeconfig" ] || fail "unexpected kubeconfig $tkc"
# As the user's shell would run it (the super cluster's KUBECONFIG is this test's own).
nss=$(KUBECONFIG=$tkc command kubectl --request-timeout=10s get namespaces \
    -o jsonpath='{.items[*].metadata.name}') || fail "the printed KUBECONFIG does not reach the tenant"
log "tenant namespaces through the printed KUBECONFIG: $nss"
[[ " $nss " == *" kube-system "* ]] || fail "no kube-system namespace in the tenant"
# A 1.36 tenant on the 1.37 super cluster, as the quickstart says.
tv=$(KUBECONFIG=$tkc command kubectl --request-timeout=10s version -o json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])')
[ "$tv" = v1.36.3 ] || fail "the tenant runs $tv, not v1.36.3"
grep -q "^The tenant runs Kubernetes v1.36.3 on a 1.37.2 super cluster" "$work/up.txt" ||
    fail "the quickstart does not say which versions run"
sv=$(command kubectl --kubeconfig "$NESTCP_QUICKSTART_DIR/kube/kubeconfig" version -o json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])')
[ "$sv" = v1.37.2 ] || fail "the quickstart's super cluster runs $sv, not v1.37.2"
log "tenant $tv on super cluster $sv"
[ -n "$(command kubectl config view --kubeconfig "$tkc" --raw \
    -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')" ] ||
    fail "the kubeconfig does not verify the server"

"$qs" >"$work/again.txt" 2>&1 || fail "a second run failed: $(cat "$work/again.txt")"
grep -q "already up" "$work/again.txt" || fail "a second run did not say it is up: $(cat "$work/again.txt")"
KUBECONFIG=$tkc command kubectl --request-timeout=10s get namespaces -o name >/dev/null ||
    fail "the refreshed kubeconfig does not reach the tenant"

started=$(cat "$NESTCP_QUICKSTART_DIR"/*.pid "$NESTCP_QUICKSTART_DIR"/kube/*.pid \
    "$NESTCP_QUICKSTART_DIR"/agent/pods/*/*.pid 2>/dev/null | sort -u)
log "processes started: $(wc -l <<<"$started") (manager, node agent, super cluster, tenant)"
[ "$(wc -l <<<"$started")" -ge 8 ] || fail "expected at least 8 processes, got: $started"
t1=$(now)
"$qs" --down || fail "hack/quickstart.sh --down failed"
log "--down took $(elapsed "$t1") s"
for p in $started; do
    kill -0 "$p" 2>/dev/null && fail "process $p is still running after --down"
done
left=$(pgrep -f "$NESTCP_QUICKSTART_DIR" || true)
[ -z "$left" ] || fail "processes naming the state directory are left: $left"
[ ! -e "$NESTCP_QUICKSTART_DIR" ] || fail "--down left $NESTCP_QUICKSTART_DIR"
grep -q "nothing to stop" <<<"$("$qs" --down)" || fail "a second --down did not say there is nothing to stop"
echo PASS
