#!/usr/bin/env bash
# Upgrades and configuration changes against the real super cluster, their order recorded
# from a StatefulSet watch:
#   - a jump of two minors (1.35 -> 1.37) is refused (Upgrading False, MinorSkipRefused, a
#     Warning event) and nothing changes;
#   - a controller manager override newer than the API server (1.36.3 while it runs 1.35.4)
#     is refused (VersionSkewRefused) and nothing changes;
#   - 1.35.4 -> 1.36.3 together with etcd 3.5.36 -> 3.6.17, with the controller manager held
#     at 1.35.4 by its own spec.version, rolls etcd, then the API server, each after the one
#     before has rolled out, and leaves the controller manager on 1.35.4;
#   - a feature-gate change together with dropping that override rolls the API server, then
#     the controller manager, now on 1.36.3 (etcd takes no Kubernetes gates and is left alone);
#   - a downgrade is refused (DowngradeRefused) and nothing changes;
#   - afterwards the running objects are still what `nestcp render` prints.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

ns=nested-upgrade-$$
install_crds
new_namespace "$ns"
fake_kubelet "$ns"
start_manager mgr "$ns"
# The CAPN sample, one line older than it ships, so that it has a line to upgrade to.
sed 's/version: "1.36.3"/version: "1.35.4"/' "$NESTCP_SOURCE_DIR/config/samples/capn-cluster.yaml" |
    kubectl -n "$ns" apply -f - >/dev/null
# A gate of both 1.35 and 1.36 that neither locks.
gate=OpenAPIEnums
wait_ready "$ns" sample-control-plane 180

# Every change of the StatefulSets, in order.
command kubectl -n "$ns" get statefulsets -w \
    -o custom-columns='NAME:.metadata.name,GEN:.metadata.generation,OBS:.status.observedGeneration,READY:.status.readyReplicas,UPDATED:.status.updatedReplicas,CUR:.status.currentRevision,UPD:.status.updateRevision' \
    --no-headers >"$work/sts-watch.txt" 2>/dev/null &
pids+=($!)
# The control plane's Upgrading condition as it changes.
command kubectl -n "$ns" get ncp sample-control-plane -w \
    -o jsonpath='{.status.conditions[?(@.type=="Upgrading")].status} {.status.conditions[?(@.type=="Upgrading")].reason}: {.status.conditions[?(@.type=="Upgrading")].message}{"\n"}' \
    >"$work/upgrading.txt" 2>/dev/null &
pids+=($!)

ncp_version() { kubectl -n "$ns" get ncp sample-control-plane -o jsonpath='{.status.version}'; }
upgrading_reason() { cond "$ns" ncp/sample-control-plane Upgrading | cut -f2; }
workloads() {
    kubectl -n "$ns" get statefulsets,services \
        -o jsonpath='{range .items[*]}{.metadata.name}={.metadata.resourceVersion}{"\n"}{end}'
}
targets() { kubectl -n "$ns" get ncp sample-control-plane -o jsonpath='{.status.rollout}'; }

# expect_refused OBJECT VERSION REASON: setting spec.version of OBJECT (the control plane or a
# component) is refused and nothing moves for 5 s.
expect_refused() {
    local before_w before_t r
    before_w=$(workloads)
    before_t=$(targets)
    kubectl -n "$ns" patch "$1" --type merge -p "{\"spec\":{\"version\":\"$2\"}}" >/dev/null
    is_reason() { [ "$(upgrading_reason)" = "$1" ]; }
    until_true 30 is_reason "$3" || fail "$1 version $2: Upgrading is $(cond "$ns" ncp/sample-control-plane Upgrading)"
    echo "$1 version $2 refused: $(cond "$ns" ncp/sample-control-plane Upgrading | cut -f2-)"
    [ -n "$(kubectl -n "$ns" get events -o name \
        --field-selector "reason=$3,involvedObject.name=sample-control-plane")" ] || fail "no $3 event"
    sleep 5
    [ "$(workloads)" = "$before_w" ] || fail "$1 version $2 changed a workload"
    [ "$(targets)" = "$before_t" ] || fail "$1 version $2 moved a rollout target"
    is_ready "$ns" ncp/sample-control-plane || fail "not Ready while a change is refused"
}
cm=nkcm/sample-nestedcontrollermanager
image_of() { kubectl -n "$ns" get sts "$1" -o jsonpath='{.spec.template.spec.containers[0].image}'; }

