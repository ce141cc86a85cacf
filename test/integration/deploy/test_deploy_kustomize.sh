#!/usr/bin/env bash
# The provider as users install it (docs/install.md):
#   - `kubectl kustomize config/default` (and config/namespaced, config/rbac, config/manager)
#     builds, with every object labelled cluster.x-k8s.io/provider=control-plane-nested;
#   - `kubectl kustomize config/prometheus` builds the monitoring kit, whose ServiceMonitor
#     selects config/default's metrics Service and port, in nestcp-system, labelled; the
#     overlay docs/install.md shows ("Monitoring") builds and labels its 3 objects;
#   - clusterctl's components files (config/clusterctl/{control-plane,infrastructure}) split
#     the CRDs between the two providers, one Namespace and one provider label each;
#   - `kubectl apply -k config/default` succeeds against the real apiserver and creates the
#     Namespace, ServiceAccount, RBAC, metrics Service and a Deployment that runs hardened
#     (non-root uid 65532, read-only root, no capabilities, seccomp RuntimeDefault) with
#     probes on 8081; the pod does not run (no kubelet here), so only the objects are checked;
#   - the manager's ServiceAccount has exactly the rights the manager uses, compared rule by
#     rule (`kubectl auth can-i --list --as=...`, a SelfSubjectRulesReview), in a namespace it
#     reconciles and in its own (plus the Lease there), and a direct `kubectl auth can-i`
#     cross-checks what it must not do (pods, nodes, namespaces, configmaps, CRDs, Leases);
#   - `kubectl apply -k config/namespaced`: the same rights in the namespace `tenants` only,
#     no Secret readable cluster-wide, and the manager started with --namespace=tenants.
# The rules follow what controllers/ plans (see config/rbac/role.yaml).
# Docs commands covered here: docs/install.md "kubectl apply -k config/default",
# "kubectl -n nestcp-system get deploy,sa,svc", both "kubectl auth can-i ... --as=..." examples,
# "kubectl create namespace tenants" + "kubectl apply -k config/namespaced", and the uninstall
# that keeps the CRDs ("kubectl delete clusterrole,clusterrolebinding -l ..." and the namespace);
# docs/clusterctl.md's two "kubectl kustomize config/clusterctl/..." builds.
# Everything but the CRDs (shared with the other tests) is deleted afterwards.
set -euo pipefail
: "${KUBECONFIG:?KUBECONFIG must point at the super cluster}"
: "${NESTCP_SOURCE_DIR:?}"
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

src=$NESTCP_SOURCE_DIR
sa=system:serviceaccount:nestcp-system:nestcp-controller-manager
out=$(mktemp -d)
created_tenants=false
cleanup() {
    kubectl delete clusterrolebinding nestcp-manager-rolebinding nestcp-metrics-auth-rolebinding \
        --ignore-not-found >/dev/null 2>&1 || true
    kubectl delete clusterrole nestcp-manager-role nestcp-metrics-auth-role nestcp-metrics-reader \
        --ignore-not-found >/dev/null 2>&1 || true
    kubectl -n tenants delete rolebinding nestcp-manager-rolebinding --ignore-not-found >/dev/null 2>&1 || true
    kubectl -n tenants delete role nestcp-manager-role --ignore-not-found >/dev/null 2>&1 || true
    # The admission policy goes first: without its parameters (deleted with nestcp-system) it
    # would refuse every control plane the next tests create.
    kubectl delete validatingadmissionpolicybinding nestcp-catalog --ignore-not-found >/dev/null 2>&1 || true
    kubectl delete validatingadmissionpolicy nestcp-catalog --ignore-not-found >/dev/null 2>&1 || true
    delete_namespace nestcp-system
    if $created_tenants; then delete_namespace tenants; fi
    rm -rf "$out"
}
trap cleanup EXIT

# --- kustomize builds ---
for d in default namespaced rbac manager; do
    kubectl kustomize "$src/config/$d" >"$out/$d.yaml" || fail "kubectl kustomize config/$d failed"
