#!/usr/bin/env bash
# The steps of the Dockerfile, without a Docker engine: build nestcp from a clean copy of the
# source in Release, stage the image's files into a root-filesystem-like directory, prove that
# the Dockerfile's runtime package list provides every shared library the binary needs, and
# run the staged binary.
#
#   hack/image-stage.sh [--out DIR] [--rev REV]   build a clean clone of REV (default HEAD)
#   hack/image-stage.sh --src DIR --out DIR       build DIR as it is (the Dockerfile does this)
#   hack/image-stage.sh --out DIR --no-build      stage and check DIR's earlier build again
#
# DIR/rootfs then holds the whole image (its runtime stage is `FROM scratch`): usr/bin/nestcp,
# usr/share/nestcp/templates/, every shared library the binary loads and the dynamic loader
# (under Debian's paths; /lib and /lib64 link to usr/, as usrmerge has them), those packages'
# copyright files, and /etc/passwd and /etc/group naming uid 65532. The package lists are read
# from the Dockerfile's ARG lines (NESTCP_BUILD_PACKAGES, NESTCP_RUNTIME_PACKAGES), or from the
# environment when set there (as `docker build --build-arg` does). Exits non-zero, saying why, when a library is not covered,
# a listed runtime package provides no library the binary loads, or the staged binary does not run.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
out="" src="" rev=HEAD build=true

die() {
    echo "image-stage: $*" >&2
    exit 1
}
say() { echo "image-stage: $*" >&2; }

while [ $# -gt 0 ]; do
    case "$1" in
    --out) out=$2; shift 2 ;;
    --src) src=$2; shift 2 ;;
    --rev) rev=$2; shift 2 ;;
    --no-build) build=false; shift ;;
    -h | --help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
    esac
done
[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/nestcp-image.XXXXXX")
mkdir -p "$out"
out=$(cd "$out" && pwd)

# --- the package lists, from the Dockerfile ---
dockerfile_arg() {
    sed -n "s/^ARG $1=\"\(.*\)\"\$/\1/p" "$2"
}
dockerfile=${src:-$repo}/Dockerfile
[ -f "$dockerfile" ] || die "no Dockerfile at $dockerfile"
build_pkgs=${NESTCP_BUILD_PACKAGES:-$(dockerfile_arg NESTCP_BUILD_PACKAGES "$dockerfile")}
runtime_pkgs=${NESTCP_RUNTIME_PACKAGES:-$(dockerfile_arg NESTCP_RUNTIME_PACKAGES "$dockerfile")}
[ -n "$build_pkgs" ] || die "$dockerfile has no ARG NESTCP_BUILD_PACKAGES=\"...\""
[ -n "$runtime_pkgs" ] || die "$dockerfile has no ARG NESTCP_RUNTIME_PACKAGES=\"...\""

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
for p in $build_pkgs; do
    installed "$p" || die "build package $p is not installed (hack/install-deps.sh)"
done

# --- a clean copy of the source ---
if ! $build; then
    [ -z "$src" ] && src=$out/src
    [ -x "$out/build/nestcp" ] || die "--no-build: $out/build/nestcp does not exist"
elif [ -z "$src" ]; then
    src=$out/src
    rm -rf "$src"
    # A clone holds the committed files of REV only, and its history, so `git describe` (the
    # version nestcp reports) works as in a checkout.
    git clone -q --no-hardlinks "$repo" "$src"
    git -C "$src" checkout -q --detach "$(git -C "$repo" rev-parse --verify "$rev^{commit}")"
    say "building $(git -C "$src" describe --always --tags) from a clean clone in $src"
    # The Dockerfile's lists must be the ones of the revision being built.
    dockerfile=$src/Dockerfile
    build_pkgs=${NESTCP_BUILD_PACKAGES:-$(dockerfile_arg NESTCP_BUILD_PACKAGES "$dockerfile")}
    runtime_pkgs=${NESTCP_RUNTIME_PACKAGES:-$(dockerfile_arg NESTCP_RUNTIME_PACKAGES "$dockerfile")}
fi
src=$(cd "$src" && pwd)

# The Dockerfile builds with what hack/install-deps.sh installs for a build.
deps_list=$(sed -n '/^pkgs=(/,/^)/p' "$src/hack/install-deps.sh")
for p in $build_pkgs; do
    case " $(echo $deps_list) " in *" $p "*) ;; *) die "Dockerfile build package $p is not in hack/install-deps.sh" ;; esac
