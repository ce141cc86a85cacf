# Sourced by shell tests: installs nestcp's CRDs (and Cluster API's Cluster) and waits until the
# API server serves them. Needs KUBECONFIG and NESTCP_SOURCE_DIR.

# The Cluster API release the tests install: its Cluster CRD here, its manager and clusterctl in
# test/e2e/test_capi_clusterctl.sh (hack/kube-build.sh, from its recipe in hack/recipes/).
NESTCP_CAPI_VERSION=1.14.2

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

# crds_install [--no-capi]: applies config/crd/bases (and Cluster API's Cluster CRD) and waits.
crds_install() {
    local crds=($NESTCP_CRDS) files=(-f "$NESTCP_SOURCE_DIR/config/crd/bases") tmp rc=0
    tmp=$(mktemp -d)
    if [ "${1:-}" != --no-capi ]; then
        # Cluster API's own Cluster CRD, from its module (hack/capi-crd.sh): it stores v1beta2 and
        # converts through Cluster API's webhook, which does not run here, so only v1beta2
        # requests succeed.
        "$NESTCP_SOURCE_DIR/hack/capi-crd.sh" "$NESTCP_CAPI_VERSION" >"$tmp/cluster.yaml" || {
            echo "Cluster API $NESTCP_CAPI_VERSION's Cluster CRD is not available (hack/capi-crd.sh)" >&2
            rm -rf "$tmp"
            return 1
        }
        files+=(-f "$tmp/cluster.yaml")
        crds+=(clusters.cluster.x-k8s.io)
    fi
    # A test beside this one may create the same CRD at the same moment: the loser's create
    # gets AlreadyExists, and applying again updates it.
    command kubectl apply "${files[@]}" >/dev/null 2>&1 ||
        command kubectl apply "${files[@]}" >/dev/null || rc=$?
    rm -rf "$tmp"
    [ "$rc" = 0 ] && crds_established 60 "${crds[@]}"
}
