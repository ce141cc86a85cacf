#!/usr/bin/env bash
# A hostile tenant against the real super cluster: whoever may write a component object must
# not borrow the manager's rights. Next to a good cluster, each attack is a control plane of
# its own, and each is refused with the object and field named (Ready False, a Warning
# Event), gets no object at all, and nothing changes outside the namespace or in the good
# cluster:
#   - a patch that moves an object to kube-system (JSON patch, merge patch);
#   - patches that give the pods host namespaces, privileged containers, a hostPath volume,
#     another cluster's kubeconfig Secret, or a Service with externalIPs or a selector for
#     the good cluster's pods;
#   - extraArgs that open the API server (authorization-mode AlwaysAllow) or smuggle a flag in
#     a newline;
#   - a second control plane that claims the good cluster's name: ClusterNameInUse, and the
#     good cluster's objects keep their owner and generation, also after it is deleted.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

ns=nested-isolation-$$
install_crds
new_namespace "$ns"
fake_kubelet "$ns"
start_manager mgr "$ns"

# outside: what nestcp could have touched outside the test's namespace: every StatefulSet and
# Service, and the Secrets and ConfigMaps of any cluster, with their resourceVersions.
outside() {
    {
        kubectl get statefulsets,services -A -o go-template='{{range .items}}
{{- if ne .metadata.namespace "'"$ns"'"}}{{.kind}} {{.metadata.namespace}}/{{.metadata.name}} {{.metadata.resourceVersion}}
{{end}}{{end}}'
        kubectl get secrets,configmaps -A -l cluster.x-k8s.io/cluster-name -o go-template='{{range .items}}
{{- if ne .metadata.namespace "'"$ns"'"}}{{.kind}} {{.metadata.namespace}}/{{.metadata.name}} {{.metadata.resourceVersion}}
{{end}}{{end}}'
    } | sort
}
owned() {
    kubectl -n "$ns" get secrets,services,statefulsets -l "cluster.x-k8s.io/cluster-name=$1" -o name
}
# good_state: owner and generation of the good cluster's StatefulSets and its CA.
good_state() {
    kubectl -n "$ns" get statefulsets -l cluster.x-k8s.io/cluster-name=good -o go-template='{{range .items}}{{.metadata.name}} {{.metadata.generation}} {{range .metadata.ownerReferences}}{{.uid}}{{end}}
{{end}}'
    kubectl -n "$ns" get secret good-ca -o jsonpath='{.metadata.ownerReferences[0].uid} {.data.tls\.crt}' |
        sha256sum
}

cluster good | kubectl -n "$ns" apply -f - >/dev/null
wait_ready "$ns" good 180
before_outside=$(outside)
before_good=$(good_state)

# attack NAME WANT NCP_EXTRA KAS_EXTRA ETCD_EXTRA: a control plane with a hostile spec.
declare -A want
attack() {
    want[$1]=$2
    cluster "$1" "$3" "$4" 1.36.3 "${5:-}"
    echo ---
}
{
    attack ns-json 'StatefulSet '"$ns"'/ns-json-etcd: metadata.namespace: may not be changed' '' '' \
        'patches: [{target: {kind: StatefulSet, name: ns-json-etcd}, type: json, patch: [{op: replace, path: /metadata/namespace, value: kube-system}]}]'
    attack ns-merge 'Service '"$ns"'/ns-merge-etcd: metadata.namespace: may not be changed' '' '' \
        'patches: [{target: {kind: Service, name: ns-merge-etcd}, type: merge, patch: {metadata: {namespace: kube-system}}}]'
    attack hostnet 'spec.template.spec.hostNetwork: true is not allowed (host namespaces)' '' '' \
        'patches: [{target: {kind: StatefulSet, name: hostnet-etcd}, type: merge, patch: {spec: {template: {spec: {hostNetwork: true}}}}}]'
    attack priv 'securityContext.privileged: true is not allowed' '' \
        'patches: [{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: priv-apiserver}, spec: {template: {spec: {containers: [{name: kube-apiserver, securityContext: {privileged: true}}]}}}}]'
    attack hostpath 'hostPath volumes are not allowed' '' \
        'patches: [{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: hostpath-apiserver}, spec: {template: {spec: {volumes: [{name: root, hostPath: {path: /}}]}}}}]'
    attack loot 'Secret "good-kubeconfig" is not one this component uses' '' \
        'patches: [{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: loot-apiserver}, spec: {template: {spec: {volumes: [{name: loot, secret: {secretName: good-kubeconfig}}]}}}}]'
    attack extip 'spec.externalIPs: external IPs are not allowed' '' \
        'patches: [{target: {kind: Service, name: extip-apiserver}, type: merge, patch: {spec: {externalIPs: [203.0.113.7]}}}]'
    attack steal 'spec.selector: may not be changed: it could select another cluster' '' \
        'patches: [{target: {kind: Service, name: steal-apiserver}, type: merge, patch: {spec: {selector: {cluster.x-k8s.io/cluster-name: good}}}}]'
    attack open '--authorization-mode=AlwaysAllow is not allowed' '' \
        'extraArgs: {authorization-mode: AlwaysAllow}'
    attack newline 'has a value with a newline or another control character' '' \
        'extraArgs: {v: "2\n--anonymous-auth=true"}'
} >"$work/attacks.yaml"
kubectl -n "$ns" apply -f "$work/attacks.yaml" >/dev/null

