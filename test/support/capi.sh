# shellcheck shell=bash
# Sourced by the end-to-end tests that install Cluster API for real with clusterctl (after
# test/e2e/lib.sh): its core manager (built from the Go module proxy by hack/kube-build.sh) runs
# as the pod of the Deployment `clusterctl init` creates, through the node agent.
#
#   capi_repo DIR                 a local provider repository, as a release publishes it, in
#                                 DIR/repo, and clusterctl's config DIR/clusterctl.yaml naming it
#   capi_listen_on DIR WEBHOOK HEALTH DIAGNOSTICS
#                                 Cluster API's pod (DIR's components file) on these ports
#   capi_init DIR WEBHOOK LOG     clusterctl init on $KUBECONFIG, webhook certificates, until
#                                 Cluster API's Deployment is Available; sets capi_pod
#   capi_manager_pid AGENT_STATE  the pid of Cluster API's manager, run by the node agent whose
#                                 state directory is AGENT_STATE
#   clusterctl_in DIR ARGS...     clusterctl with DIR's config
#   capi_free_ports N             N free loopback ports (for capi_listen_on)
#   capi_remove DIR               removes what capi_init installed with DIR's config
#
# Cluster API's pod listens on every loopback address (webhook 9443, health 9440, diagnostics
# 8443 by default): two of them on one machine, one per super cluster, need ports of their own
# (capi_listen_on), and each super cluster's webhooks are pointed at its own pod's port
# (test/support/webhook_certs.py).

capi_version=$NESTCP_CAPI_VERSION
nestcp_release=v0.1.0
capi=$("$NESTCP_SOURCE_DIR/hack/kube-build.sh" cluster-api "$capi_version") ||
    fail "Cluster API $capi_version could not be built (hack/kube-build.sh)"
export XDG_CONFIG_HOME=$work/config CLUSTERCTL_DISABLE_VERSIONCHECK=true

clusterctl_in() {
    local dir=$1
    shift
    "$capi/clusterctl" --config "$dir/clusterctl.yaml" "$@"
}

capi_repo() {
    local dir=$1 repo=$1/repo p
    for p in cluster-api/v$capi_version bootstrap-kubeadm/v$capi_version \
        control-plane-nested/$nestcp_release infrastructure-nested/$nestcp_release; do
        mkdir -p "$repo/$p"
    done
    kubectl kustomize "$capi/config/core/default" |
        sed "s|gcr.io/k8s-staging-cluster-api/cluster-api-controller:main|registry.k8s.io/cluster-api/cluster-api-controller:v$capi_version|" \
            >"$repo/cluster-api/v$capi_version/core-components.yaml"
    kubectl kustomize "$capi/config/bootstrap-kubeadm/default" |
        sed "s|gcr.io/k8s-staging-cluster-api/kubeadm-bootstrap-controller:main|registry.k8s.io/cluster-api/kubeadm-bootstrap-controller:v$capi_version|" \
            >"$repo/bootstrap-kubeadm/v$capi_version/bootstrap-components.yaml"
    cp "$capi/metadata.yaml" "$repo/cluster-api/v$capi_version/"
    cp "$capi/metadata.yaml" "$repo/bootstrap-kubeadm/v$capi_version/"
    # A release names its image first (docs/clusterctl.md); clusterctl takes only canonical
    # names. hack/image-build.sh tags its builds localhost/nestcp.
    mkdir -p "$dir/release"
    cp -R "$NESTCP_SOURCE_DIR/config" "$dir/release/config"
    cat >"$dir/release/config/clusterctl/control-plane/kustomization.yaml" <<YAML
$(cat "$NESTCP_SOURCE_DIR/config/clusterctl/control-plane/kustomization.yaml")
images:
- name: nestcp
  newName: localhost/nestcp
  newTag: $nestcp_release
YAML
    kubectl kustomize "$dir/release/config/clusterctl/control-plane" \
        >"$repo/control-plane-nested/$nestcp_release/control-plane-components.yaml"
    kubectl kustomize "$NESTCP_SOURCE_DIR/config/clusterctl/infrastructure" \
        >"$repo/infrastructure-nested/$nestcp_release/infrastructure-components.yaml"
    cp "$NESTCP_SOURCE_DIR/metadata.yaml" "$repo/control-plane-nested/$nestcp_release/"
    cp "$NESTCP_SOURCE_DIR/metadata.yaml" "$NESTCP_SOURCE_DIR/templates/cluster-template.yaml" \
        "$repo/infrastructure-nested/$nestcp_release/"
    cat >"$dir/clusterctl.yaml" <<YAML
providers:
- name: cluster-api
  type: CoreProvider
  url: $repo/cluster-api/v$capi_version/core-components.yaml
- name: kubeadm
  type: BootstrapProvider
  url: $repo/bootstrap-kubeadm/v$capi_version/bootstrap-components.yaml
- name: nested
  type: ControlPlaneProvider
  url: $repo/control-plane-nested/$nestcp_release/control-plane-components.yaml
- name: nested
  type: InfrastructureProvider
  url: $repo/infrastructure-nested/$nestcp_release/infrastructure-components.yaml
YAML
}

