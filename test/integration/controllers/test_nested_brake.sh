#!/usr/bin/env bash
# The fleet-wide brake (`nestcp manager --max-concurrent-rollouts`) and the preview (`nestcp
# plan`) against the real super cluster, with the change a new nestcp release brings: a copy
# of the packages whose kube-apiserver passes another value of a flag.
#   - two control planes are created at once under a limit of 1: creation never waits;
#   - `nestcp plan` with the new packages names, for each, kube-apiserver and the flag with
#     its old and new value (text and -o json), with the current packages nothing, and it
#     changes no object;
#   - a manager with the new packages and a limit of 1 rolls one control plane while the
#     other shows Upgrading True, reason RolloutQueued, saying 1 rolls and 1 is allowed (the
#     stand-in kubelet is stopped meanwhile, so that the first roll cannot end); the manager is
#     killed then, and the one that starts after it counts from the objects' status: the
#     second still waits, and its API server changes only after the first has rolled out
#     completely;
#   - afterwards `nestcp plan` with the new packages reports nothing to roll.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

ns=nested-brake-$$
install_crds
new_namespace "$ns"
fake_kubelet "$ns"

# The packages of the "new release": one flag of kube-apiserver 1.36 changes value.
cp -r "$NESTCP_SOURCE_DIR/templates" "$work/templates-new"
manifest=$work/templates-new/packages/kube-apiserver/1.36/manifest.yaml
grep -q -- '- --enable-admission-plugins=NodeRestriction$' "$manifest" ||
    fail "the kube-apiserver 1.36 package no longer sets --enable-admission-plugins=NodeRestriction"
sed -i 's/- --enable-admission-plugins=NodeRestriction$/- --enable-admission-plugins=NodeRestriction,AlwaysPullImages/' \
    "$manifest"

# Every change of the StatefulSets and of the control planes' Upgrading condition, in order.
command kubectl -n "$ns" get statefulsets -w \
    -o custom-columns='NAME:.metadata.name,GEN:.metadata.generation,OBS:.status.observedGeneration,READY:.status.readyReplicas,UPDATED:.status.updatedReplicas,CUR:.status.currentRevision,UPD:.status.updateRevision' \
    --no-headers >"$work/sts-watch.txt" 2>/dev/null &
pids+=($!)
command kubectl -n "$ns" get ncp -w \
    -o jsonpath='{.metadata.name} {.status.conditions[?(@.type=="Upgrading")].status} {.status.conditions[?(@.type=="Upgrading")].reason}: {.status.conditions[?(@.type=="Upgrading")].message}{"\n"}' \
    >"$work/upgrading.txt" 2>/dev/null &
pids+=($!)

start_manager mgr "$ns" --max-concurrent-rollouts 1
t0=$(now)
{ cluster a; echo ---; cluster b; } | kubectl -n "$ns" apply -f - >/dev/null
wait_ready "$ns" a 180
wait_ready "$ns" b 180
echo "two control planes created at once under --max-concurrent-rollouts 1: both Ready after $(elapsed "$t0") s"
! grep -q RolloutQueued "$work/upgrading.txt" || fail "a creation waited: $(grep RolloutQueued "$work/upgrading.txt")"

upgrading() { cond "$ns" "ncp/$1" Upgrading | cut -f2; }
uptodate() { [ "$(upgrading "$1")" = UpToDate ] && is_ready "$ns" "ncp/$1"; }
until_true 60 uptodate a || fail "a: Upgrading $(cond "$ns" ncp/a Upgrading)"
until_true 60 uptodate b || fail "b: Upgrading $(cond "$ns" ncp/b Upgrading)"

plan() { "$NESTCP_BIN" plan --kubeconfig "$KUBECONFIG" -n "$ns" "$@"; }

