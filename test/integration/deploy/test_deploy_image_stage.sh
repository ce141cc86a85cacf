#!/usr/bin/env bash
# The image, without a Docker engine (hack/image-stage.sh performs the Dockerfile's steps):
#   - a clean clone of HEAD builds in Release and stages the whole image (its runtime stage is
#     `FROM scratch`): usr/bin/nestcp, usr/share/nestcp/templates/, every library the binary
#     loads and the loader, their packages' copyright files, /etc/passwd and /etc/group, and
#     nothing else;
#   - every shared library the staged binary loads is provided by the Dockerfile's runtime
#     package list (ldd + dpkg -S), each listed package is used, and the check fails when a
#     package is missing from the list or an unneeded one is added;
#   - the staged binary reports HEAD's version and runs as uid 65532 with an empty
#     environment (as in the image), also chrooted into the staged root filesystem with its
#     own libraries only, and renders config/samples/standalone.yaml with the
#     staged templates;
#   - the staged `nestcp manager --templates <staged templates>` starts against the super
#     cluster, as uid 65532, and answers /healthz, /readyz and /metrics.
# Docs commands covered here: docs/install.md "hack/image-stage.sh".
set -euo pipefail
: "${KUBECONFIG:?KUBECONFIG must point at the super cluster}"
: "${NESTCP_SOURCE_DIR:?}"
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

src=$NESTCP_SOURCE_DIR
out=$(mktemp -d "${TMPDIR:-/tmp}/nestcp-image-test.XXXXXX")
ns=image-stage-$$
pid=""
cleanup() {
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid" 2>/dev/null || true
    fi
    kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
    rm -rf "$out"
}
trap cleanup EXIT

"$src/hack/image-stage.sh" --out "$out" >"$out/stage.out" 2>"$out/stage.err" ||
    fail "hack/image-stage.sh failed: $(tail -n 20 "$out/stage.err")"
rootfs=$out/rootfs
bin=$rootfs/usr/bin/nestcp

# Exactly the image's files: nestcp, the templates, the libraries (each one ldd lists, under
# its name), the loader, the copyright files, passwd and group; /lib and /lib64 as usrmerge.
extra=$(cd "$rootfs" && find . ! -type d | grep -vE '^\./(usr/bin/nestcp|usr/share/nestcp/templates/.*|usr/share/doc/[^/]+/copyright|usr/lib/[a-z0-9_]+-linux-gnu[a-z0-9_]*/[^/]+\.so(\.[0-9]+)*|usr/lib64/ld-linux[^/]*\.so\.[0-9]+|etc/(passwd|group)|lib|lib64)$' || true)
[ -z "$extra" ] || fail "unexpected staged files: $extra"
[ "$(readlink "$rootfs/lib")" = usr/lib ] && [ "$(readlink "$rootfs/lib64")" = usr/lib64 ] ||
    fail "/lib and /lib64 are not links to usr/"
for lib in $(awk 'NR > 1 { print $1 }' "$out/libraries.txt"); do
    [ -n "$(find "$rootfs/usr/lib" -type f -name "$lib")" ] || fail "$lib is not staged"
done
for pkg in $(awk 'NR > 1 { print $2 }' "$out/libraries.txt"); do
    [ -s "$rootfs/usr/share/doc/$pkg/copyright" ] || fail "the copyright file of $pkg is not staged"
done
grep -q '^nonroot:x:65532:65532:' "$rootfs/etc/passwd" || fail "/etc/passwd does not name uid 65532"
# The staged root filesystem runs on its own, with its own libraries (before the checks below
# stage it again and stop short of the libraries).
want="nestcp $(sed -n 's/^project(nestcp VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt") ($(git -C "$out/src" describe --always --tags HEAD))"
if [ "$(id -u)" -eq 0 ]; then
    got=$(env -i "$(command -v chroot)" --userspec=65532:65532 "$rootfs" /usr/bin/nestcp version) ||
        fail "nestcp does not run chrooted into the staged root filesystem"
    [ "$got" = "$want" ] || fail "chrooted, nestcp version: '$got', want '$want'"
fi
diff -r "$src/templates" "$rootfs/usr/share/nestcp/templates" >/dev/null ||
    fail "the staged templates differ from templates/"
described=$(file "$bin" 2>/dev/null)
grep -q 'stripped' <<<"$described" && ! grep -q 'not stripped' <<<"$described" ||
    fail "the staged binary is not stripped"