done
[ "$(grep -c '^kind: Namespace$' "$out/default.yaml")" = 1 ] ||
    fail "config/default must hold exactly one Namespace (clusterctl's target namespace)"
objects=$(grep -c '^kind: ' "$out/default.yaml")
labelled=$(grep -c '^    cluster.x-k8s.io/provider: control-plane-nested$' "$out/default.yaml")
[ "$objects" = "$labelled" ] ||
    fail "$objects objects in config/default but $labelled carry the provider label"
grep -q '^        image: nestcp:dev$' "$out/default.yaml" || fail "default image is not nestcp:dev"

# The monitoring kit (docs/install.md, "Monitoring"): the ServiceMonitor selects the metrics
# Service of config/default by labels it carries and scrapes its https port; the
# PrometheusRule holds rules.yaml's alerts and the ConfigMap the dashboard, unchanged.
kubectl kustomize "$src/config/prometheus" >"$out/prometheus.yaml" ||
    fail "kubectl kustomize config/prometheus failed"
python3 - "$out/prometheus.yaml" "$out/default.yaml" "$src/config/prometheus" <<'EOF' ||
import json, sys, yaml
kit = [o for o in yaml.safe_load_all(open(sys.argv[1])) if o]
default = [o for o in yaml.safe_load_all(open(sys.argv[2])) if o]
src = sys.argv[3]
by_kind = {o["kind"]: o for o in kit}
assert sorted(by_kind) == ["ConfigMap", "PrometheusRule", "ServiceMonitor"], sorted(by_kind)
for o in kit:
    md = o["metadata"]
    assert md["namespace"] == "nestcp-system", md
    assert md["name"].startswith("nestcp-"), md
    assert md["labels"]["cluster.x-k8s.io/provider"] == "control-plane-nested", md
sm = by_kind["ServiceMonitor"]["spec"]
svcs = [o for o in default if o["kind"] == "Service"
        and all(o["metadata"].get("labels", {}).get(k) == v for k, v in sm["selector"]["matchLabels"].items())]
assert [s["metadata"]["name"] for s in svcs] == ["nestcp-controller-manager-metrics"], svcs
ep = sm["endpoints"][0]
assert ep["port"] in [p["name"] for p in svcs[0]["spec"]["ports"]], ep
assert ep["scheme"] == "https" and ep["path"] == "/metrics" and ep["bearerTokenFile"], ep
rules = yaml.safe_load(open(src + "/rules.yaml"))
assert by_kind["PrometheusRule"]["spec"] == rules["spec"], "the PrometheusRule is not rules.yaml"
cm = by_kind["ConfigMap"]
assert cm["metadata"]["name"] == "nestcp-grafana-dashboard", cm["metadata"]
assert cm["metadata"]["labels"]["grafana_dashboard"] == "1", cm["metadata"]
assert json.loads(cm["data"]["nestcp.json"]) == json.load(open(src + "/dashboard.json"))
print("config/prometheus: ServiceMonitor for %s port %s, %d alerts, the dashboard" % (
    svcs[0]["metadata"]["name"], ep["port"], sum(len(g["rules"]) for g in rules["spec"]["groups"])))
EOF
    fail "config/prometheus does not fit config/default"
# docs/install.md's overlay for a Prometheus that selects by label, as the page shows it.
mkdir -p "$out/overlay/my-monitoring"
cp -R "$src/config" "$out/overlay/config"
awk '/^## Monitoring/ { m = 1 } m && /^```yaml$/ { on = 1; next } on && /^```$/ { exit } on' \
    "$src/docs/install.md" >"$out/overlay/my-monitoring/kustomization.yaml"
kubectl kustomize "$out/overlay/my-monitoring" >"$out/overlay.yaml" ||
    fail "docs/install.md's monitoring overlay does not build: $(cat "$out/overlay/my-monitoring/kustomization.yaml")"
[ "$(grep -c '^    release: kube-prometheus-stack$' "$out/overlay.yaml")" = 3 ] ||
    fail "docs/install.md's monitoring overlay does not label the kit's 3 objects"