# rollout_order SINCE_LINE NAMES...: checks that the StatefulSets NAMES changed (generation
# went up) after line SINCE_LINE of the watch in that order, each only after the previous
# one had rolled out completely; names not listed must not have changed.
rollout_order() {
    python3 - "$work/sts-watch.txt" "$@" <<'EOF'
import sys
all_lines = [l.split() for l in open(sys.argv[1]) if l.strip()]
mark = int(sys.argv[2])
want = sys.argv[3:]
base, changed, done = {}, {}, {}
for name, gen, *_ in all_lines[:mark]:
    base[name] = int(gen)
for i, (name, gen, obs, ready, upd, cur, updrev) in enumerate(all_lines[mark:], mark):
    if name not in changed and int(gen) > base.get(name, int(gen)):
        changed[name] = i
    if name in changed and name not in done and obs == gen and ready == upd == "1" and cur == updrev:
        done[name] = i
order = sorted(changed, key=changed.get)
print("rolled: " + ", ".join("%s (line %d, done %s)" % (n, changed[n], done.get(n)) for n in order))
assert order == want, "order %s, expected %s" % (order, want)
for a, b in zip(want, want[1:]):
    assert a in done and done[a] < changed[b], "%s changed before %s had rolled out" % (b, a)
EOF
}

# --- refused: two minors at once ---
expect_refused ncp/sample-control-plane 1.37.2 MinorSkipRefused
kubectl -n "$ns" patch ncp sample-control-plane --type merge -p '{"spec":{"version":"1.35.4"}}' >/dev/null
is_uptodate() { [ "$(upgrading_reason)" = UpToDate ]; }
until_true 30 is_uptodate || fail "reverting to 1.35.4 did not clear the refusal"

# --- refused: a controller manager newer than the API server ---
expect_refused "$cm" 1.36.3 VersionSkewRefused
kubectl -n "$ns" patch "$cm" --type json -p '[{"op":"remove","path":"/spec/version"}]' >/dev/null
until_true 30 is_uptodate || fail "dropping the controller manager's version did not clear the refusal"

# --- 1.35.4 -> 1.36.3 and etcd 3.6.17, seen at once (paused while both change) ---
mark=$(wc -l <"$work/sts-watch.txt")
t0=$(now)
kubectl -n "$ns" annotate ncp sample-control-plane cluster.x-k8s.io/paused=true >/dev/null
is_paused() { [ "$(cond "$ns" ncp/sample-control-plane Paused | cut -f1)" = True ]; }
until_true 30 is_paused || fail "the Paused condition did not appear"
kubectl -n "$ns" patch netcd sample-nestedetcd --type merge -p '{"spec":{"version":"3.6.17"}}' >/dev/null
kubectl -n "$ns" patch "$cm" --type merge -p '{"spec":{"version":"1.35.4"}}' >/dev/null
kubectl -n "$ns" patch ncp sample-control-plane --type merge -p '{"spec":{"version":"1.36.3"}}' >/dev/null
kubectl -n "$ns" annotate ncp sample-control-plane cluster.x-k8s.io/paused- >/dev/null
is_version() { [ "$(ncp_version)" = "$1" ] && is_ready "$ns" ncp/sample-control-plane && is_uptodate; }
until_true 180 is_version v1.36.3 || fail "not upgraded to 1.36.3: $(cond "$ns" ncp/sample-control-plane Upgrading)"
echo "1.35.4 -> 1.36.3 (and etcd 3.6.17; controller manager held at 1.35.4) took $(elapsed "$t0") s"
rollout_order "$mark" sample-etcd sample-apiserver || fail "upgrade order"
image_of sample-controller-manager | grep -q 'kube-controller-manager:v1.35.4$' ||
    fail "the controller manager does not run its own version 1.35.4"
