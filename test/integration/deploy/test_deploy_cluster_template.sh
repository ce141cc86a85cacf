#!/usr/bin/env bash
# clusterctl's artifacts:
#   - metadata.yaml is clusterctl's Metadata and its release series is the version in
#     CMakeLists.txt, for contract v1beta2 (the contract test_capi_clusterctl.sh proves);
#   - templates/cluster-template.yaml, its variables substituted as clusterctl does (defaults
#     for the optional ones, lib.sh template_subst), is accepted by the real apiserver with the
#     CRDs installed (`kubectl apply --dry-run=server`), with only the required variables and
#     with every variable set; the substituted objects are what the variables say;
#   - the schema still judges it: 9 etcd replicas are refused;
#   - `nestcp render -f -` accepts it: objects named after
#     CLUSTER_NAME, and the serving certificate and kubeconfig name the template's endpoint.
# Docs commands covered here: docs/create-cluster.md "envsubst ... | kubectl apply -f -"
# (with --dry-run=server) and docs/clusterctl.md's variable list.
set -euo pipefail
: "${KUBECONFIG:?KUBECONFIG must point at the super cluster}"
: "${NESTCP_SOURCE_DIR:?}"
: "${NESTCP_BIN:?}"
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

src=$NESTCP_SOURCE_DIR
tmpl=$src/templates/cluster-template.yaml
ns=cluster-template-$$
out=$(mktemp -d)
trap 'rm -rf "$out"; kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true' EXIT

# --- metadata.yaml ---
version=$(sed -n 's/^project(nestcp VERSION \([0-9]*\)\.\([0-9]*\)\..*/\1 \2/p' "$src/CMakeLists.txt")
read -r major minor <<<"$version"
meta=$src/metadata.yaml
grep -qx 'apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3' "$meta" || fail "metadata.yaml: apiVersion"
grep -qx 'kind: Metadata' "$meta" || fail "metadata.yaml: kind"
series=$(grep -A2 -x -- "- major: $major" "$meta")
grep -qx "  minor: $minor" <<<"$series" ||
    fail "metadata.yaml has no release series $major.$minor (CMakeLists.txt)"
grep -qx "  contract: v1beta2" <<<"$series" ||
    fail "metadata.yaml: series $major.$minor is not for contract v1beta2"

# --- the template ---
# Every variable is clusterctl's form, and every optional one is documented in the header.
bad=$(grep -o '\${[^}]*}' "$tmpl" | grep -v '^\${[A-Z0-9_]*\(:=[^}]*\)\{0,1\}}$' || true)
[ -z "$bad" ] || fail "variables in the template not in the form \${NAME} or \${NAME:=default}: $bad"
for v in $(grep -o '\${[A-Z0-9_]*' "$tmpl" | sed 's/^\${//' | sort -u); do
    grep -q "^#   $v " "$tmpl" || fail "variable $v is not documented in the template's header"
done

install_crds "$src"
kubectl create namespace "$ns" >/dev/null

# Only the required variables.
(CLUSTER_NAME=ct-min NAMESPACE=$ns template_subst "$tmpl") >"$out/min.yaml"
grep -q '\${' "$out/min.yaml" && fail "variables left after substitution: $(grep '\${' "$out/min.yaml")"
kubectl apply --dry-run=server -f "$out/min.yaml" >"$out/min.log" 2>&1 ||
    fail "the apiserver refuses the template: $(cat "$out/min.log")"
for o in cluster.cluster.x-k8s.io/ct-min nestedcluster.infrastructure.cluster.x-k8s.io/ct-min \
    nestedcontrolplane.controlplane.cluster.x-k8s.io/ct-min-control-plane \
    nestedetcd.controlplane.cluster.x-k8s.io/ct-min-nestedetcd \
    nestedapiserver.controlplane.cluster.x-k8s.io/ct-min-nestedapiserver \
    nestedcontrollermanager.controlplane.cluster.x-k8s.io/ct-min-nestedcontrollermanager; do
    grep -q "^$o created (server dry run)$" "$out/min.log" || fail "dry run did not create $o: $(cat "$out/min.log")"
