#!/usr/bin/env bash
# The image, built and run here (docs/install.md "The image"):
#   - hack/image-build.sh builds the Dockerfile from a clean clone of HEAD with buildah (the
#     Debian base made with mmdebstrap where no registry answers); the build time is printed;
#   - the image is `FROM scratch`: its size, as `podman image inspect` reports it, is under
#     40 MB (printed, with its largest files), it runs as 65532:65532, has the manager as its
#     default command and no shell;
#   - `podman run` with a read-only root filesystem (and no tmpfs), as uid 65532, without any
#     capability, on the host network: `nestcp version` names HEAD;
#   - `nestcp manager` in that container, with a ServiceAccount token kubeconfig of
#     config/rbac's rights only (mounted read-only), wins its Lease and brings
#     config/samples/standalone.yaml to Ready (its pods run by test/support/kubelets.sh), then
#     deletes it, and exits 0 on `podman stop`.
# Docs commands covered here: docs/install.md "hack/image-build.sh", "podman run ... version",
# "podman run ... manager".
set -euo pipefail
: "${KUBECONFIG:?KUBECONFIG must point at the super cluster}"
: "${NESTCP_SOURCE_DIR:?}"
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
. "$NESTCP_SOURCE_DIR/test/support/kubelets.sh"

src=$NESTCP_SOURCE_DIR
id=image-run-$$
sys_ns=$id-system
ns=$id
tag=localhost/nestcp:test-$$
work=$(mktemp -d)
ctr=""
cleanup() {
    [ -n "$ctr" ] && podman rm -f -t 0 "$ctr" >/dev/null 2>&1
    kubelets_stop
    for p in $(kubectl -n "$ns" get ncp -o name 2>/dev/null); do
        kubectl -n "$ns" patch "$p" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1 || true
    done
    kubectl delete clusterrolebinding "$id-manager-rolebinding" "$id-metrics-auth-rolebinding" \
        --ignore-not-found >/dev/null 2>&1 || true
    kubectl delete clusterrole "$id-manager-role" "$id-metrics-auth-role" "$id-metrics-reader" \
        --ignore-not-found >/dev/null 2>&1 || true
    kubectl delete namespace "$ns" "$sys_ns" --wait=false >/dev/null 2>&1 || true
    podman rmi -f "$tag" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
[ "$(id -u)" -eq 0 ] || fail "building and running the image here needs root (buildah, podman)"

# --- build ---
t0=$(date +%s)
"$src/hack/image-build.sh" --tag "$tag" >"$work/build.out" 2>"$work/build.err" ||
    fail "hack/image-build.sh failed: $(tail -n 30 "$work/build.err")"
cat "$work/build.err"
echo "image built in $(($(date +%s) - t0)) s"

# --- what the image is ---
size=$(podman image inspect --format '{{.Size}}' "$tag")
echo "image size: $size bytes ($((size / 1024 / 1024)) MiB), uncompressed (podman image inspect)"
[ "$size" -lt 40000000 ] || fail "the image is $size bytes, over 40 MB"
[ "$(podman image inspect --format '{{.Config.User}}' "$tag")" = 65532:65532 ] ||
    fail "the image's user is not 65532:65532"
[ "$(podman image inspect --format '{{json .Config.Entrypoint}} {{json .Config.Cmd}}' "$tag")" = \
    '["/usr/bin/nestcp"] ["manager","--leader-elect","--templates=/usr/share/nestcp/templates"]' ] ||
    fail "entrypoint and command: $(podman image inspect --format '{{.Config.Entrypoint}} {{.Config.Cmd}}' "$tag")"
[ "$(podman image inspect --format '{{len .RootFS.Layers}}' "$tag")" = 1 ] ||
    fail "the image has more than its one layer: $(podman image inspect --format '{{.RootFS.Layers}}' "$tag")"
mnt=$(podman image mount "$tag")
echo "largest files in the image:"
# awk reads the whole list: a head(1) that exits early would kill sort with SIGPIPE, and
# pipefail would end the test there.
(cd "$mnt" && find . -type f -printf '%s %p\n' | sort -rn |
    awk 'NR <= 12 { printf "  %8.1f KiB  %s\n", $1 / 1024, substr($2, 2) }')
[ -x "$mnt/usr/bin/nestcp" ] || fail "the image has no /usr/bin/nestcp"
[ -d "$mnt/usr/share/nestcp/templates/packages" ] ||
    fail "the image has no templates"
[ ! -e "$mnt/bin/sh" ] || fail "the image has a shell"
podman image unmount "$tag" >/dev/null

# How this machine's podman runs it. The engine's default limits (nofile and nproc 1048576)
# need CAP_SYS_RESOURCE, which root lacks in the test sandbox: the container gets this
# shell's open-files limit and a process limit below the engine's own. crun refuses the
# sandbox's hybrid cgroup hierarchy (a controller on the v2 mount), runc does not.
run=(podman run --runtime runc --network host --read-only --read-only-tmpfs=false
    --user 65532:65532 --cap-drop=ALL --security-opt no-new-privileges
    --ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit nproc=4096:4096)

# --- nestcp version ---
want="nestcp $(sed -n 's/^project(nestcp VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt") ($(git -C "$src" describe --always --tags HEAD))"
got=$("${run[@]}" --rm "$tag" version 2>"$work/version.err") ||
    fail "podman run $tag version failed: $(cat "$work/version.err")"
