#!/usr/bin/env bash
# Never modify an object nestcp does not own, against the real super cluster:
#   - a Service someone created (kubectl, no labels, no owner) under the name the API server's
#     Service of a new control plane needs: it is left exactly as it is (resourceVersion,
#     selector, ports), the NestedAPIServer is Ready False with reason ObjectConflict naming the
#     Service, and a Warning Event ObjectConflict says the same;
#   - once it is deleted, nestcp creates its own Service and the control plane becomes Ready,
#     with nothing else to do;
#   - a CA the user made with `kubectl create secret tls` (no cluster-name label) for a second
#     cluster: used as that cluster's CA (the admin kubeconfig trusts it), labelled so the cache
#     sees it, with an Event saying so, and no Event claiming a CA Secret was created that was
#     not;
#   - a write the API server refuses (a tenant's patch giving the StatefulSet a negative
#     minReadySeconds, which only the server's validation catches): the NestedAPIServer is
#     Ready False with reason WriteRejected and the server's message, with a Warning Event; once
#     the patch is removed the component becomes Ready and the condition goes.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

ns=nested-ownership-$$
install_crds
new_namespace "$ns"
fake_kubelet "$ns"

kubectl -n "$ns" create service clusterip o1-apiserver --tcp=8080:8080 >/dev/null
foreign() {
    kubectl -n "$ns" get service o1-apiserver \
        -o jsonpath='{.metadata.resourceVersion} {.spec.selector} {.spec.ports[*].port} {.metadata.ownerReferences}'
}
before=$(foreign)

start_manager mgr "$ns"
cluster o1 | kubectl -n "$ns" apply -f - >/dev/null
conflict() { [ "$(cond "$ns" nkas/o1-apiserver Ready | cut -f2)" = ObjectConflict ]; }
until_true 120 conflict ||
    fail "NestedAPIServer o1-apiserver: Ready is '$(cond "$ns" nkas/o1-apiserver Ready)', not ObjectConflict"
msg=$(cond "$ns" nkas/o1-apiserver Ready | cut -f3)
echo "o1-apiserver: $msg"
case "$msg" in
*"Service $ns/o1-apiserver exists and nestcp does not own it"*"leaves it as it is"*) ;;
*) fail "the condition does not name the Service in the way: $msg" ;;
esac
[ -n "$(kubectl -n "$ns" get events -o name --field-selector \
    reason=ObjectConflict,involvedObject.name=o1-apiserver,type=Warning)" ] ||
    fail "no Warning Event ObjectConflict on o1-apiserver"
after=$(foreign)
[ "$after" = "$before" ] || fail "the foreign Service changed: '$before' -> '$after'"
[ -z "$(kubectl -n "$ns" get sts o1-apiserver -o name --ignore-not-found)" ] ||
    fail "the API server's StatefulSet was created though its Service is not nestcp's"
echo "o1-apiserver: the foreign Service is untouched ($after)"

# --- the user moves it out of the way: nestcp creates its own ---
kubectl -n "$ns" delete service o1-apiserver --wait=true >/dev/null
t0=$(now)
wait_ready "$ns" o1 120
echo "o1: Ready $(elapsed "$t0") s after the foreign Service was deleted"
owner=$(kubectl -n "$ns" get service o1-apiserver \
    -o jsonpath='{.metadata.ownerReferences[?(@.controller==true)].kind}/{.metadata.ownerReferences[?(@.controller==true)].name}')
[ "$owner" = NestedAPIServer/o1-apiserver ] || fail "the new Service is controlled by '$owner'"

# --- a CA Secret without the cluster-name label ---
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
    -subj /CN=user-ca -addext basicConstraints=critical,CA:TRUE \
    -addext keyUsage=critical,keyCertSign,cRLSign,digitalSignature \
    -keyout "$work/user-ca.key" -out "$work/user-ca.crt" 2>/dev/null
kubectl -n "$ns" create secret tls o2-ca --cert "$work/user-ca.crt" --key "$work/user-ca.key" \
    >/dev/null
cluster o2 | kubectl -n "$ns" apply -f - >/dev/null
t0=$(now)
wait_ready "$ns" o2 180
echo "o2: Ready after $(elapsed "$t0") s with the user's CA"
[ "$(kubectl -n "$ns" get secret o2-ca -o jsonpath='{.metadata.labels.cluster\.x-k8s\.io/cluster-name}')" = o2 ] ||
    fail "o2-ca was not labelled cluster.x-k8s.io/cluster-name=o2"
[ "$(kubectl -n "$ns" get secret o2-ca -o jsonpath='{.data.tls\.crt}' | base64 -d)" = "$(cat "$work/user-ca.crt")" ] ||
    fail "o2-ca's certificate changed"
kubectl -n "$ns" get secret o2-kubeconfig -o jsonpath='{.data.value}' | base64 -d |
    awk '$1 == "certificate-authority-data:" { print $2 }' | base64 -d >"$work/o2-kc-ca.crt"
fingerprint() { openssl x509 -noout -fingerprint -sha256 -in "$1"; }
[ "$(fingerprint "$work/o2-kc-ca.crt")" = "$(fingerprint "$work/user-ca.crt")" ] ||
    fail "the admin kubeconfig does not trust the user's CA"
[ -n "$(kubectl -n "$ns" get events -o name --field-selector \
    reason=LabelledCertificateAuthority,involvedObject.name=o2)" ] ||
    fail "no Event LabelledCertificateAuthority on o2"
created=$(kubectl -n "$ns" get events --field-selector \
    reason=CreatedCertificateAuthorities,involvedObject.name=o2 -o jsonpath='{.items[*].message}')
case "$created" in
"3 CA Secrets created") ;;
*) fail "the CreatedCertificateAuthorities Events say '$created', not the 3 created" ;;
esac
echo "o2: the user's CA was used and labelled; Events: $created"

# --- a write the API server refuses ---
cluster o3 '' 'patches: [{target: {kind: StatefulSet, name: o3-apiserver}, type: json, patch: [{op: add, path: /spec/minReadySeconds, value: -10}]}]' |
    kubectl -n "$ns" apply -f - >/dev/null
rejected() { [ "$(cond "$ns" nkas/o3-apiserver Ready | cut -f2)" = WriteRejected ]; }
until_true 180 rejected ||
    fail "NestedAPIServer o3-apiserver: Ready is '$(cond "$ns" nkas/o3-apiserver Ready)', not WriteRejected"
msg=$(cond "$ns" nkas/o3-apiserver Ready | cut -f3)
echo "o3-apiserver: $msg"
case "$msg" in
*"StatefulSet $ns/o3-apiserver was rejected"*minReadySeconds*) ;;
*) fail "the condition does not carry the server's refusal: $msg" ;;
esac
[ -n "$(kubectl -n "$ns" get events -o name --field-selector \
    reason=WriteRejected,involvedObject.name=o3-apiserver,type=Warning)" ] ||
    fail "no Warning Event WriteRejected on o3-apiserver"
kubectl -n "$ns" patch nkas o3-apiserver --type json -p '[{"op":"remove","path":"/spec/patches"}]' \
    >/dev/null
wait_ready "$ns" o3 180
[ "$(cond "$ns" nkas/o3-apiserver Ready | cut -f1)" = True ] ||
    fail "o3-apiserver is not Ready once the patch is gone: $(cond "$ns" nkas/o3-apiserver Ready)"
echo "o3: Ready once the refused patch was removed"
echo PASS
