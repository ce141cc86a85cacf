#!/usr/bin/env bash
# config/admission/params.yaml, the admission policy's parameters as shipped, is exactly what
# `nestcp render --admission-params=catalog` makes of templates/: change a package, run
# hack/gen-admission.sh, commit both.
set -euo pipefail
: "${NESTCP_BIN:?}" "${NESTCP_SOURCE_DIR:?}"

want=$(mktemp)
trap 'rm -f "$want"' EXIT
"$NESTCP_BIN" render --templates "$NESTCP_SOURCE_DIR/templates" --admission-params=catalog >"$want"
if ! diff -u <(grep -v '^#' "$NESTCP_SOURCE_DIR/config/admission/params.yaml") "$want"; then
    echo "FAIL: config/admission/params.yaml is stale; run hack/gen-admission.sh and commit it" >&2
    exit 1
fi
# The shipped copy is installed: config/admission is part of config/default.
grep -qx -- '- ../admission' "$NESTCP_SOURCE_DIR/config/default/kustomization.yaml" || {
    echo "FAIL: config/default/kustomization.yaml does not include ../admission" >&2
    exit 1
}
echo "config/admission/params.yaml is current ($(grep -c '^  [a-z].*:' "$want") keys)"