[ "$got" = "$want" ] || fail "the image's nestcp version: '$got', want '$want'"
echo "podman run (read-only, uid 65532, no capabilities): $got"

# --- the manager, with config/rbac's rights only ---
install_crds "$src"
kubectl create namespace "$sys_ns" >/dev/null
kubectl create namespace "$ns" >/dev/null
rbac_kubeconfig "$src" "$sys_ns" "$id" "$work"
chown 65532:65532 "$kc"
[ "$(KUBECONFIG=$kc kubectl auth can-i get nodes 2>/dev/null || true)" = no ] ||
    fail "the ServiceAccount can get nodes"

ctr=nestcp-$id
"${run[@]}" -d --name "$ctr" -v "$kc:/var/run/nestcp/kubeconfig:ro" "$tag" \
    manager --kubeconfig /var/run/nestcp/kubeconfig --templates /usr/share/nestcp/templates \
    --leader-elect --leader-election-namespace "$sys_ns" --leader-elect-lease-duration 90s \
    --leader-elect-renew-deadline 60s --leader-elect-retry-period 5s \
    --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 \
    >/dev/null 2>"$work/run.err" || fail "podman run $tag manager failed: $(cat "$work/run.err")"
die_with_log() {
    echo "--- manager log (last lines)" >&2
    podman logs "$ctr" 2>&1 | tail -n 30 >&2 || true
    fail "$*"
}
health=""
for _ in $(seq 1 100); do
    health=$(podman logs "$ctr" 2>&1 | sed -n 's/.*health_port=\([0-9]*\).*/\1/p' | head -n 1)
    [ -n "$health" ] && break
    [ "$(podman inspect --format '{{.State.Running}}' "$ctr")" = true ] || die_with_log "the manager exited"
    sleep 0.1
done
[ -n "$health" ] || die_with_log "the manager did not log its ports"
ready=""
for _ in $(seq 1 60); do
    ready=$(curl -sS --max-time 2 "http://127.0.0.1:$health/readyz" || true)
    [ "$ready" = ok ] && break
    sleep 1
done
[ "$ready" = ok ] || die_with_log "/readyz is not ok after 60 s: $ready"
for i in $(seq 1 60); do
    [ -n "$(kubectl -n "$sys_ns" get lease nestcp-manager -o jsonpath='{.spec.holderIdentity}' 2>/dev/null)" ] && break
    [ "$i" -eq 60 ] && die_with_log "the manager holds no Lease in $sys_ns after 60 s"
    sleep 1
done

kubelets_start "$ns" "$work" || fail "cannot start the kubelets"
t0=$(date +%s)
kubectl -n "$ns" apply -f "$src/config/samples/standalone.yaml" >/dev/null
kubectl -n "$ns" wait --for=condition=Ready ncp/standalone --timeout=240s >/dev/null 2>&1 ||
    die_with_log "ncp/standalone is not Ready: $(kubectl -n "$ns" get ncp standalone -o jsonpath='{.status.conditions}')"
echo "standalone Ready after $(($(date +%s) - t0)) s, reconciled by the manager in the container"
kubectl -n "$ns" get secret standalone-kubeconfig >/dev/null || fail "standalone-kubeconfig is missing"

kubectl -n "$ns" delete -f "$src/config/samples/standalone.yaml" --ignore-not-found --wait=true \
    --timeout=180s >/dev/null 2>"$work/delete.err" ||
    die_with_log "deleting the sample did not finish: $(cat "$work/delete.err")"
if podman logs "$ctr" 2>&1 | grep -qE 'forbidden|error=EPERM'; then
    podman logs "$ctr" 2>&1 | grep -E 'forbidden|error=EPERM' | head -n 10 >&2
    fail "the manager in the container was refused requests (above)"
fi
podman stop -t 30 "$ctr" >/dev/null
code=$(podman inspect --format '{{.State.ExitCode}}' "$ctr")
[ "$code" = 0 ] || die_with_log "the manager exited $code on podman stop, want 0"
echo "ok: the image builds, is $((size / 1024 / 1024)) MiB, and runs the manager read-only as uid 65532 without capabilities"