done
for p in $(echo "$deps_list" | grep -o '\blib[a-z0-9.+-]*-dev\b'); do
    case $p in libcmocka-dev | libnghttp2-dev) continue ;; esac # tests only
    case " $build_pkgs " in *" $p "*) ;; *) die "hack/install-deps.sh's $p is not in the Dockerfile's build packages" ;; esac
done

# --- build: Release, with Debian's hardening flags ---
if $build; then
    eval "$(DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --export=sh)"
    cmake -S "$src" -B "$out/build" -DCMAKE_BUILD_TYPE=Release -DNESTCP_TESTS=OFF \
        -DCMAKE_C_FLAGS="$CFLAGS $CPPFLAGS" -DCMAKE_EXE_LINKER_FLAGS="$LDFLAGS" >"$out/cmake.log" 2>&1 ||
        { tail -n 30 "$out/cmake.log" >&2; die "cmake configure failed"; }
    cmake --build "$out/build" --target nestcp -j"$(nproc)" >>"$out/cmake.log" 2>&1 ||
        { grep -m 20 -E 'error|Error' "$out/cmake.log" >&2; die "build failed (log: $out/cmake.log)"; }
fi

# --- stage the image's files ---
rootfs=$out/rootfs
rm -rf "$rootfs"
install -D -m 0755 -s "$out/build/nestcp" "$rootfs/usr/bin/nestcp"
mkdir -p "$rootfs/usr/share/nestcp"
cp -R "$src/templates" "$rootfs/usr/share/nestcp/templates"
chmod -R a+rX,go-w "$rootfs"
bin=$rootfs/usr/bin/nestcp
say "staged $(du -sh "$rootfs" | cut -f1) in $rootfs (binary $(stat -c %s "$bin") bytes)"

grep -qE '\((RPATH|RUNPATH)\)' <<<"$(readelf -d "$bin")" && die "the binary carries an RPATH/RUNPATH"

# --- every shared library is provided by the runtime packages ---
# Which Debian package owns each library, from one `dpkg -S` over every spelling of every
# path: usrmerge means a file may be listed under /lib or /usr/lib, or under its real path.
declare -A owner_of=()
spellings() {
    local f=$1 r
    r=$(readlink -f "$f")
    printf '%s\n' "$f" "${f#/usr}" "/usr$f" "$r" "${r#/usr}" "/usr$r"
}
index_owners() {
    local line pkg path
    while IFS= read -r line; do
        pkg=${line%%: *}
        path=${line#*: }
        owner_of[$path]=${pkg%%:*}
    done < <(dpkg -S "$@" 2>/dev/null || true)
}
owner() {
    local c
    for c in $(spellings "$1"); do
        [ -n "${owner_of[$c]:-}" ] && { echo "${owner_of[$c]}"; return 0; }
    done
    return 1
}
# The packages the runtime packages depend on, recursively (first alternative of each
# dependency), from one dpkg-query over the installed packages.
declare -A deps_of=()
while IFS= read -r line; do
    deps_of[${line%% *}]=${line#* }
done < <(dpkg-query -W -f='${Package} ${Pre-Depends},${Depends}\n')
closure=" "
add_closure() {
    local p=$1 d parts
    case "$closure" in *" $p "*) return 0 ;; esac
    closure="$closure$p "
    IFS=',' read -ra parts <<<"${deps_of[$p]:-}"
    for d in "${parts[@]}"; do
        d=${d%%|*}
        d=${d%%(*}
        d=${d//:any/}
        d=${d// /}
        [ -z "$d" ] || add_closure "$d"
    done
}
for p in $runtime_pkgs; do
    installed "$p" || die "runtime package $p is not installed here, so its files cannot be checked"
    add_closure "$p"
done
ldd "$bin" >"$out/ldd.txt" || die "ldd failed on the staged binary"
grep -q 'not found' "$out/ldd.txt" && die "unresolved libraries: $(grep 'not found' "$out/ldd.txt")"
# shellcheck disable=SC2046
index_owners $(sed -n 's/^[[:space:]]*[^ ]* => \(\/[^ ]*\) .*/\1/p' "$out/ldd.txt" |
    while read -r f; do spellings "$f"; done | sort -u)
needed=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
declare -A used=()
printf '%-28s %-22s %s\n' LIBRARY PACKAGE "PROVIDED BY" >"$out/libraries.txt"
while read -r lib path; do
    pkg=$(owner "$path") || die "no Debian package owns $path ($lib)"
    prio=$(dpkg-query -W -f='${Priority} ${Essential}' "$pkg")
    how=""
    case " $runtime_pkgs " in *" $pkg "*) how="listed"; used[$pkg]=1 ;; esac
    if [ -z "$how" ]; then
        case "$closure" in *" $pkg "*) how="dependency of a listed package" ;; esac
    fi
    if [ -z "$how" ]; then
        case "$prio" in required* | *yes) how="in the base image (Priority: required)" ;; esac
    fi
    [ -n "$how" ] || die "$lib ($path) comes from $pkg, which is neither in NESTCP_RUNTIME_PACKAGES nor pulled in by it"
    case " $needed " in *" $lib "*) ;; *) how="$how; indirect" ;; esac
    printf '%-28s %-22s %s\n' "$lib" "$pkg" "$how" >>"$out/libraries.txt"
