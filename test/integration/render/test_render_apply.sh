#!/usr/bin/env bash
# What `nestcp render` prints is what the super cluster's API server accepts:
#   - the CAPN sample, the standalone sample and a 3-member dual-stack 1.37 cluster pass
#     `kubectl apply --dry-run=server`;
#   - applied for real, the Secrets read back with `kubectl get -o yaml` (a v1 List) are
#     reused by a second render, which then prints only the workloads, unchanged;
#   - bad input prints nothing on stdout and exits 1.
set -euo pipefail
: "${KUBECONFIG:?KUBECONFIG must point at the super cluster}"
: "${NESTCP_SOURCE_DIR:?}"
: "${NESTCP_BIN:?}"

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

src=$NESTCP_SOURCE_DIR
ns=render-apply-$$
tmp=$(mktemp -d)
kubectl() { command kubectl --request-timeout=30s "$@"; }
trap 'rm -rf "$tmp"; kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true' EXIT
kubectl create namespace "$ns" >/dev/null

# --- dry runs ---
sed "s/namespace: tenants/namespace: $ns/" "$src/test/golden/multi-member.input.yaml" \
    >"$tmp/multi-member.yaml"
for input in "$src/config/samples/capn-cluster.yaml" "$src/config/samples/standalone.yaml" \
    "$tmp/multi-member.yaml"; do
    "$NESTCP_BIN" render -n "$ns" -f "$input" >"$tmp/out.yaml" 2>"$tmp/err" ||
        fail "render $input: $(cat "$tmp/err")"
    want=$(grep -c '^kind: ' "$tmp/out.yaml")
    # 8 Secrets; etcd's Service, StatefulSet, NetworkPolicy; the API server's ConfigMap,
    # Service, StatefulSet, NetworkPolicy; the controller manager's Service and StatefulSet.
    [ "$want" -eq 17 ] || fail "$input rendered $want objects, want 17"
    kubectl apply --dry-run=server -f "$tmp/out.yaml" >"$tmp/applied" 2>"$tmp/err" ||
        fail "the API server refused the rendering of $input: $(cat "$tmp/err")"
    got=$(grep -c 'created (server dry run)' "$tmp/applied")
    [ "$got" -eq 17 ] || fail "$input: $got of 17 objects accepted: $(cat "$tmp/applied")"
done

# --- applied for real, then rendered again from what the cluster holds ---
"$NESTCP_BIN" render -n "$ns" -f "$src/config/samples/standalone.yaml" >"$tmp/first.yaml"
kubectl apply -f "$tmp/first.yaml" >/dev/null
kubectl -n "$ns" get secrets -l cluster.x-k8s.io/cluster-name=standalone -o yaml >"$tmp/live.yaml"
[ "$(grep -c '^- apiVersion: v1' "$tmp/live.yaml")" -eq 8 ] || fail "expected 8 Secrets in $ns"
"$NESTCP_BIN" render -n "$ns" -f "$src/config/samples/standalone.yaml" -f "$tmp/live.yaml" \
    >"$tmp/second.yaml" 2>"$tmp/err" || fail "second render: $(cat "$tmp/err")"
grep -q '^kind: Secret' "$tmp/second.yaml" && fail "the second render made new Secrets"
[ "$(grep -c '^kind: ' "$tmp/second.yaml")" -eq 9 ] ||
    fail "the second render is not the 9 objects of the packages"
sed -n '/^kind: Service$/,$p' "$tmp/first.yaml" | sed '1s/^/apiVersion: v1\n/' >"$tmp/first-workloads"
sed -n '/^kind: Service$/,$p' "$tmp/second.yaml" | sed '1s/^/apiVersion: v1\n/' >"$tmp/second-workloads"
cmp -s "$tmp/first-workloads" "$tmp/second-workloads" ||
    fail "the workloads differ between the renders: $(diff "$tmp/first-workloads" "$tmp/second-workloads" | head -20)"
# The applied workloads are unchanged by applying the second render: the StatefulSets keep
# their generation, the Services their resourceVersion. (kubectl reports an etcd StatefulSet with volumeClaimTemplates "configured" on
# every client-side apply, because the API server adds status to each claim template; what
# counts is that nothing changed.)
generations() {
    kubectl -n "$ns" get statefulsets,services -l cluster.x-k8s.io/cluster-name=standalone \
        -o go-template='{{range .items}}{{.kind}}/{{.metadata.name}}={{if eq .kind "Service"}}{{.metadata.resourceVersion}}{{else}}{{.metadata.generation}}{{end}} {{end}}'
}
before=$(generations)
kubectl apply -f "$tmp/second.yaml" >"$tmp/applied"
after=$(generations)
[ "$before" = "$after" ] || fail "re-apply changed objects: $before -> $after ($(cat "$tmp/applied"))"
[ "$(grep -c '^kind: StatefulSet' "$tmp/second.yaml")" -eq 3 ] || fail "expected 3 StatefulSets"

# --- bad input ---
if printf 'apiVersion: controlplane.cluster.x-k8s.io/v1beta1\nkind: NestedControlPlane\nmetadata: {name: x}\nspec: {version: "9.9.9"}\n' |
    "$NESTCP_BIN" render -f - >"$tmp/bad.out" 2>"$tmp/bad.err"; then
    fail "bad input was accepted"
fi
[ ! -s "$tmp/bad.out" ] || fail "bad input printed on stdout"
grep -q 'NestedControlPlane default/x: spec.version: "9.9.9"' "$tmp/bad.err" ||
    fail "unexpected message: $(cat "$tmp/bad.err")"
echo "PASS"
