#!/usr/bin/env bash
# Regenerates the CRDs in config/crd/bases/ and config/crd/capi/ from the kind tables in
# api/kinds.c, by building and running tools/crdgen.c.
#
#   hack/gen-crds.sh [BUILD_DIR]    BUILD_DIR defaults to $NESTCP_BUILD_DIR, else build-crdgen
#
# test/unit/api/test_crds_current.sh fails when the committed files and api/ disagree.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-${NESTCP_BUILD_DIR:-$root/build-crdgen}}

if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$build" >/dev/null
fi
cmake --build "$build" --target nestcp-crdgen -j2 >/dev/null
"$build/nestcp-crdgen" "$root/config/crd"
echo "wrote $(ls "$root"/config/crd/bases/*.yaml "$root"/config/crd/capi/*.yaml | wc -l) CRDs" \
    "under config/crd"