done < <(sed -n 's/^[[:space:]]*\([^ ]*\) => \(\/[^ ]*\) .*/\1 \2/p' "$out/ldd.txt")
# Every listed package is there for a library the binary loads.
for p in $runtime_pkgs; do
    [ -n "${used[$p]:-}" ] || die "runtime package $p provides no library nestcp loads; drop it from the Dockerfile"
done
cat "$out/libraries.txt" >&2

# --- the libraries, into the image: its runtime stage has no base ---
# Each library ldd resolved, copied under the name the binary asks for into /usr of its own
# directory, the loader at the binary's PT_INTERP path, and usrmerge's /lib and /lib64 links;
# glibc's loader searches Debian's multiarch directory without an ld.so.cache.
interp=$(readelf -l "$bin" | sed -n 's/.*Requesting program interpreter: \(.*\)]$/\1/p')
[ -n "$interp" ] || die "the binary names no program interpreter"
ln -s usr/lib "$rootfs/lib"
ln -s usr/lib64 "$rootfs/lib64"
while read -r lib path; do
    dir=$(dirname "$path")
    install -D -m 0755 "$(readlink -f "$path")" "$rootfs/usr${dir#/usr}/$lib"
done < <(sed -n 's/^[[:space:]]*\([^ ]*\) => \(\/[^ ]*\) .*/\1 \2/p' "$out/ldd.txt")
install -D -m 0755 "$(readlink -f "$interp")" "$rootfs/usr${interp#/usr}"
# The licences of what the image carries: the copyright file of each package a library is from.
for pkg in $(awk 'NR > 1 { print $2 }' "$out/libraries.txt" | sort -u); do
    [ -f "/usr/share/doc/$pkg/copyright" ] || die "no /usr/share/doc/$pkg/copyright to ship"
    install -D -m 0644 "/usr/share/doc/$pkg/copyright" "$rootfs/usr/share/doc/$pkg/copyright"
done
mkdir -p "$rootfs/etc"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' \
    >"$rootfs/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$rootfs/etc/group"
chmod -R a+rX,go-w "$rootfs"
say "staged the image: $(du -sh "$rootfs" | cut -f1) in $rootfs (binary $(stat -c %s "$bin") bytes," \
    "$(sed -n '1!p' "$out/libraries.txt" | wc -l) libraries)"

# --- run the staged binary, as the image does (uid 65532 when this runs as root) ---
as_image_user=()
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
    chmod a+rx "$out"
    as_image_user=(setpriv --reuid=65532 --regid=65532 --clear-groups --no-new-privs)
fi
run() { env -i PATH=/usr/bin:/bin "${as_image_user[@]}" "$@"; }
version=$(run "$bin" version) || die "the staged nestcp does not run"
# As root, the staged root filesystem runs on its own: chrooted into it, with its libraries only.
if [ "$(id -u)" -eq 0 ] && command -v chroot >/dev/null; then
    in_root=$(env -i "$(command -v chroot)" --userspec=65532:65532 "$rootfs" /usr/bin/nestcp version) ||
        die "the staged root filesystem does not run nestcp on its own (chroot)"
    [ "$in_root" = "$version" ] || die "chrooted, nestcp says '$in_root', not '$version'"
    say "the staged root filesystem runs nestcp with its own libraries (chroot, uid 65532)"
fi
want=$(sed -n 's/^project(nestcp VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
case "$version" in "nestcp $want "*) ;; *) die "staged nestcp version says '$version', want $want" ;; esac
say "staged binary runs${as_image_user:+ as uid 65532}: $version"
templates=$rootfs/usr/share/nestcp/templates
run "$bin" render -f "$src/config/samples/standalone.yaml" --templates "$templates" \
    >"$out/render.yaml" || die "the staged nestcp cannot render config/samples/standalone.yaml"
say "rendered config/samples/standalone.yaml with the staged templates ($(grep -c '^kind:' "$out/render.yaml") objects)"
echo "$out"
