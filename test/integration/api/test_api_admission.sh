#!/usr/bin/env bash
# config/admission on the real apiserver: `kubectl apply` itself refuses what the package catalog
# does not know, naming the field, and the manager keeps the policy's parameters:
#   - the policy, its binding and the generated parameters (config/admission, built by
#     kustomize under this test's own prefix and namespace, the binding limited to its
#     namespace) install;
#   - a valid NestedControlPlane and NestedAPIServer are accepted, in both served versions;
#   - refused, each with a message naming the field: an unknown spec.version (v1beta1 and
#     CAPN's v1alpha4), a version change that skips a minor, a downgrade, an unknown feature
#     gate, an extraArgs flag the binary of that version lacks (a removed one marked so, for
#     kube-apiserver and etcd); an unchanged unknown gate does not stop an edit;
#   - with the parameters ConfigMap deleted, creates are refused (parameterNotFoundAction: Deny);
#   - `nestcp manager --admission-params` brings the ConfigMap back equal to what
#     `nestcp render --admission-params` prints, puts back a value someone changed, and
#     creates are accepted again.
set -euo pipefail
: "${KUBECONFIG:?KUBECONFIG must point at the super cluster}"
: "${NESTCP_SOURCE_DIR:?}"
: "${NESTCP_BIN:?}"

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

src=$NESTCP_SOURCE_DIR
id=vap-$$
ns=$id           # the control planes
sys=$id-system   # the parameters, as nestcp-system holds them in an install
cm=$id-catalog
work=$(mktemp -d)
mgr=""
kubectl() { command kubectl --request-timeout=30s "$@"; }
cleanup() {
    if [ -n "$mgr" ]; then kill "$mgr" 2>/dev/null || true; fi
    kubectl delete validatingadmissionpolicybinding "$id-catalog" --ignore-not-found >/dev/null 2>&1 || true
    kubectl delete validatingadmissionpolicy "$id-catalog" --ignore-not-found >/dev/null 2>&1 || true
    kubectl delete namespace "$ns" "$sys" --wait=false >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

. "$src/test/support/crds.sh"
crds_install || fail "the CRDs are not established"
kubectl create namespace "$ns" >/dev/null
kubectl create namespace "$sys" >/dev/null

# --- config/admission, as config/default installs it but under this test's names ---
mkdir -p "$work/kust"
cp -R "$src/config/admission" "$work/kust/admission"
cat >"$work/kust/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: $sys
namePrefix: $id-
resources:
- admission
patches:
- target: {kind: ValidatingAdmissionPolicyBinding}
  patch: |-
    - {op: replace, path: /spec/policyName, value: $id-catalog}
    - {op: replace, path: /spec/paramRef/name, value: $cm}
    - {op: replace, path: /spec/paramRef/namespace, value: $sys}
    - op: add
      path: /spec/matchResources
      value: {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: $ns}}}
YAML
kubectl apply -k "$work/kust" >"$work/apply.log" 2>&1 || fail "apply -k config/admission: $(cat "$work/apply.log")"
[ "$(kubectl -n "$sys" get configmap "$cm" -o jsonpath='{.data.kubernetes\.lines}')" = "1.35, 1.36, 1.37" ] ||
    fail "the parameters ConfigMap does not list the Kubernetes lines"

ncp() { # ncp NAME VERSION [FEATUREGATES-JSON] [APIVERSION]
    cat <<YAML
apiVersion: controlplane.cluster.x-k8s.io/${4:-v1beta1}
kind: NestedControlPlane
metadata: {name: $1, namespace: $ns, labels: {cluster.x-k8s.io/cluster-name: $1}}
spec: {version: "$2", featureGates: ${3:-{\}}}
YAML
}
component() { # component KIND NAME VERSION EXTRAARGS-JSON
    cat <<YAML
apiVersion: controlplane.cluster.x-k8s.io/v1beta1
kind: $1
metadata: {name: $2, namespace: $ns, labels: {cluster.x-k8s.io/cluster-name: $2}}
spec: {version: "$3", extraArgs: $4}
YAML
}
# refused WHAT WANT: stdin applied must be refused with a message containing WANT.
refused() {
    local what=$1 want=$2 msg
    if msg=$(kubectl apply -f - 2>&1); then fail "$what was accepted: $msg"; fi
    case "$msg" in *"$want"*) ;; *) fail "$what: refused, but the message lacks '$want': $msg" ;; esac
    echo "ok: $what refused: ${msg##*denied request: }"
}
accepted() {
    local msg
    msg=$(kubectl apply -f - 2>&1) || fail "$1 was refused: $msg"
}

