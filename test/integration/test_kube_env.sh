#!/usr/bin/env bash
# The super cluster from hack/kube-env.sh is real: a namespace, a CRD with a status subresource,
# a custom resource written with server-side apply and its status updated, all through kubectl
# with TLS verification on (the kubeconfig carries the env's CA; nothing skips verification);
# a claim of the default StorageClass is bound to a real hostPath volume that goes with it.
set -euo pipefail
: "${KUBECONFIG:?KUBECONFIG must point at the super cluster}"

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

ns=kube-env-check-$$
kubectl() { command kubectl --request-timeout=20s "$@"; }
trap 'kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true;
      kubectl delete crd widgets.test.nestcp.dev --wait=false >/dev/null 2>&1 || true' EXIT

grep -q 'insecure-skip-tls-verify' "$KUBECONFIG" && fail "kubeconfig skips TLS verification"
grep -q 'certificate-authority-data' "$KUBECONFIG" || fail "kubeconfig has no CA"

[ "$(kubectl get --raw /readyz)" = ok ] || fail "apiserver is not ready"
[ "$(kubectl version -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])')" = "v${KUBE_VERSION:-1.37.2}" ] || fail "server is not ${KUBE_VERSION:-1.37.2}"
# The kubectl on the tests' PATH is the one built for the server, inside the skew policy.
[ "$(kubectl version -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["clientVersion"]["gitVersion"])')" = "v${KUBE_VERSION:-1.37.2}" ] || fail "kubectl is not ${KUBE_VERSION:-1.37.2}: $(command -v kubectl)"

kubectl create namespace "$ns" >/dev/null
kubectl get namespace "$ns" -o jsonpath='{.status.phase}' | grep -qx Active ||
    fail "namespace $ns is not Active"

kubectl apply -f - >/dev/null <<YAML
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.test.nestcp.dev
spec:
  group: test.nestcp.dev
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
          status:
            type: object
            properties:
              ready: {type: boolean}
YAML
kubectl wait --for=condition=Established crd/widgets.test.nestcp.dev --timeout=30s >/dev/null

# Server-side apply of a custom resource.
cat <<YAML | kubectl apply --server-side --field-manager=kube-env-test -f - >/dev/null
apiVersion: test.nestcp.dev/v1
kind: Widget
metadata: {name: w1, namespace: $ns}
spec: {size: 3}
YAML
[ "$(kubectl -n "$ns" get widget w1 -o jsonpath='{.spec.size}')" = 3 ] || fail "SSA did not write spec"
kubectl -n "$ns" get widget w1 -o jsonpath='{.metadata.managedFields[*].manager}' |
    grep -qw kube-env-test || fail "SSA field manager not recorded"

# Status goes through the status subresource only: a patch on the main resource ignores it.
gen=$(kubectl -n "$ns" get widget w1 -o jsonpath='{.metadata.generation}')
kubectl -n "$ns" patch widget w1 --type=merge -p '{"status":{"ready":true}}' >/dev/null
[ -z "$(kubectl -n "$ns" get widget w1 -o jsonpath='{.status.ready}')" ] ||
    fail "status was written through the main resource"
kubectl -n "$ns" patch widget w1 --subresource=status --type=merge \
    -p '{"status":{"ready":true}}' >/dev/null
[ "$(kubectl -n "$ns" get widget w1 -o jsonpath='{.status.ready}')" = true ] ||
    fail "status subresource update did not stick"
[ "$(kubectl -n "$ns" get widget w1 -o jsonpath='{.metadata.generation}')" = "$gen" ] ||
    fail "a status write bumped metadata.generation"

# The controller manager is real: a new namespace gets its default ServiceAccount.
for _ in $(seq 1 100); do
    kubectl -n "$ns" get serviceaccount default >/dev/null 2>&1 && break
    sleep 0.2
done
kubectl -n "$ns" get serviceaccount default >/dev/null || fail "no default ServiceAccount (kube-controller-manager)"

# Pod Security admission enforces the restricted profile in every namespace by default: a pod
# that runs as root with its capabilities is refused, and the refusal names the profile.
out=$(kubectl -n "$ns" create -f - 2>&1 <<YAML || true
apiVersion: v1
kind: Pod
metadata: {name: rooted}
spec:
  containers: [{name: c, image: example.invalid/none}]
YAML
)
case "$out" in
*'violates PodSecurity "restricted:latest"'*) ;;
*) fail "a pod outside the restricted profile was not refused: $out" ;;
esac

