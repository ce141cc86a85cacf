#!/usr/bin/env bash
# Kubernetes' own conformance tests against a tenant nestcp created: the e2e.test binary of the
# tenant's release (hack/kube-build.sh conformance 1.36.3) runs the [Conformance] tests listed
# in conformance-focus.txt, those that need no schedulable node (a nestcp tenant has none):
# API machinery, CRDs, watch, field validation, RBAC, service accounts, ... They check
# nestcp's flags, certificates, service-account issuer and front-proxy wiring with tests
# nobody here wrote. Ginkgo's dry-run count of every conformance test is printed next to the
# results; any failure fails the test.
#
#   NESTCP_CONFORMANCE_FOCUS=REGEX   run these conformance tests instead of the list (by hand)
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

version=1.36.3
here=$(cd "$(dirname "$0")" && pwd)
e2e=$("$NESTCP_SOURCE_DIR/hack/kube-build.sh" conformance "$version")/e2e.test
tkubectl_bin=$("$NESTCP_SOURCE_DIR/hack/kube-build.sh" kubernetes "$version")/kubectl

setup
tenant_manifest conf "$version" 1 1 >"$work/conf.yaml"
t0=$(now)
kubectl -n "$ns" apply -f "$work/conf.yaml" >/dev/null
wait_ready conf 300 "$t0"
kc=$work/conf.kubeconfig
tenant_kubeconfig conf "$kc"

# The focus: one regular expression per line of conformance-focus.txt (comments and blank
# lines skipped), each matched against the full test name.
if [ -n "${NESTCP_CONFORMANCE_FOCUS:-}" ]; then
    focus=$NESTCP_CONFORMANCE_FOCUS
else
    focus=$(grep -v '^[[:space:]]*\(#\|$\)' "$here/conformance-focus.txt" | paste -sd '|')
fi
[ -n "$focus" ] || fail "empty focus list"
# A tenant has no nodes: no waiting for nodes or daemon sets, no node count to detect.
args=(--kubeconfig "$kc" --provider skeleton --num-nodes 0 --allowed-not-ready-nodes -1
    --kubectl-path "$tkubectl_bin" --ginkgo.label-filter Conformance --ginkgo.no-color
    --ginkgo.timeout 20m)

"$e2e" "${args[@]}" --ginkgo.dry-run >"$work/all.txt" 2>&1 ||
    fail "e2e.test --ginkgo.dry-run failed: $(tail -n 20 "$work/all.txt")"
all=$(sed -n 's/^Ran \([0-9]*\) of \([0-9]*\) Specs.*/\1/p' "$work/all.txt" | tail -n 1)
"$e2e" "${args[@]}" --ginkgo.focus "$focus" --ginkgo.dry-run >"$work/focus.txt" 2>&1 ||
    fail "e2e.test --ginkgo.dry-run with the focus failed: $(tail -n 20 "$work/focus.txt")"
want=$(sed -n 's/^Ran \([0-9]*\) of \([0-9]*\) Specs.*/\1/p' "$work/focus.txt" | tail -n 1)
log "conformance tests in e2e.test $version: ${all:-?}; selected by the focus list: ${want:-?}"
[ -n "$want" ] && [ "$want" -gt 0 ] || fail "the focus list selects no test: $(tail -n 5 "$work/focus.txt")"
# Every line of the list must still name a test, or the list silently shrinks.
if [ -z "${NESTCP_CONFORMANCE_FOCUS:-}" ]; then
    "$e2e" "${args[@]}" --ginkgo.focus "$focus" --ginkgo.dry-run --ginkgo.v 2>&1 |
        grep '^\[sig-' >"$work/names.txt" || true
    python3 - "$here/conformance-focus.txt" "$work/names.txt" <<'PY' || fail "the focus list names tests $version does not have"
import re, sys
names = open(sys.argv[2]).read().splitlines()
bad = [l.strip() for l in open(sys.argv[1])
       if l.strip() and not l.lstrip().startswith("#")
       and not any(re.search(l.strip(), n) for n in names)]
for b in bad:
    print("conformance-focus.txt: %r selects no test" % b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
fi

t1=$(now)
rc=0
"$e2e" "${args[@]}" --ginkgo.focus "$focus" --report-dir "$work/report" >"$work/run.txt" 2>&1 || rc=$?
summary=$(grep -E '^(SUCCESS|FAIL)! -- [0-9]+ Passed \| [0-9]+ Failed' "$work/run.txt" | tail -n 1)
ran=$(sed -n 's/^Ran \([0-9]*\) of \([0-9]*\) Specs.*/\1 of \2/p' "$work/run.txt" | tail -n 1)
log "conformance against the nestcp tenant ($version): ran ${ran:-?} specs in $(elapsed "$t1") s: ${summary:-no summary}"
if [ "$rc" != 0 ]; then
    grep -E '^\s*\[FAIL\]' "$work/run.txt" | sort -u | head -n 20 >&2 || true
    tail -n 40 "$work/run.txt" >&2
    # What the tenant said meanwhile, to tell a slow machine from a fault: the API server's
    # traces of slow requests and errors about custom resources, etcd's slow applies and
    # fsyncs, and the machine's load.
    echo "---- load: $(cat /proc/loadavg)" >&2
    for f in "$agent_state/pods/${ns}_conf-apiserver-0"/*.log; do
        [ -f "$f" ] || continue
        echo "---- ${f#"$agent_state"/pods/}: slow requests and custom resources (last 40)" >&2
        grep -E 'Trace\[|customresource|crd|CustomResourceDefinition' "$f" | tail -n 40 >&2 || true
    done
    for f in "$agent_state/pods/${ns}_conf-etcd-0"/*.log; do
        [ -f "$f" ] || continue
        echo "---- ${f#"$agent_state"/pods/}: slow applies and fsyncs (last 20)" >&2
        grep -E 'took too long|slow fdatasync|slow' "$f" | tail -n 20 >&2 || true
    done
    fail "conformance tests failed (exit $rc)"
fi
case "$summary" in "SUCCESS! -- $want Passed | 0 Failed"*) ;; *) fail "unexpected summary: $summary (want $want passed)" ;; esac
finish