[ "$(kubectl -n "$ns" get "$cm" -o jsonpath='{.status.version}')" = 1.35.4 ] ||
    fail "NestedControllerManager status.version"
image_of sample-apiserver | grep -q 'kube-apiserver:v1.36.3$' || fail "the API server does not run 1.36.3"
kubectl -n "$ns" get sts sample-etcd -o jsonpath='{.spec.template.spec.containers[0].image}' |
    grep -q 'etcd:3.6.17' || fail "etcd does not run 3.6.17"
[ "$(kubectl -n "$ns" get netcd sample-nestedetcd -o jsonpath='{.status.version}')" = 3.6.17 ] ||
    fail "NestedEtcd status.version"

# --- a feature gate and the controller manager back to the control plane's version: API
# servers, then controller managers ---
mark=$(wc -l <"$work/sts-watch.txt")
t0=$(now)
before=$(targets)
kubectl -n "$ns" annotate ncp sample-control-plane cluster.x-k8s.io/paused=true >/dev/null
until_true 30 is_paused || fail "the Paused condition did not appear"
kubectl -n "$ns" patch "$cm" --type json -p '[{"op":"remove","path":"/spec/version"}]' >/dev/null
kubectl -n "$ns" patch ncp sample-control-plane --type merge \
    -p "{\"spec\":{\"featureGates\":{\"$gate\":true}}}" >/dev/null
kubectl -n "$ns" annotate ncp sample-control-plane cluster.x-k8s.io/paused- >/dev/null
changed_targets() { [ "$(targets)" != "$before" ] && is_ready "$ns" ncp/sample-control-plane && is_uptodate; }
until_true 30 changed_targets || fail "the feature gate did not start a rollout"
rolled_cm() {
    kubectl -n "$ns" get sts sample-controller-manager -o jsonpath='{.spec.template.spec.containers[0].args}' |
        grep -q "$gate=true" && is_ready "$ns" ncp/sample-control-plane && is_uptodate
}
until_true 180 rolled_cm || fail "the feature gate did not reach the controller manager"
echo "featureGates.$gate=true (and the controller manager to 1.36.3) took $(elapsed "$t0") s"
rollout_order "$mark" sample-apiserver sample-controller-manager || fail "feature gate order"
image_of sample-controller-manager | grep -q 'kube-controller-manager:v1.36.3$' ||
    fail "the controller manager did not follow the control plane to 1.36.3"

# --- refused: a downgrade ---
expect_refused ncp/sample-control-plane 1.35.4 DowngradeRefused
echo "Upgrading condition as it changed:"
sort -u "$work/upgrading.txt" | grep -v '^ : $' | sed 's/^/  /'
grep -q '^True RollingOut: .*kube-apiserver .*updated' "$work/upgrading.txt" ||
    fail "the Upgrading condition never said how far the rollout was"
kubectl -n "$ns" patch ncp sample-control-plane --type merge -p '{"spec":{"version":"1.36.3"}}' >/dev/null
until_true 30 is_uptodate || fail "reverting the downgrade did not clear the refusal"

n=$(render_matches "$ns") || fail "after the upgrades the running objects differ from nestcp render's"
echo "nestcp render: $n objects match"
old=$(kubectl -n "$ns" get secrets -l nestcp.x-k8s.io/component -o name | wc -l)
[ "$old" = 3 ] || fail "superseded certs Secrets left: $(kubectl -n "$ns" get secrets -l nestcp.x-k8s.io/component -o name | tr '\n' ' ')"
echo PASS