for c in "${!want[@]}"; do
    refused() {
        local st
        st=$(cond "$ns" "ncp/$1" Ready)
        [ "$(cut -f1 <<<"$st")" = False ] && [[ $(cut -f3- <<<"$st") == *"${want[$1]}"* ]]
    }
    until_true 60 refused "$c" ||
        fail "$c: not refused with '${want[$c]}'; Ready is '$(cond "$ns" "ncp/$c" Ready)'"
    echo "$c: $(cond "$ns" "ncp/$c" Ready | cut -f2,3 | head -c 240)"
    reason=$(cond "$ns" "ncp/$c" Ready | cut -f2)
    kubectl -n "$ns" get events --field-selector "involvedObject.name=$c,reason=$reason,type=Warning" \
        -o name | grep -q . || fail "$c: no Warning event $reason"
    [ -z "$(owned "$c")" ] || fail "$c: objects were created: $(owned "$c" | tr '\n' ' ')"
done

# --- a second control plane claims the good cluster's name ---
cat <<EOF | kubectl -n "$ns" apply -f - >/dev/null
apiVersion: controlplane.cluster.x-k8s.io/v1beta1
kind: NestedControlPlane
metadata: {name: newcomer, labels: {cluster.x-k8s.io/cluster-name: good}}
spec:
  version: "1.36.3"
  etcd: {kind: NestedEtcd, name: newcomer-etcd}
  apiserver: {kind: NestedAPIServer, name: newcomer-apiserver}
  controllerManager: {kind: NestedControllerManager, name: newcomer-cm}
---
apiVersion: controlplane.cluster.x-k8s.io/v1beta1
kind: NestedEtcd
metadata: {name: newcomer-etcd}
spec: {replicas: 1}
---
apiVersion: controlplane.cluster.x-k8s.io/v1beta1
kind: NestedAPIServer
metadata: {name: newcomer-apiserver}
spec: {replicas: 1}
---
apiVersion: controlplane.cluster.x-k8s.io/v1beta1
kind: NestedControllerManager
metadata: {name: newcomer-cm}
spec: {replicas: 1}
EOF
in_use() { [ "$(cond "$ns" ncp/newcomer Ready | cut -f2)" = ClusterNameInUse ]; }
until_true 60 in_use || fail "newcomer: Ready is '$(cond "$ns" ncp/newcomer Ready)'"
msg=$(cond "$ns" ncp/newcomer Ready | cut -f3)
echo "newcomer: $msg"
[[ $msg == *"in use by NestedControlPlane $ns/good"* ]] || fail "the refusal does not name the owner"
kubectl -n "$ns" get events --field-selector "involvedObject.name=newcomer,reason=ClusterNameInUse,type=Warning" \
    -o name | grep -q . || fail "newcomer: no Warning event ClusterNameInUse"
# Its components are never adopted, so they apply nothing.
waiting() { [ "$(cond "$ns" netcd/newcomer-etcd Ready | cut -f2)" = WaitingForAdoption ]; }
until_true 30 waiting || fail "newcomer-etcd: Ready is '$(cond "$ns" netcd/newcomer-etcd Ready)'"
[ "$(good_state)" = "$before_good" ] || fail "the good cluster changed: $(good_state)"
kubectl -n "$ns" delete ncp newcomer --wait=true --timeout=60s >/dev/null ||
    fail "newcomer was not deleted"
is_ready "$ns" ncp/good || fail "good is not Ready after the newcomer left"
[ "$(good_state)" = "$before_good" ] || fail "the good cluster changed when the newcomer left"
for o in $(owned good); do
    kubectl -n "$ns" get "$o" >/dev/null || fail "$o is gone"
done

# Nothing appeared or changed outside (objects may vanish: an earlier test's namespace may
# still be terminating).
changed=$(comm -13 <(echo "$before_outside") <(outside))
[ -z "$changed" ] || fail "objects outside $ns were created or changed: $(head -5 <<<"$changed")"
echo "nothing outside $ns changed; the good cluster kept its objects, owners and generations"
echo PASS