# StatefulSets get Pods (they stay Pending: no scheduler, no kubelet) and garbage collection
# removes them with their owner.
kubectl -n "$ns" create -f - >/dev/null <<YAML
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: sts}
spec:
  serviceName: sts
  replicas: 1
  selector: {matchLabels: {app: sts}}
  template:
    metadata: {labels: {app: sts}}
    spec:
      securityContext: {runAsNonRoot: true, runAsUser: 65532, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: c
        image: example.invalid/none
        securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
YAML
for _ in $(seq 1 150); do
    kubectl -n "$ns" get pod sts-0 >/dev/null 2>&1 && break
    sleep 0.2
done
kubectl -n "$ns" get pod sts-0 >/dev/null || fail "the StatefulSet controller created no Pod"
kubectl -n "$ns" delete statefulset sts --wait=false >/dev/null
for _ in $(seq 1 150); do
    kubectl -n "$ns" get pod sts-0 >/dev/null 2>&1 || break
    sleep 0.2
done
kubectl -n "$ns" get pod sts-0 >/dev/null 2>&1 && fail "garbage collection left Pod sts-0 behind"

# RBAC is real: an unprivileged ServiceAccount token is forbidden from listing secrets.
answer=$(kubectl auth can-i list secrets --as="system:serviceaccount:$ns:default" -n "$ns" 2>/dev/null || true)
[ "$answer" = no ] || fail "RBAC allows what it should not (can-i said '$answer')"

# Storage is real: a claim without a class gets the default StorageClass, the controller
# manager's hostPath provisioner binds it to a new PersistentVolume under /tmp/hostpath_pv, and
# deleting the claim deletes the volume and its directory (reclaim policy Delete).
[ "$(kubectl get storageclass standard \
    -o jsonpath='{.metadata.annotations.storageclass\.kubernetes\.io/is-default-class}')" = true ] ||
    fail "no default StorageClass standard"
kubectl -n "$ns" create -f - >/dev/null <<YAML
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: claim}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
YAML
command kubectl -n "$ns" wait --for=jsonpath='{.status.phase}'=Bound pvc/claim --timeout=60s \
    >/dev/null || fail "claim $ns/claim is not Bound: $(kubectl -n "$ns" describe pvc claim)"
[ "$(kubectl -n "$ns" get pvc claim -o jsonpath='{.spec.storageClassName}')" = standard ] ||
    fail "claim $ns/claim did not get the default StorageClass"
pv=$(kubectl -n "$ns" get pvc claim -o jsonpath='{.spec.volumeName}')
pv_path=$(kubectl get pv "$pv" -o jsonpath='{.spec.hostPath.path}')
case "$pv_path" in /tmp/hostpath_pv/?*) ;; *) fail "PersistentVolume $pv is not hostPath under /tmp/hostpath_pv: '$pv_path'" ;; esac
[ "$(kubectl get pv "$pv" -o jsonpath='{.spec.claimRef.namespace}/{.spec.claimRef.name} {.spec.persistentVolumeReclaimPolicy}')" = "$ns/claim Delete" ] ||
    fail "PersistentVolume $pv is not bound to $ns/claim with reclaim policy Delete"
[ -d "$pv_path" ] || fail "the directory $pv_path of PersistentVolume $pv is missing"
kubectl -n "$ns" delete pvc claim --timeout=60s >/dev/null
command kubectl wait --for=delete "pv/$pv" --timeout=60s >/dev/null ||
    fail "PersistentVolume $pv outlived its claim"
# The deleter removes the directory before it deletes the PersistentVolume.
[ ! -e "$pv_path" ] || fail "$pv_path outlived PersistentVolume $pv"

# The other supported super-cluster release: KUBE_VERSION=1.36.3 starts it (its own ports,
# its own kubectl), nestcp's CRDs load with their CEL rules, and one is enforced.
other=1.36.3
[ "${KUBE_VERSION:-1.37.2}" = 1.36.3 ] && other=1.37.2
odir=$(mktemp -d /tmp/nestcp-kube-other.XXXXXX)
trap 'kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true;
      kubectl delete crd widgets.test.nestcp.dev --wait=false >/dev/null 2>&1 || true;
      "$NESTCP_SOURCE_DIR/hack/kube-env.sh" down --dir "$odir" >/dev/null 2>&1 || true' EXIT
KUBE_VERSION=$other "$NESTCP_SOURCE_DIR/hack/kube-env.sh" up --dir "$odir" >"$odir.env" 2>"$odir.log" ||
    fail "KUBE_VERSION=$other hack/kube-env.sh up failed: $(tail -n 20 "$odir.log")"
okubectl() { "$odir/bin/kubectl" --kubeconfig "$odir/kubeconfig" --request-timeout=20s "$@"; }
got=$(okubectl version -o json | python3 -c 'import json,sys; v=json.load(sys.stdin); print(v["serverVersion"]["gitVersion"], v["clientVersion"]["gitVersion"])')
[ "$got" = "v$other v$other" ] || fail "KUBE_VERSION=$other: server and kubectl are $got"
okubectl apply -f "$NESTCP_SOURCE_DIR/config/crd/bases" -f "$NESTCP_SOURCE_DIR/config/crd/capi" >/dev/null ||
    fail "the CRDs do not load into $other"
okubectl wait --for condition=established --timeout=60s crd/nestedetcds.controlplane.cluster.x-k8s.io >/dev/null ||
    fail "the CRDs are not Established on $other"
printf '%s\n' 'apiVersion: controlplane.cluster.x-k8s.io/v1beta1' 'kind: NestedEtcd' \
    'metadata: {name: even, namespace: default}' 'spec: {replicas: 4}' >"$odir/even.yaml"
[ "$(okubectl get storageclass standard -o jsonpath='{.provisioner}')" = kubernetes.io/host-path ] ||
    fail "KUBE_VERSION=$other: no default StorageClass standard"
out=$(okubectl apply -f "$odir/even.yaml" 2>&1) && fail "$other accepted 4 etcd members"
case "$out" in *spec.replicas*"must be odd"*) ;; *) fail "$other: 4 members refused without the CEL message: $out" ;; esac
"$NESTCP_SOURCE_DIR/hack/kube-env.sh" down --dir "$odir" >/dev/null 2>&1
rm -f "$odir.env" "$odir.log"

echo "PASS: namespace, CRD, server-side apply, status subresource, controller manager (service accounts, StatefulSet pods, garbage collection), RBAC, hostPath volumes of the default StorageClass; a $other super cluster loads the CRDs and their CEL rules"