# clusterctl's two components files (docs/clusterctl.md) split the CRDs between the providers.
kubectl kustomize "$src/config/clusterctl/control-plane" >"$out/cp.yaml" ||
    fail "kubectl kustomize config/clusterctl/control-plane failed"
kubectl kustomize "$src/config/clusterctl/infrastructure" >"$out/infra.yaml" ||
    fail "kubectl kustomize config/clusterctl/infrastructure failed"
crds() {
    awk '/^---/ { k = "" } /^kind: / { k = $2 } k == "CustomResourceDefinition" && /^  name: / { print $2 }' "$1" |
        sort | tr '\n' ' '
}
[ "$(crds "$out/cp.yaml")" = "nestedapiservers.controlplane.cluster.x-k8s.io nestedcontrollermanagers.controlplane.cluster.x-k8s.io nestedcontrolplanes.controlplane.cluster.x-k8s.io nestedetcds.controlplane.cluster.x-k8s.io " ] ||
    fail "control-plane components hold the CRDs: $(crds "$out/cp.yaml")"
[ "$(crds "$out/infra.yaml")" = "nestedclusters.infrastructure.cluster.x-k8s.io " ] ||
    fail "infrastructure components hold the CRDs: $(crds "$out/infra.yaml")"
for f in cp:control-plane-nested infra:infrastructure-nested; do
    [ "$(grep -c '^kind: Namespace$' "$out/${f%%:*}.yaml")" = 1 ] || fail "${f%%:*}: not exactly one Namespace"
    [ "$(grep -c '^kind: ' "$out/${f%%:*}.yaml")" = \
        "$(grep -c "^    cluster.x-k8s.io/provider: ${f#*:}$" "$out/${f%%:*}.yaml")" ] ||
        fail "${f%%:*}: not every object is labelled ${f#*:}"
done
grep -qE '^ +name: manager$' "$out/cp.yaml" || fail "control-plane components: no container named manager"
[ "$(grep -c '^kind: ' "$out/cp.yaml")" = "$((objects - 1))" ] ||
    fail "control-plane components are not config/default less the NestedCluster CRD"

# --- the default install ---
# Cluster API's Cluster CRD, so `kubectl auth can-i` resolves clusters.cluster.x-k8s.io.
install_crds "$src"
kubectl apply -k "$src/config/default" >"$out/apply.log" || fail "apply -k config/default: $(cat "$out/apply.log")"
for obj in namespace/nestcp-system serviceaccount/nestcp-controller-manager \
    role/nestcp-leader-election-role rolebinding/nestcp-leader-election-rolebinding \
    service/nestcp-controller-manager-metrics deployment/nestcp-controller-manager; do
    kubectl -n nestcp-system get "$obj" >/dev/null || fail "$obj was not created"
done
[ "$(kubectl -n nestcp-system get deploy,sa,svc -o name | grep -c nestcp-controller-manager)" = 3 ] ||
    fail "kubectl -n nestcp-system get deploy,sa,svc does not list the manager's three objects"
kubectl get clusterrole/nestcp-manager-role clusterrolebinding/nestcp-manager-rolebinding >/dev/null ||
    fail "the ClusterRole or its binding was not created"
# The admission policy (docs/install.md, "Refused at kubectl apply") and its parameters.
[ "$(kubectl get validatingadmissionpolicybinding nestcp-catalog \
    -o jsonpath='{.spec.policyName} {.spec.paramRef.namespace}/{.spec.paramRef.name} {.spec.paramRef.parameterNotFoundAction}')" = \
    "nestcp-catalog nestcp-system/nestcp-catalog Deny" ] ||
    fail "the ValidatingAdmissionPolicyBinding nestcp-catalog does not deny without nestcp-system/nestcp-catalog"
kubectl get validatingadmissionpolicy nestcp-catalog >/dev/null || fail "the ValidatingAdmissionPolicy was not created"
[ "$(kubectl -n nestcp-system get configmap nestcp-catalog -o jsonpath='{.data.kubernetes\.lines}')" = "1.35, 1.36, 1.37" ] ||
    fail "the admission parameters ConfigMap nestcp-system/nestcp-catalog was not created"
[ "$(kubectl get clusterrolebinding nestcp-manager-rolebinding \
    -o jsonpath='{.roleRef.name} {.subjects[0].namespace}/{.subjects[0].name}')" = \
    "nestcp-manager-role nestcp-system/nestcp-controller-manager" ] ||
    fail "the ClusterRoleBinding does not bind the manager's ServiceAccount"
case "$(kubectl get clusterrole nestcp-manager-role -o jsonpath='{.rules[*].verbs} {.rules[*].resources} {.rules[*].apiGroups}')" in
*'"*"'*) fail "the manager's ClusterRole has a wildcard" ;;
esac

jp() { kubectl -n nestcp-system get deployment nestcp-controller-manager -o jsonpath="$1"; }
args=$(jp '{.spec.template.spec.containers[0].args}')
for a in manager --leader-elect --metrics-bind-address=:8443 --health-probe-bind-address=:8081 \
    --templates=/usr/share/nestcp/templates; do
    case "$args" in *"\"$a\""*) ;; *) fail "manager args lack $a: $args" ;; esac