# --- the preview, before the manager changes ---
before=$(versions "$ns")
plan --templates "$NESTCP_SOURCE_DIR/templates" >"$work/plan-same.txt" || fail "nestcp plan: $(cat "$work/plan-same.txt")"
cat "$work/plan-same.txt"
grep -q '^2 control planes; 0 would roll.$' "$work/plan-same.txt" || fail "plan with the running packages"
plan --templates "$work/templates-new" >"$work/plan-new.txt" || fail "nestcp plan: $(cat "$work/plan-new.txt")"
cat "$work/plan-new.txt"
for c in a b; do
    grep -q "^NestedControlPlane $ns/$c: would roll kube-apiserver$" "$work/plan-new.txt" ||
        fail "plan does not say that $c's kube-apiserver would roll"
done
[ "$(grep -c '^    flag --enable-admission-plugins: NodeRestriction -> NodeRestriction,AlwaysPullImages$' "$work/plan-new.txt")" = 2 ] ||
    fail "plan does not name the flag and its values for both"
grep -q '^2 control planes; 2 would roll.$' "$work/plan-new.txt" || fail "plan's summary"
plan --templates "$work/templates-new" -o json >"$work/plan-new.json"
python3 - "$work/plan-new.json" <<'PY' || fail "plan -o json"
import json, sys
cps = json.load(open(sys.argv[1]))["controlPlanes"]
assert sorted(c["name"] for c in cps) == ["a", "b"], cps
for cp in cps:
    assert cp["roll"] is True, cp
    comps = {c["component"]: c for c in cp["components"]}
    assert not comps["etcd"]["roll"] and not comps["kube-controller-manager"]["roll"], cp
    kas = comps["kube-apiserver"]
    assert kas["roll"] and kas["statefulSet"] == cp["name"] + "-apiserver", kas
    assert kas["runningConfigHash"] != kas["renderedConfigHash"], kas
    assert kas["changes"] == [{"kind": "flag", "container": "kube-apiserver",
                               "name": "--enable-admission-plugins", "from": "NodeRestriction",
                               "to": "NodeRestriction,AlwaysPullImages"}], kas["changes"]
print("plan -o json: kube-apiserver of a and b, flag --enable-admission-plugins")
PY
[ "$(versions "$ns")" = "$before" ] || fail "nestcp plan changed an object"

# --- the manager upgraded to the new packages, limit 1 ---
# The stand-in kubelet stops first, so that the first roll cannot end before it is looked at:
# its new API server pod is created but not marked Ready until the stand-in starts again.
kill -9 "$mgr_pid" "$kubelet_pid"
wait "$mgr_pid" "$kubelet_pid" 2>/dev/null || true
mark=$(wc -l <"$work/sts-watch.txt")
t0=$(now)
# The first watch line after the restart that shows one waiting: counted from before the
# manager starts, since it may write that line within milliseconds of starting.
queued_line() { tail -n +"$((qmark + 1))" "$work/upgrading.txt" | grep -m1 ' True RolloutQueued: ' || true; }
qmark=$(wc -l <"$work/upgrading.txt")
start_manager mgr2 "$ns" --max-concurrent-rollouts 1 --templates "$work/templates-new"
has_queued() { [ -n "$(queued_line)" ]; }
until_true 60 has_queued || fail "neither waits: $(tail -n +"$((qmark + 1))" "$work/upgrading.txt")"
line=$(queued_line)
waiting=${line%% *}
first=$([ "$waiting" = a ] && echo b || echo a)
echo "watch: $line"
case "$line" in
"$waiting True RolloutQueued: waiting for a rollout slot: 1 control plane rolling ($ns/$first), 1 allowed at once (--max-concurrent-rollouts); 0 waiting ahead of this one") ;;
*) fail "the waiting one's Upgrading condition: $line" ;;
esac
rolling_first() { [ "$(upgrading "$first")" = RollingOut ]; }
until_true 30 rolling_first || fail "$first: Upgrading $(cond "$ns" "ncp/$first" Upgrading)"
is_ready "$ns" "ncp/$waiting" || fail "$waiting is not Ready while it waits"
[ "$(upgrading "$waiting")" = RolloutQueued ] || fail "$waiting: $(cond "$ns" "ncp/$waiting" Upgrading)"
target() { kubectl -n "$ns" get ncp "$1" -o jsonpath='{.status.rollout.apiserver.configHash}'; }
generation() { kubectl -n "$ns" get sts "$1-apiserver" -o jsonpath='{.metadata.generation}'; }
held_target=$(target "$waiting")
held_generation=$(generation "$waiting")

