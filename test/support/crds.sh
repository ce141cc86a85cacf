# Sourced by shell tests: installs nestcp's CRDs (and Cluster API's Cluster) and waits until the
# API server serves them. Needs KUBECONFIG and NESTCP_SOURCE_DIR.

NESTCP_CRDS="nestedclusters.infrastructure.cluster.x-k8s.io
nestedcontrolplanes.controlplane.cluster.x-k8s.io
nestedetcds.controlplane.cluster.x-k8s.io
nestedapiservers.controlplane.cluster.x-k8s.io
nestedcontrollermanagers.controlplane.cluster.x-k8s.io"

# crds_established SECONDS CRD...: polls until every CRD is Established. (`kubectl wait
# --for condition=established` gives up at once on a CRD that has no conditions yet.)
crds_established() {
    local end=$((SECONDS + $1)) crd st
    shift
    for crd in "$@"; do
        while :; do
            st=$(command kubectl get crd "$crd" --request-timeout=10s \
                -o jsonpath='{.status.conditions[?(@.type=="Established")].status}' 2>/dev/null) || true
            [ "$st" = True ] && break
            if [ "$SECONDS" -ge "$end" ]; then
                echo "CRD $crd is not Established after $1 s" >&2
                return 1
            fi
            sleep 0.5
        done
    done
}

# crds_install [--no-capi]: applies config/crd/bases (and config/crd/capi) and waits.
crds_install() {
    local files=(-f "$NESTCP_SOURCE_DIR/config/crd/bases") crds=($NESTCP_CRDS)
    if [ "${1:-}" != --no-capi ]; then
        files+=(-f "$NESTCP_SOURCE_DIR/config/crd/capi")
        crds+=(clusters.cluster.x-k8s.io)
    fi
    command kubectl apply "${files[@]}" >/dev/null && crds_established 60 "${crds[@]}"
}