done
[ "$(jp '{.spec.template.spec.containers[0].name}')" = manager ] ||
    fail "the container must be named manager (clusterctl)"
[ "$(jp '{.spec.template.spec.serviceAccountName}')" = nestcp-controller-manager ] ||
    fail "the pod does not run as the manager's ServiceAccount"
[ "$(jp '{.spec.template.spec.securityContext.runAsNonRoot} {.spec.template.spec.securityContext.runAsUser} {.spec.template.spec.securityContext.seccompProfile.type}')" = \
    "true 65532 RuntimeDefault" ] || fail "pod securityContext is not non-root uid 65532 with seccomp RuntimeDefault"
[ "$(jp '{.spec.template.spec.containers[0].securityContext.readOnlyRootFilesystem} {.spec.template.spec.containers[0].securityContext.allowPrivilegeEscalation} {.spec.template.spec.containers[0].securityContext.capabilities.drop}')" = \
    'true false ["ALL"]' ] || fail "container securityContext is not locked down"
[ "$(jp '{.spec.template.spec.containers[0].livenessProbe.httpGet.path} {.spec.template.spec.containers[0].readinessProbe.httpGet.path} {.spec.template.spec.containers[0].livenessProbe.httpGet.port}')" = \
    "/healthz /readyz health" ] || fail "probes are not /healthz and /readyz"
[ "$(jp '{.spec.template.spec.containers[0].ports[?(@.name=="health")].containerPort} {.spec.template.spec.containers[0].ports[?(@.name=="https")].containerPort}')" = \
    "8081 8443" ] || fail "health/metrics ports are not 8081/8443"
[ "$(jp '{.spec.template.spec.containers[0].resources.requests.cpu} {.spec.template.spec.containers[0].resources.requests.memory} {.spec.template.spec.containers[0].resources.limits.cpu} {.spec.template.spec.containers[0].resources.limits.memory}')" = \
    "50m 64Mi 500m 256Mi" ] || fail "resources differ from docs/install.md"
[ "$(kubectl -n nestcp-system get service nestcp-controller-manager-metrics \
    -o jsonpath='{.spec.ports[0].port} {.spec.ports[0].targetPort} {.spec.selector.control-plane}')" = "8443 https controller-manager" ] ||
    fail "metrics Service does not select the manager's HTTPS port 8443"
# Secure metrics: the manager may review tokens, and a metrics reader role exists to bind.
[ "$(kubectl get clusterrole nestcp-metrics-reader -o jsonpath='{.rules[0].nonResourceURLs} {.rules[0].verbs}')" = \
    '["/metrics"] ["get"]' ] || fail "no ClusterRole nestcp-metrics-reader allowing get on /metrics"