# Every runtime package of the Dockerfile is used, and named in the library table.
runtime=$(sed -n 's/^ARG NESTCP_RUNTIME_PACKAGES="\(.*\)"$/\1/p' "$src/Dockerfile")
[ -n "$runtime" ] || fail "the Dockerfile has no NESTCP_RUNTIME_PACKAGES"
for p in $runtime; do
    grep -qE "^[^ ]+ +$p +listed" "$out/libraries.txt" || fail "$p provides no library in: $(cat "$out/libraries.txt")"
done
grep -q 'libcurl.so.4 *libcurl4 *listed$' "$out/libraries.txt" ||
    fail "libcurl is not a direct, listed library: $(cat "$out/libraries.txt")"

# The check catches drift both ways (reusing the build).
without_ev=$(echo "$runtime" | sed 's/\blibev4\b//')
if NESTCP_RUNTIME_PACKAGES="$without_ev" "$src/hack/image-stage.sh" --out "$out" --no-build \
    >/dev/null 2>"$out/neg.err"; then
    fail "image-stage accepted a runtime list without libev4"
fi
grep -q 'libev.so.4 .*libev4' "$out/neg.err" || fail "the refusal does not name libev: $(cat "$out/neg.err")"
if NESTCP_RUNTIME_PACKAGES="$runtime libcmocka0" "$src/hack/image-stage.sh" --out "$out" --no-build \
    >/dev/null 2>"$out/neg.err"; then
    fail "image-stage accepted an unneeded runtime package"
fi
grep -q 'libcmocka0 provides no library' "$out/neg.err" || fail "the refusal does not name libcmocka0: $(cat "$out/neg.err")"

# The staged binary, as the image runs it.
as_user=()
[ "$(id -u)" -eq 0 ] && as_user=(setpriv --reuid=65532 --regid=65532 --clear-groups --no-new-privs)
got=$(env -i PATH=/usr/bin:/bin "${as_user[@]}" "$bin" version)
[ "$got" = "$want" ] || fail "staged nestcp version: '$got', want '$want'"
grep -q 'staged binary runs' "$out/stage.err" || fail "image-stage did not run the staged binary"
grep -q 'rendered config/samples/standalone.yaml with the staged templates' "$out/stage.err" ||
    fail "image-stage did not render the sample with the staged templates"

# The staged manager against the super cluster, with the staged templates.
install_crds "$src"
kubectl create namespace "$ns" >/dev/null
kc=$out/kubeconfig
cp "$KUBECONFIG" "$kc"
chmod 600 "$kc"
[ "$(id -u)" -eq 0 ] && chown 65532:65532 "$kc"
env -i PATH=/usr/bin:/bin "${as_user[@]}" "$bin" manager --kubeconfig "$kc" \
    --templates "$rootfs/usr/share/nestcp/templates" --leader-elect \
    --leader-election-namespace "$ns" --metrics-bind-address 127.0.0.1:0 --metrics-secure=false \
    --health-probe-bind-address 127.0.0.1:0 >"$out/manager.log" 2>&1 &
pid=$!
health="" metrics=""
for _ in $(seq 1 100); do
    health=$(sed -n 's/.*health_port=\([0-9]*\).*/\1/p' "$out/manager.log" | head -n 1)
    metrics=$(sed -n 's/.*metrics_port=\([0-9]*\).*/\1/p' "$out/manager.log" | head -n 1)
    [ -n "$health" ] && break
    kill -0 "$pid" 2>/dev/null || fail "the staged manager exited: $(cat "$out/manager.log")"
    sleep 0.1
done
[ -n "$health" ] || fail "the staged manager did not report its ports: $(cat "$out/manager.log")"
[ "$(curl -sS --max-time 2 "http://127.0.0.1:$health/healthz")" = ok ] || fail "/healthz is not ok"
ready=""
for _ in $(seq 1 60); do
    ready=$(curl -sS --max-time 2 "http://127.0.0.1:$health/readyz" || true)
    [ "$ready" = ok ] && break
    sleep 1
done
[ "$ready" = ok ] || fail "/readyz is not ok after 60s: $ready; log: $(tail -n 20 "$out/manager.log")"
grep -q '^nestcp_build_info{' <<<"$(curl -sS --max-time 2 "http://127.0.0.1:$metrics/metrics")" ||
    fail "/metrics lacks nestcp_build_info"
kill -TERM "$pid"
wait "$pid" || fail "the staged manager did not exit cleanly on SIGTERM: $(tail -n 20 "$out/manager.log")"
pid=""
echo "ok: staged image files, libraries, and the staged manager"
