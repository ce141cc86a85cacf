#!/usr/bin/env bash
# The CRDs committed under config/crd/ are exactly what api/kinds.c generates: change the
# schema table, run hack/gen-crds.sh, commit both.
set -euo pipefail
: "${NESTCP_BUILD_DIR:?}" "${NESTCP_SOURCE_DIR:?}"

gen="$NESTCP_BUILD_DIR/nestcp-crdgen"
if [ ! -x "$gen" ]; then
    cmake --build "$NESTCP_BUILD_DIR" --target nestcp-crdgen >/dev/null
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

"$gen" "$out"
status=0
for sub in bases capi; do
    if ! diff -ru "$NESTCP_SOURCE_DIR/config/crd/$sub" "$out/$sub"; then
        status=1
    fi
done
if [ "$status" -ne 0 ]; then
    echo "FAIL: config/crd/ is stale; run hack/gen-crds.sh and commit the result" >&2
    exit 1
fi
# Every generated CRD is listed in the kustomization.
for f in "$out"/bases/*.yaml; do
    grep -q "bases/$(basename "$f")" "$NESTCP_SOURCE_DIR/config/crd/kustomization.yaml" || {
        echo "FAIL: config/crd/kustomization.yaml does not list $(basename "$f")" >&2
        exit 1
    }
done
echo "config/crd is current ($(ls "$out"/bases "$out"/capi | grep -c yaml) CRDs)"