# rules NS: every right the manager's ServiceAccount has in NS (a SelfSubjectRulesReview through
# `kubectl auth can-i --list`, so cluster-wide rights show too), one "resource [names] verbs"
# line each, verbs sorted; the discovery rights every user has are left out.
rules() {
    # What a ServiceAccount without any binding may do (discovery, and whatever the server's
    # own default roles give every authenticated user, e.g. reading ClusterTrustBundles on
    # 1.37) is the baseline, left out.
    kubectl auth can-i --list -n "$1" --as="system:serviceaccount:$1:nestcp-test-no-rights" \
        --as-group=system:serviceaccounts --as-group=system:authenticated >"$out/baseline.txt"
    kubectl auth can-i --list -n "$1" --as="$sa" | python3 -c '
import re, sys
def parse(text):
    out = set()
    for line in text.splitlines()[1:]:
        m = re.match(r"^(\S+)\s+\[[^\]]*\]\s+(\[[^\]]*\])\s+\[([^\]]*)\]\s*$", line)
        if not m or m.group(1).startswith("selfsubject"):
            continue
        out.add("%s %s %s" % (m.group(1), m.group(2), " ".join(sorted(m.group(3).split()))))
    return out
out = parse(sys.stdin.read()) - parse(open(sys.argv[1]).read())
print("".join(l + "\n" for l in sorted(out)), end="")' "$out/baseline.txt"
}
# The manager's rights in a namespace it reconciles: exactly these (config/rbac/role.yaml).
cat >"$out/reconcile.rules" <<'RULES'
clusters.cluster.x-k8s.io [] list watch
configmaps [] create delete get list patch watch
events [] create patch
jobs.batch [] create delete list watch
nestedapiservers.controlplane.cluster.x-k8s.io [] delete list patch watch
nestedapiservers.controlplane.cluster.x-k8s.io/finalizers [] update
nestedapiservers.controlplane.cluster.x-k8s.io/status [] update
nestedclusters.infrastructure.cluster.x-k8s.io [] list patch watch
nestedclusters.infrastructure.cluster.x-k8s.io/status [] update
nestedcontrollermanagers.controlplane.cluster.x-k8s.io [] delete list patch watch
nestedcontrollermanagers.controlplane.cluster.x-k8s.io/finalizers [] update
nestedcontrollermanagers.controlplane.cluster.x-k8s.io/status [] update
nestedcontrolplanes.controlplane.cluster.x-k8s.io [] list patch watch
nestedcontrolplanes.controlplane.cluster.x-k8s.io/finalizers [] update
nestedcontrolplanes.controlplane.cluster.x-k8s.io/status [] update
nestedetcds.controlplane.cluster.x-k8s.io [] delete list patch watch
nestedetcds.controlplane.cluster.x-k8s.io/finalizers [] update
nestedetcds.controlplane.cluster.x-k8s.io/status [] update
networkpolicies.networking.k8s.io [] create delete get list patch watch
persistentvolumeclaims [] list watch
pods [] delete list patch watch
secrets [] create delete get list patch watch
services [] create delete get list patch watch
statefulsets.apps [] create delete get list patch watch
RULES
# Secure metrics' reviews: cluster-scoped, so in every namespace, with either install.
cat >"$out/auth.rules" <<'RULES'
subjectaccessreviews.authorization.k8s.io [] create
tokenreviews.authentication.k8s.io [] create
RULES
# Leader election, in the manager's namespace only.
cat >"$out/lease.rules" <<'RULES'
leases.coordination.k8s.io [] create
leases.coordination.k8s.io [nestcp-manager] get update
RULES
# expect_rules NS FILE...: the rights in NS are exactly the union of the FILEs (none: no right).
expect_rules() {
    local ns=$1
    shift
    rules "$ns" >"$out/got.rules"
    if [ $# -gt 0 ]; then LC_ALL=C sort -u "$@" >"$out/want.rules"; else : >"$out/want.rules"; fi
    diff -u "$out/want.rules" "$out/got.rules" >"$out/rules.diff" ||
        fail "the manager's rights in $ns differ from the expected ones (-want +got):
$(cat "$out/rules.diff")"
}
# can ANSWER NS CAN-I-ARGS...: a direct `kubectl auth can-i` as the manager.
can() {
    local want=$1 ns=$2 a
    shift 2
    a=$(kubectl auth can-i "$@" -n "$ns" --as="$sa" 2>/dev/null || true)
    [ "$a" = "$want" ] || fail "kubectl auth can-i $* -n $ns as the manager: $a, want $want"
}
# What no install needs, asked directly (a cross-check of the rules above).
check_denied() {
    can no "$1" create pods
    can no "$1" update pods --subresource=status
    can no "$1" update configmaps
    can no "$1" update secrets
    can no "$1" update statefulsets.apps
    can no "$1" delete nestedcontrolplanes.controlplane.cluster.x-k8s.io
    can no "$1" create events.events.k8s.io
    can no default get nodes
    can no default delete namespaces
    can no default create customresourcedefinitions.apiextensions.k8s.io
    can no nestcp-system get leases.coordination.k8s.io/another-lease
}

# docs/install.md's two examples, as written there.
[ "$(kubectl auth can-i update nestedcontrolplanes --subresource=status -A --as="$sa")" = yes ] ||
    fail "docs/install.md: update nestedcontrolplanes/status is not allowed"
[ "$(kubectl auth can-i create pods -n default --as="$sa" || true)" = no ] ||
    fail "docs/install.md: create pods is allowed"
# The ClusterRole: the same rights in every namespace, the Lease only in nestcp-system.
expect_rules default "$out/reconcile.rules" "$out/auth.rules"
expect_rules some-tenant "$out/reconcile.rules" "$out/auth.rules"
expect_rules nestcp-system "$out/reconcile.rules" "$out/lease.rules" "$out/auth.rules"
can yes default list secrets --all-namespaces
can yes some-tenant delete statefulsets.apps
check_denied default

# --- one namespace only ---
if ! kubectl get namespace tenants >/dev/null 2>&1; then
    kubectl create namespace tenants >/dev/null
    created_tenants=true
fi
# docs/install.md's uninstall that keeps the CRDs removes the cluster-wide objects by label.
kubectl delete clusterrole,clusterrolebinding -l cluster.x-k8s.io/provider=control-plane-nested >/dev/null
kubectl get clusterrole nestcp-manager-role >/dev/null 2>&1 && fail "the ClusterRole survived the label delete"
kubectl apply -k "$src/config/namespaced" >"$out/apply-ns.log" ||
    fail "apply -k config/namespaced: $(cat "$out/apply-ns.log")"
kubectl get clusterrole nestcp-manager-role >/dev/null 2>&1 &&
    fail "config/namespaced created a ClusterRole"
[ "$(kubectl -n tenants get rolebinding nestcp-manager-rolebinding \
    -o jsonpath='{.roleRef.kind}/{.roleRef.name} {.subjects[0].namespace}/{.subjects[0].name}')" = \
    "Role/nestcp-manager-role nestcp-system/nestcp-controller-manager" ] ||
    fail "the tenants RoleBinding does not bind the manager's ServiceAccount to its Role"
case "$(jp '{.spec.template.spec.containers[0].args}')" in
*'"--namespace=tenants"'*) ;;
*) fail "config/namespaced does not start the manager with --namespace=tenants" ;;
esac
# The Role: the rights in tenants only; nothing anywhere else, nothing cluster-wide (a
# ClusterRoleBinding would show in every namespace).
expect_rules tenants "$out/reconcile.rules" "$out/auth.rules"
expect_rules default "$out/auth.rules"
expect_rules some-tenant "$out/auth.rules"
expect_rules nestcp-system "$out/lease.rules" "$out/auth.rules"
can no default list secrets --all-namespaces
can yes tenants update nestedcontrolplanes.controlplane.cluster.x-k8s.io --subresource=status
check_denied tenants
echo "ok: config/default and config/namespaced install, and grant exactly the manager's rights"