# A restart while one rolls and one waits: the new manager counts what rolls from the objects'
# status, not from what it started itself (nothing).
kill -9 "$mgr_pid"
wait "$mgr_pid" 2>/dev/null || true
start_manager mgr3 "$ns" --max-concurrent-rollouts 1 --templates "$work/templates-new"
ncp_reconciles() {
    curl -s --max-time 5 "http://127.0.0.1:$mgr_metrics/metrics" |
        awk '/^controller_runtime_reconcile_total\{controller="nestedcontrolplane"/ { s += $2 } END { printf "%d", s }'
}
reconciled_both() { [ "$(ncp_reconciles)" -ge 2 ]; }
until_true 60 reconciled_both || fail "the new manager did not reconcile the control planes"
[ "$(upgrading "$waiting")" = RolloutQueued ] ||
    fail "after the restart $waiting: $(cond "$ns" "ncp/$waiting" Upgrading)"
[ "$(target "$waiting")" = "$held_target" ] || fail "after the restart $waiting's target moved"
[ "$(generation "$waiting")" = "$held_generation" ] || fail "after the restart $waiting's API server changed"
[ "$(upgrading "$first")" = RollingOut ] || fail "after the restart $first: $(cond "$ns" "ncp/$first" Upgrading)"
echo "after a manager restart ($(ncp_reconciles) control-plane reconciles): $first still rolls, $waiting still waits"

# The stand-in kubelet again: the first roll ends, then the second starts.
"$NESTCP_FAKE_KUBELET" --kubeconfig "$KUBECONFIG" --namespace "$ns" \
    --selector 'app.kubernetes.io/component!=etcd' >>"$work/kubelet-$ns.log" 2>&1 &
pids+=($!)
rolled() {
    kubectl -n "$ns" get sts "$1-apiserver" -o jsonpath='{.spec.template.spec.containers[0].args}' |
        grep -q 'enable-admission-plugins=NodeRestriction,AlwaysPullImages' && uptodate "$1"
}
until_true 180 rolled "$first" || fail "$first did not roll: $(cond "$ns" "ncp/$first" Upgrading)"
until_true 180 rolled "$waiting" || fail "$waiting did not roll after $first: $(cond "$ns" "ncp/$waiting" Upgrading)"
echo "both rolled, one at a time, in $(elapsed "$t0") s (the stand-in kubelet stopped for part of it)"

# The order, from the StatefulSet watch: the second API server changed only after the first
# had rolled out completely; nothing else changed.
python3 - "$work/sts-watch.txt" "$mark" "$first-apiserver" "$waiting-apiserver" <<'PY' || fail "rollout order"
import sys
lines = [l.split() for l in open(sys.argv[1]) if l.strip()]
mark, first, second = int(sys.argv[2]), sys.argv[3], sys.argv[4]
base, changed, done = {}, {}, {}
for name, gen, *_ in lines[:mark]:
    base[name] = int(gen)
for i, (name, gen, obs, ready, upd, cur, updrev) in enumerate(lines[mark:], mark):
    if name not in changed and int(gen) > base.get(name, int(gen)):
        changed[name] = i
    if name in changed and name not in done and obs == gen and ready == upd == "1" and cur == updrev:
        done[name] = i
print("changed: " + ", ".join("%s (line %d, rolled out at line %s)" % (n, changed[n], done.get(n))
                              for n in sorted(changed, key=changed.get)))
assert sorted(changed) == sorted([first, second]), changed
assert first in done and done[first] < changed[second], "%s changed before %s had rolled out" % (second, first)
PY

# --- the preview after the roll: nothing left ---
plan --templates "$work/templates-new" >"$work/plan-after.txt" || fail "nestcp plan: $(cat "$work/plan-after.txt")"
cat "$work/plan-after.txt"
grep -q '^2 control planes; 0 would roll.$' "$work/plan-after.txt" || fail "plan after the roll"
[ "$(grep -c ': nothing would roll$' "$work/plan-after.txt")" = 2 ] || fail "plan after the roll"
echo "PASS"
