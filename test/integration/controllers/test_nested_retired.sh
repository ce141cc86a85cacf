#!/usr/bin/env bash
# Kubernetes lines nestcp no longer ships, against the real super cluster:
#   - a CAPN manifest that still says `version: v1.20.2` is read, and refused on the control
#     plane with Ready False, reason VersionUnsupported, a message naming the supported lines
#     and an Event; nothing is created for it, and a good cluster next to it becomes Ready;
#   - a control plane already running a line that a newer nestcp no longer ships (here: 1.35,
#     with a manager whose templates lack the 1.35 packages) is left exactly as it runs, with
#     VersionUnsupported saying to move to 1.36 one minor at a time; moving it to 1.36.3 then
#     upgrades it as usual.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

ns=nested-retired-$$
install_crds
new_namespace "$ns"
fake_kubelet "$ns"
start_manager mgr "$ns"

sed 's/version: "1.36.3"/version: v1.20.2/' "$NESTCP_SOURCE_DIR/config/samples/capn-cluster.yaml" \
    >"$work/capn-1.20.yaml"
grep -q 'version: v1.20.2' "$work/capn-1.20.yaml" || fail "the sample has no version to change"
sed 's/version: "1.36.3"/version: "1.35.4"/' "$NESTCP_SOURCE_DIR/config/samples/standalone.yaml" \
    >"$work/standalone-1.35.yaml"
kubectl -n "$ns" apply -f "$work/capn-1.20.yaml" -f "$work/standalone-1.35.yaml" >/dev/null

# --- a CAPN v1.20.2 manifest: refused, by name, and nothing made for it ---
wait_ready "$ns" standalone 180
echo "standalone (1.35.4): Ready next to the 1.20.2 manifest"
unsupported() { [ "$(cond "$ns" "$1" Ready | cut -f2)" = VersionUnsupported ]; }
until_true 30 unsupported ncp/sample-control-plane ||
    fail "v1.20.2: Ready is '$(cond "$ns" ncp/sample-control-plane Ready)'"
msg=$(cond "$ns" ncp/sample-control-plane Ready | cut -f3)
echo "v1.20.2: $msg"
case "$msg" in
*'spec.version: "v1.20.2" is no longer supported (supported lines: 1.35, 1.36, 1.37)'*"Move it to 1.35"*) ;;
*) fail "the refusal does not name the version and the supported lines: $msg" ;;
esac
[ -n "$(kubectl -n "$ns" get events -o name \
    --field-selector reason=VersionUnsupported,involvedObject.name=sample-control-plane)" ] ||
    fail "no VersionUnsupported event"
[ -z "$(kubectl -n "$ns" get statefulsets,services -l cluster.x-k8s.io/cluster-name=sample -o name)" ] ||
    fail "objects were created for the 1.20.2 cluster"
kubectl -n "$ns" delete -f "$work/capn-1.20.yaml" --wait=true --timeout=60s >/dev/null ||
    fail "the refused cluster could not be deleted"

# --- a running control plane whose line is retired: left as it runs ---
# workloads: what runs the tenant (the nestcp objects' own status may change).
workloads() { versions "$ns" | grep -E '^(Secret|Service|StatefulSet)/'; }
before=$(workloads)
kill "$mgr_pid"
wait "$mgr_pid" 2>/dev/null || true
mkdir -p "$work/templates/packages"
cp "$NESTCP_SOURCE_DIR/templates/stable" "$NESTCP_SOURCE_DIR/templates/rapid" "$work/templates/"
for c in etcd kube-apiserver kube-controller-manager; do
    mkdir -p "$work/templates/packages/$c"
    for d in "$NESTCP_SOURCE_DIR/templates/packages/$c"/*/; do
        [ "$(basename "$d")" = 1.35 ] || cp -r "$d" "$work/templates/packages/$c/"
    done
done
start_manager mgr2 "$ns" --templates "$work/templates"
until_true 30 unsupported ncp/standalone || fail "1.35.4 without its package: Ready is '$(cond "$ns" ncp/standalone Ready)'"
msg=$(cond "$ns" ncp/standalone Ready | cut -f3)
echo "1.35.4, retired: $msg"
case "$msg" in
*"supported lines: 1.36, 1.37"*"left as it is"*"Move it to 1.36"*"one minor version at a time"*) ;;
*) fail "the condition does not say which line to move to: $msg" ;;
esac
# Once the condition is written the manager has decided: nothing of the tenant changed.
after=$(workloads)
[ "$after" = "$before" ] ||
    fail "the retired control plane was touched: $(diff <(echo "$before") <(echo "$after") | head -n 10)"
for sts in standalone-etcd standalone-apiserver standalone-controller-manager; do
    [ "$(kubectl -n "$ns" get sts "$sts" -o jsonpath='{.status.readyReplicas}')" = 1 ] ||
        fail "$sts is not running any more"
done
echo "1.35.4, retired: every workload still runs as it was"

# --- moving it to the oldest supported line upgrades it ---
kubectl -n "$ns" patch ncp standalone --type merge -p '{"spec":{"version":"1.36.3"}}' >/dev/null
upgraded() {
    [ "$(kubectl -n "$ns" get ncp standalone -o jsonpath='{.status.version}')" = v1.36.3 ] &&
        is_ready "$ns" ncp/standalone
}
until_true 180 upgraded || fail "1.35.4 -> 1.36.3 did not finish: $(cond "$ns" ncp/standalone Ready)"
kubectl -n "$ns" get sts standalone-apiserver -o jsonpath='{.spec.template.spec.containers[0].image}' |
    grep -q 'kube-apiserver:v1.36.3$' || fail "the API server does not run 1.36.3"
echo "1.35.4 -> 1.36.3: upgraded and Ready"
echo PASS