done
grep -q '^  version: v1.36.3$' "$out/min.yaml" || fail "KUBERNETES_VERSION does not default to v1.36.3"
grep -q 'host: ct-min-apiserver\.'"$ns"'\.svc$' "$out/min.yaml" || fail "the endpoint is not the apiserver Service"

# Every variable set.
(CLUSTER_NAME=ct-all NAMESPACE=$ns KUBERNETES_VERSION=1.36.3 NESTED_SERVICE_CIDR=10.100.0.0/16 \
    NESTED_POD_CIDR=10.200.0.0/16 NESTED_SERVICE_DOMAIN=tenant.local NESTED_ETCD_REPLICAS=3 \
    NESTED_APISERVER_REPLICAS=2 NESTED_CONTROLLER_MANAGER_REPLICAS=2 NESTED_KEY_ALGORITHM=RSA-2048 \
    template_subst "$tmpl") >"$out/all.yaml"
kubectl apply --dry-run=server -f "$out/all.yaml" -o yaml >"$out/all.out" 2>"$out/all.err" ||
    fail "the apiserver refuses the template with every variable set: $(cat "$out/all.err")"
for want in 'cidrBlocks: ["10.100.0.0/16"]' 'cidrBlocks: ["10.200.0.0/16"]' \
    'serviceDomain: tenant.local' 'replicas: 3' 'replicas: 2' 'keyAlgorithm: RSA-2048' \
    'version: 1.36.3'; do
    grep -qF "$want" "$out/all.yaml" || fail "substituted template lacks '$want'"
done
# The apiserver applied the schema defaults (certificates.validityDays) to the dry-run object.
grep -q 'validityDays: 365' "$out/all.out" || fail "the dry run shows no schema defaults"

# The schema judges the substituted objects: at most 7 etcd replicas.
(CLUSTER_NAME=ct-bad NAMESPACE=$ns NESTED_ETCD_REPLICAS=9 template_subst "$tmpl") >"$out/bad.yaml"
if kubectl apply --dry-run=server -f "$out/bad.yaml" >"$out/bad.log" 2>&1; then
    fail "9 etcd replicas were accepted"
fi
grep -q 'replicas' "$out/bad.log" || fail "the refusal does not name replicas: $(cat "$out/bad.log")"

# nestcp render reads the same file.
"$NESTCP_BIN" render -f - --templates "$src/templates" -o json <"$out/min.yaml" \
    >"$out/render.json" 2>"$out/render.err" || fail "nestcp render refuses the template: $(cat "$out/render.err")"
# Objects named after CLUSTER_NAME; the serving certificate and the kubeconfig name the
# template's endpoint, the apiserver Service's cluster-wide DNS name.
python3 - "$out/render.json" "$out" <<'PY' || fail "nestcp render output"
import base64, json, sys
items = json.load(open(sys.argv[1]))["items"]
names = {(o["kind"], o["metadata"]["name"]) for o in items}
for want in [("StatefulSet", "ct-min-etcd"), ("StatefulSet", "ct-min-apiserver"),
             ("StatefulSet", "ct-min-controller-manager"), ("Service", "ct-min-apiserver"),
             ("Secret", "ct-min-kubeconfig")]:
    assert want in names, "render lacks %s %s: %s" % (want + (sorted(names),))
for o in items:
    n = o["metadata"]["name"]
    if o["kind"] == "Secret" and n.startswith("ct-min-apiserver-certs-"):
        open(sys.argv[2] + "/apiserver.crt", "wb").write(base64.b64decode(o["data"]["apiserver.crt"]))
    if o["kind"] == "Secret" and n == "ct-min-kubeconfig":
        open(sys.argv[2] + "/kubeconfig", "wb").write(base64.b64decode(o["data"]["value"]))
PY
grep -q "DNS:ct-min-apiserver\.$ns\.svc" <<<"$(openssl x509 -in "$out/apiserver.crt" -noout -ext subjectAltName)" ||
    fail "the serving certificate lacks the endpoint: $(openssl x509 -in "$out/apiserver.crt" -noout -ext subjectAltName)"
grep -q "server: https://ct-min-apiserver\.$ns\.svc:6443" "$out/kubeconfig" ||
    fail "the kubeconfig's server is not the endpoint: $(grep server: "$out/kubeconfig")"
echo "ok: metadata.yaml and templates/cluster-template.yaml"