# The manager's flags, its container's ports (the probes name them) and the webhook Service's
# target port, in the core components file of DIR's repository.
capi_listen_on() {
    local f=$1/repo/cluster-api/v$capi_version/core-components.yaml
    python3 - "$f" "$2" "$3" "$4" <<'PY' || fail "cannot set the ports of Cluster API's pod in $f"
import sys
import yaml

path, webhook, health, diag = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
with open(path) as f:
    docs = [d for d in yaml.safe_load_all(f) if d]
ports = {"webhook-server": webhook, "healthz": health, "metrics": diag}
seen = set()
for d in docs:
    if d["kind"] == "Deployment" and d["metadata"]["name"] == "capi-controller-manager":
        c = d["spec"]["template"]["spec"]["containers"][0]
        c["args"] = [a for a in c["args"] if not a.startswith("--diagnostics-address=")] + [
            f"--diagnostics-address=:{diag}", f"--health-addr=:{health}",
            f"--webhook-port={webhook}"]
        for p in c["ports"]:
            p["containerPort"] = ports[p["name"]]
            seen.add(p["name"])
    elif d["kind"] == "Service" and d["metadata"]["name"] == "capi-webhook-service":
        for p in d["spec"]["ports"]:
            p["targetPort"] = webhook
        seen.add("service")
if seen != set(ports) | {"service"}:
    sys.exit(f"found only {sorted(seen)}")
with open(path, "w") as f:
    yaml.safe_dump_all(docs, f, sort_keys=False, width=1 << 20)
PY
}

capi_init() {
    local dir=$1 webhook=$2 log=$3 t0 crd
    # cert-manager's API (its controllers cannot be built here: test/support/webhook_certs.py).
    until_true 60 kubectl apply --server-side -f "$capi/config/cert-manager-crds" ||
        fail "cert-manager's CRDs cannot be applied"
    until_true 60 kubectl wait --for condition=established --timeout=30s \
        crd/certificates.cert-manager.io crd/issuers.cert-manager.io ||
        fail "cert-manager's CRDs are not Established"
    # Tests that ran before leave Cluster API's Cluster CRD, applied alone
    # (test/support/crds.sh): clusterctl installs every CRD of the release itself, as a user's
    # `clusterctl init` does on a management cluster without Cluster API. The tests that call
    # this run alone, so no Cluster of another test is in use.
    kubectl delete crd clusters.cluster.x-k8s.io --ignore-not-found --wait=true --timeout=60s \
        >/dev/null || fail "the Cluster CRD cannot be removed"
    t0=$(now)
    clusterctl_in "$dir" init --core "cluster-api:v$capi_version" \
        --bootstrap "kubeadm:v$capi_version" --control-plane "nested:$nestcp_release" \
        --infrastructure "nested:$nestcp_release" >"$log" 2>&1 ||
        fail "clusterctl init: $(tail -n 20 "$log")"
    grep -q "Skipping installing cert-manager as it is already installed" "$log" ||
        fail "clusterctl did not find cert-manager's API: $(head -n 5 "$log")"
    log "clusterctl init in $(elapsed "$t0") s: $(grep -c 'Installing provider' "$log") providers"
    python3 "$NESTCP_SOURCE_DIR/test/support/webhook_certs.py" capi-system "$webhook" ||
        fail "the webhook certificates of Cluster API could not be provided"
    for crd in $NESTCP_CRDS; do
        kubectl get crd "$crd" -o jsonpath='{.metadata.labels.cluster\.x-k8s\.io/v1beta2}' |
            grep -q v1beta1 || fail "CRD $crd is not labelled for the v1beta2 contract"
    done
    until_true 180 kubectl -n capi-system wait --for condition=Available --timeout=10s \
        deployment/capi-controller-manager ||
        fail "Cluster API's manager is not Available: $(kubectl -n capi-system get pods -o wide 2>&1)"
    capi_pod=$(kubectl -n capi-system get pods -l cluster.x-k8s.io/provider=cluster-api \
        -o jsonpath='{.items[0].metadata.name}')
    log "Cluster API $capi_version: pod $capi_pod Available after $(elapsed "$t0") s"
}

