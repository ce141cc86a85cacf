# Shared by the deploy tests (sourced, not run): failure, kubectl with a timeout, the CRDs.
# shellcheck shell=bash

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

kubectl() { command kubectl --request-timeout=30s "$@"; }

# Installs nestcp's CRDs and Cluster API's Cluster CRD (test/support/crds.sh) and waits until every kind can
# be listed (discovery follows Established by a moment). Installing them is idempotent; they
# stay installed, as the other integration tests leave them.
install_crds() {
    local src=$1 r
    . "$src/test/support/crds.sh"
    NESTCP_SOURCE_DIR=$src crds_install || fail "the CRDs are not established"
    for r in nestedclusters.infrastructure.cluster.x-k8s.io \
        nestedcontrolplanes.controlplane.cluster.x-k8s.io nestedetcds.controlplane.cluster.x-k8s.io \
        nestedapiservers.controlplane.cluster.x-k8s.io \
        nestedcontrollermanagers.controlplane.cluster.x-k8s.io clusters.cluster.x-k8s.io; do
        for i in $(seq 1 60); do
            kubectl get "$r" --all-namespaces >/dev/null 2>&1 && break
            [ "$i" -eq 60 ] && fail "$r is not served 60s after its CRD was established"
            sleep 1
        done
    done
}

# Deletes a namespace and waits until it is gone, so the next test finds no half-deleted one.
delete_namespace() {
    kubectl delete namespace "$1" --ignore-not-found --wait=true --timeout=120s >/dev/null 2>&1 ||
        echo "warning: namespace $1 still terminating" >&2
}

# template_subst FILE: FILE with its variables substituted the way clusterctl does it:
# `${VAR:=default}` is VAR's value, or default when VAR is unset or empty; `${VAR}` is VAR's
# value. The defaults are exported here, then gettext's envsubst substitutes exactly the
# template's variables (nothing else that looks like one). Fails if a variable is left unset.
template_subst() {
    local file=$1 spec name def vars="" v
    while IFS= read -r spec; do
        name=${spec%%:=*}
        def=${spec#*:=}
        if [ -z "${!name:-}" ]; then export "$name=$def"; fi
    done < <(grep -o '\${[A-Z0-9_]*:=[^}]*}' "$file" | sed 's/^\${//; s/}$//' | sort -u)
    for v in $(grep -o '\${[A-Z0-9_]*' "$file" | sed 's/^\${//' | sort -u); do
        [ -n "${!v:-}" ] || fail "$file: variable $v is not set"
        vars="$vars \${$v}"
    done
    sed 's/\${\([A-Z0-9_]*\):=[^}]*}/${\1}/g' "$file" | envsubst "$vars"
}

# rbac_kubeconfig SRC SYS_NS ID WORK: applies config/rbac into SYS_NS with the name prefix
# ID- (as a user's kustomization would), and writes WORK/sa.kubeconfig (mode 0600) holding
# only the token of its ServiceAccount ID-controller-manager; sets sa, token and kc.
rbac_kubeconfig() {
    local src=$1 sys_ns=$2 id=$3 work=$4 server
    mkdir -p "$work/kust"
    cp -R "$src/config/rbac" "$work/kust/rbac"
    cat >"$work/kust/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: $sys_ns
namePrefix: $id-
resources:
- rbac
YAML
    kubectl apply -k "$work/kust" >/dev/null
    sa=$id-controller-manager
    token=""
    for _ in $(seq 1 30); do
        token=$(kubectl -n "$sys_ns" create token "$sa" --duration=1h 2>/dev/null) && break
        sleep 1 # the ServiceAccount admission waits for the token controller
    done
    [ -n "$token" ] || fail "no token for ServiceAccount $sys_ns/$sa"
    server=$(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')
    kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' |
        base64 -d >"$work/ca.crt"
    kc=$work/sa.kubeconfig
    (
        umask 077
        KUBECONFIG=$kc command kubectl config set-cluster super --server="$server" \
            --certificate-authority="$work/ca.crt" --embed-certs=true >/dev/null
        KUBECONFIG=$kc command kubectl config set-credentials manager --token="$token" >/dev/null
        KUBECONFIG=$kc command kubectl config set-context manager --cluster=super --user=manager >/dev/null
        KUBECONFIG=$kc command kubectl config use-context manager >/dev/null
    )
}