# The policy takes effect once the API server has compiled it and read its parameters: wait
# until it refuses a server-side dry run of an unknown version.
ok=false
for _ in $(seq 1 120); do
    if ! ncp probe 1.99.0 | kubectl apply --dry-run=server -f - >/dev/null 2>&1; then ok=true; break; fi
    sleep 0.5
done
$ok || fail "the policy does not refuse an unknown version 60 s after it was applied"

# --- what is accepted ---
gate=$(kubectl -n "$sys" get configmap "$cm" -o jsonpath='{.data.kubernetes\.1\.36\.featureGates}' | head -n 1)
[ -n "$gate" ] || fail "no feature gate listed for 1.36"
ncp good 1.36.3 "{$gate: true}" | accepted "a NestedControlPlane 1.36.3 with gate $gate"
ncp capn 1.36.3 "{}" v1alpha4 | accepted "a v1alpha4 NestedControlPlane 1.36.3"
component NestedAPIServer good-apiserver v1.36.3 '{audit-log-path: /var/log/audit.log, v: "2"}' |
    accepted "a NestedAPIServer with known flags"
component NestedEtcd good-etcd 3.6.17 '{snapshot-count: "10000"}' | accepted "a NestedEtcd with a known flag"
# A component without a version of its own takes its control plane's: any line's flags pass.
printf 'apiVersion: controlplane.cluster.x-k8s.io/v1beta1\nkind: NestedControllerManager\nmetadata: {name: noversion, namespace: %s}\nspec: {extraArgs: {v: "2"}}\n' "$ns" |
    accepted "a NestedControllerManager without a version"

# --- what is refused ---
ncp bad-version 1.38.0 | refused "unknown version" \
    'spec.version: "1.38.0" is not a Kubernetes version the installed packages know (supported lines: 1.35, 1.36, 1.37)'
ncp bad-version 1.31.0 "{}" v1alpha4 | refused "retired version (v1alpha4)" \
    'spec.version: "1.31.0" is not a Kubernetes version the installed packages know'
component NestedEtcd bad-etcd 3.4.23 '{}' | refused "unknown etcd version" \
    'spec.version: "3.4.23" is not an etcd version the installed packages know (supported lines: 3.5, 3.6)'
ncp bad-gate 1.36.3 '{NoSuchGate: true}' | refused "unknown feature gate" \
    'spec.featureGates: "NoSuchGate" is not a feature gate of Kubernetes 1.36'
# Two at once are both named, in the order the API server walks the map.
for want in '"insecure-port" (removed)' '"no-such-flag"' ' are not flags of kube-apiserver 1.36'; do
    component NestedAPIServer bad-flag 1.36.3 '{insecure-port: "0", no-such-flag: "x"}' |
        refused "unknown flags" "$want"
done
component NestedEtcd bad-etcd-flag 3.6.17 '{enable-v2: "true"}' | refused "removed etcd flag" \
    'spec.extraArgs: "enable-v2" (removed) is not a flag of etcd 3.6'

# Version changes, as the rollout refuses them.
ncp jump 1.35.4 | accepted "a NestedControlPlane 1.35.4"
ncp jump 1.37.2 | refused "a two-minor jump" \
    'spec.version: 1.35.4 to 1.37.2 skips a minor version; upgrade one minor version at a time'
ncp jump v1.36.3 | accepted "one minor up"
ncp jump 1.35.4 | refused "a downgrade" 'spec.version: downgrade from v1.36.3 to 1.35.4 is not supported'
[ "$(kubectl -n "$ns" get ncp jump -o jsonpath='{.spec.version}')" = v1.36.3 ] ||
    fail "a refused change was stored"
component NestedAPIServer jump-apiserver 1.35.4 '{}' | accepted "a NestedAPIServer 1.35.4"
component NestedAPIServer jump-apiserver 1.37.2 '{}' | refused "a component's two-minor jump" \
    'spec.version: 1.35.4 to 1.37.2 skips a minor version'

# Only what changes is checked: an object stored before (here: a gate the policy did not see,
# set while the binding was off) can still be edited.
kubectl patch validatingadmissionpolicybinding "$id-catalog" --type=json \
    -p '[{"op":"replace","path":"/spec/validationActions","value":["Audit"]}]' >/dev/null