capi_manager_pid() {
    local pid
    pid=$(cat "$1/pods/capi-system_$capi_pod/manager.pid") || fail "no Cluster API process"
    case "$(readlink "/proc/$pid/exe")" in
    */cluster-api-$capi_version/bin/manager) ;;
    *) fail "Cluster API's pod runs $(readlink "/proc/$pid/exe")" ;;
    esac
    echo "$pid"
}

capi_remove() {
    # Cluster API's objects are cluster-wide: remove them whatever happened, so the next test
    # finds the super cluster as it was (Cluster API's Cluster CRD alone is applied again by
    # the tests that use it, test/support/crds.sh). Once only: the config goes.
    # clusterctl refuses while objects of the providers' kinds exist: those of a test that
    # failed before it deleted them go first, their finalizers with them.
    local kinds=clusters.cluster.x-k8s.io,ncp,netcd,nkas,nkcm,nc objs p
    [ -f "$1/clusterctl.yaml" ] || return 0
    objs=$(kubectl -n "$ns" get "$kinds" -o name 2>/dev/null) || true
    if [ -n "$objs" ]; then
        echo "$objs" | xargs kubectl -n "$ns" delete --wait=false >/dev/null 2>&1 || true
        objs=$(kubectl -n "$ns" get "$kinds" -o name 2>/dev/null) || true
        [ -z "$objs" ] || echo "$objs" | xargs kubectl -n "$ns" patch --type merge \
            -p '{"metadata":{"finalizers":null}}' >/dev/null || true
        objects_gone() { [ -z "$(kubectl -n "$ns" get "$kinds" -o name 2>/dev/null)" ]; }
        until_true 30 objects_gone ||
            echo "capi_remove: still there: $(kubectl -n "$ns" get "$kinds" -o name | tr '\n' ' ')" >&2
    fi
    # One provider at a time, Cluster API's core last: `delete --all` removes the core's CRDs
    # first, then fails listing their kinds for the next provider, which it leaves installed.
    for p in "--infrastructure nested" "--control-plane nested" "--bootstrap kubeadm" \
        "--core cluster-api"; do
        # shellcheck disable=SC2086 # a flag and its value
        clusterctl_in "$1" delete $p --include-crd --include-namespace >/dev/null 2>&1 || true
    done
    # What clusterctl keeps: its inventory's CRD, and the cluster-wide RBAC its installs
    # labelled (it deletes only names prefixed with a provider's namespace).
    kubectl delete clusterroles,clusterrolebindings -l clusterctl.cluster.x-k8s.io \
        --wait=false >/dev/null 2>&1 || true
    kubectl delete crd providers.clusterctl.cluster.x-k8s.io --ignore-not-found --wait=false \
        >/dev/null 2>&1 || true
    kubectl delete -f "$capi/config/cert-manager-crds" --ignore-not-found --wait=false \
        >/dev/null 2>&1 || true
    rm -f "$1/clusterctl.yaml"
}

# capi_free_ports N: N free loopback TCP ports, one a line, from below the kernel's ephemeral
# range (as hack/kube-env.sh picks its own), so that no outgoing connection takes one first.
capi_free_ports() {
    local n=$1 lo=32768 rest p out=" "
    read -r lo rest </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
    while [ "$n" -gt 0 ]; do
        p=$((10000 + (RANDOM * 32768 + RANDOM) % (lo - 10000)))
        case "$out" in *" $p "*) continue ;; esac
        [ -z "$(ss -Htan "sport = :$p" 2>/dev/null)" ] || continue
        out+="$p "
        echo "$p"
        n=$((n - 1))
    done
}
