#!/usr/bin/env bash
# Builds the nestcp image from the Dockerfile with buildah: no daemon, RUN steps in a chroot
# (`--isolation chroot`), from a clean clone of REV (default HEAD), so only committed files go
# in and `nestcp version` names the commit.
#
#   hack/image-build.sh [--tag TAG] [--rev REV] [--base auto|registry|mmdebstrap]
#   hack/image-build.sh --base-only     only make (or pull) and import the build stage's base
#
# The build stage starts from Debian with the Dockerfile's build packages (NESTCP_BUILD_BASE,
# default debian:bookworm). --base registry pulls debian:bookworm; --base mmdebstrap makes that
# base here from Debian's packages instead (mmdebstrap, minbase variant plus the build
# packages), for machines that reach Debian's mirror but no container registry; --base auto
# (the default) pulls when a registry answers within 30 s and makes the base otherwise. The
# made base is cached as a tarball in ~/.cache/nestcp/image-base/, named after the suite and a
# hash of the package list and mirrors, and imported as localhost/nestcp-build-base:SUITE-HASH.
# The runtime stage is `FROM scratch`: what hack/image-stage.sh staged in the build stage.
#
# Prints the build time and the image's size; TAG defaults to localhost/nestcp:dev. Needs
# root (buildah's chroot isolation and mmdebstrap's root mode) and hack/install-deps.sh --image.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
tag=localhost/nestcp:dev rev=HEAD base=auto base_only=false

die() {
    echo "image-build: $*" >&2
    exit 1
}
say() { echo "image-build: $*" >&2; }

while [ $# -gt 0 ]; do
    case "$1" in
    --tag) tag=$2; shift 2 ;;
    --rev) rev=$2; shift 2 ;;
    --base) base=$2; shift 2 ;;
    --base-only) base_only=true; shift ;;
    -h | --help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
    esac
done
case "$base" in auto | registry | mmdebstrap) ;; *) die "--base is auto, registry or mmdebstrap" ;; esac
[ "$(id -u)" -eq 0 ] || die "run as root (buildah's chroot isolation, mmdebstrap's root mode)"
for t in buildah mmdebstrap git; do
    command -v "$t" >/dev/null || die "$t is missing (hack/install-deps.sh --image)"
done

t0=$(date +%s)
work=$(mktemp -d "${TMPDIR:-/tmp}/nestcp-image-build.XXXXXX")
trap 'rm -rf "$work"' EXIT

# --- a clean clone of REV: the build context ---
git clone -q --no-hardlinks "$repo" "$work/src"
git -C "$work/src" checkout -q --detach "$(git -C "$repo" rev-parse --verify "$rev^{commit}")"
dockerfile=$work/src/Dockerfile
dockerfile_arg() { sed -n "s/^ARG $1=\"\{0,1\}\([^\"]*\)\"\{0,1\}\$/\1/p" "$dockerfile"; }
default_base=$(dockerfile_arg NESTCP_BUILD_BASE)
build_pkgs=$(dockerfile_arg NESTCP_BUILD_PACKAGES)
[ -n "$default_base" ] || die "the Dockerfile has no ARG NESTCP_BUILD_BASE=..."
[ -n "$build_pkgs" ] || die "the Dockerfile has no ARG NESTCP_BUILD_PACKAGES=\"...\""
suite=${default_base##*:}

# --- the build stage's base ---
build_base=""
if [ "$base" != mmdebstrap ]; then
    if timeout 30 buildah pull -q "docker.io/library/$default_base" >"$work/pull.log" 2>&1; then
        build_base=docker.io/library/$default_base
        say "base: $build_base, from the registry"
    elif [ "$base" = registry ]; then
        die "cannot pull docker.io/library/$default_base: $(tail -n 3 "$work/pull.log")"
    else
        say "no registry answers ($(tail -n 1 "$work/pull.log" | cut -c1-160)); making $default_base from Debian's packages"
    fi
fi
if [ -z "$build_base" ]; then
    mirror=${NESTCP_DEBIAN_MIRROR:-http://deb.debian.org/debian}
    security=${NESTCP_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
    sources=("deb $mirror $suite main" "deb $mirror $suite-updates main"
        "deb $security $suite-security main")
    key=$(printf '%s\n' "$suite" minbase $build_pkgs "${sources[@]}" | sha256sum | cut -c1-12)
    cache=${NESTCP_CACHE_DIR:-$HOME/.cache/nestcp}/image-base
    tarball=$cache/debian-$suite-$key.tar
    build_base=localhost/nestcp-build-base:$suite-$key
    if buildah inspect --type image "$build_base" >/dev/null 2>&1; then
        say "base: $build_base, already imported"
    else
        if [ -f "$tarball" ]; then
            say "base: $tarball, cached"
        else
            t_base=$(date +%s)
            mkdir -p "$cache"
            say "base: mmdebstrap $suite (minbase + $build_pkgs) into $tarball"
            mmdebstrap --quiet --format=tar --variant=minbase --include="$(echo $build_pkgs | tr ' ' ,)" \
                "$suite" "$tarball.tmp" "${sources[@]}" >"$work/mmdebstrap.log" 2>&1 ||
                { tail -n 20 "$work/mmdebstrap.log" >&2; rm -f "$tarball.tmp"; die "mmdebstrap failed"; }
            mv "$tarball.tmp" "$tarball"
            say "base: made in $(($(date +%s) - t_base)) s ($(du -h "$tarball" | cut -f1))"
        fi
        ctr=$(buildah from --quiet scratch)
        buildah add --quiet "$ctr" "$tarball" / >/dev/null
        buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
            --cmd /bin/bash "$ctr"
        buildah commit --quiet --rm "$ctr" "$build_base" >/dev/null
        say "base: imported as $build_base"
    fi
fi

if $base_only; then
    say "base ready in $(($(date +%s) - t0)) s: $build_base"
    exit 0
fi

# --- the image ---
t_build=$(date +%s)
buildah build --isolation chroot --pull=never -f "$dockerfile" \
    --build-arg "NESTCP_BUILD_BASE=$build_base" -t "$tag" "$work/src" >"$work/build.log" 2>&1 ||
    { tail -n 40 "$work/build.log" >&2; die "buildah build failed"; }
size=$(buildah images --noheading --format '{{.Size}}' "$tag" | head -n 1)
say "built $tag in $(($(date +%s) - t_build)) s ($(($(date +%s) - t0)) s in all); size $size"
echo "$tag"
