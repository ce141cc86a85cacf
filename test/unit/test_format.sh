#!/usr/bin/env bash
# Every C file git tracks is as clang-format lays it out with the tree's .clang-format, so a
# diff shows what changed and nothing of how it was typed. `clang-format -i <file>` mends one.
set -euo pipefail
src=${NESTCP_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
command -v clang-format >/dev/null ||
    { echo "FAIL: clang-format is not installed (hack/install-deps.sh installs it)" >&2; exit 1; }
cd "$src"
mapfile -t files < <(git ls-files '*.c' '*.h')
[ "${#files[@]}" -gt 100 ] || { echo "FAIL: only ${#files[@]} C files found in $src" >&2; exit 1; }
bad=()
for f in "${files[@]}"; do
    clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ "${#bad[@]}" -gt 0 ]; then
    printf 'FAIL: not as clang-format lays it out: %s\n' "${bad[@]}" >&2
    clang-format "${bad[0]}" | diff -u "${bad[0]}" - | head -40 >&2 || true
    exit 1
fi
echo "ok: ${#files[@]} C files as $(clang-format --version | sed 's/.*version \([0-9.]*\).*/clang-format \1/') lays them out"