for _ in $(seq 1 120); do
    ncp old-gate 1.36.3 '{NoSuchGate: true}' | kubectl apply -f - >/dev/null 2>&1 && break
    sleep 0.5
done
kubectl -n "$ns" get ncp old-gate >/dev/null 2>&1 || fail "could not store old-gate with the binding on Audit"
kubectl patch validatingadmissionpolicybinding "$id-catalog" --type=json \
    -p '[{"op":"replace","path":"/spec/validationActions","value":["Deny"]}]' >/dev/null
ok=false
for _ in $(seq 1 120); do
    if ! ncp probe 1.99.0 | kubectl apply --dry-run=server -f - >/dev/null 2>&1; then ok=true; break; fi
    sleep 0.5
done
$ok || fail "the binding does not deny again"
kubectl -n "$ns" label ncp old-gate edited=yes >/dev/null || fail "an edit that leaves an old gate alone was refused"
kubectl -n "$ns" patch ncp old-gate --type=merge -p '{"spec":{"featureGates":{"AlsoNoGate":true}}}' \
    >"$work/patch.log" 2>&1 && fail "a new unknown gate next to an old one was accepted"
grep -q 'spec.featureGates: "AlsoNoGate" is not a feature gate of Kubernetes 1.36' "$work/patch.log" ||
    fail "the new unknown gate is not named: $(cat "$work/patch.log")"

# --- no parameters: every create refused ---
kubectl -n "$sys" delete configmap "$cm" >/dev/null
ok=false
for _ in $(seq 1 120); do
    if msg=$(ncp no-params 1.36.3 | kubectl apply --dry-run=server -f - 2>&1); then
        sleep 0.5
        continue
    fi
    ok=true
    break
done
$ok || fail "a valid control plane is still accepted 60 s after the parameters were deleted"
case "$msg" in *"$id-catalog"*) ;; *) fail "the refusal without parameters does not name the policy: $msg" ;; esac
echo "ok: without parameters: ${msg##*: }"
ncp no-params 1.36.3 | refused "a valid create without parameters" "$id-catalog"

# --- the manager puts them back, equal to the catalog ---
"$NESTCP_BIN" render --templates "$src/templates" --admission-params="$sys/$cm" -o json >"$work/want.json"
"$NESTCP_BIN" manager --kubeconfig "$KUBECONFIG" --namespace "$sys" --templates "$src/templates" \
    --admission-params="$sys/$cm" --metrics-bind-address 0 --health-probe-bind-address 0 \
    >"$work/manager.log" 2>&1 &
mgr=$!
same_as_catalog() {
    kubectl -n "$sys" get configmap "$cm" -o json >"$work/have.json" 2>/dev/null || return 1
    python3 - "$work/have.json" "$work/want.json" <<'PY'
import json, sys
have = json.load(open(sys.argv[1]))
want = json.load(open(sys.argv[2]))["items"][0]
labels = have["metadata"].get("labels", {})
ok = have.get("data") == want["data"] and all(labels.get(k) == v for k, v in want["metadata"]["labels"].items())
sys.exit(0 if ok else 1)
PY
}
wait_same() {
    local i
    for i in $(seq 1 120); do
        same_as_catalog && return 0
        kill -0 "$mgr" 2>/dev/null || { tail -n 20 "$work/manager.log" >&2; fail "the manager exited"; }
        sleep 0.5
    done
    tail -n 20 "$work/manager.log" >&2
    fail "$1"
}
wait_same "the manager did not bring the parameters back within 60 s"
echo "ok: the manager applied $sys/$cm, equal to nestcp render --admission-params"
ok=false
for _ in $(seq 1 120); do
    if ncp back 1.36.3 | kubectl apply -f - >/dev/null 2>&1; then ok=true; break; fi
    sleep 0.5
done
$ok || fail "a valid control plane is still refused 60 s after the manager restored the parameters"
ncp back-bad 1.38.0 | refused "unknown version, parameters restored" 'spec.version: "1.38.0" is not'

# A value changed by hand is put back.
kubectl -n "$sys" patch configmap "$cm" --type=merge -p '{"data":{"kubernetes.lines":"1.35"}}' >/dev/null
wait_same "the manager did not put back a changed value within 60 s"
echo "ok: a changed value is put back"
if grep -E '^[^ ]+ error ' "$work/manager.log" >"$work/errors.log"; then
    fail "the manager logged errors: $(head -n 3 "$work/errors.log")"
fi
echo "ok: refused at kubectl apply, and the manager keeps the parameters"
