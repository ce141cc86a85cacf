#!/usr/bin/env bash
# Every #include of a layer names a layer the table in docs/architecture.md allows it
# (between <!-- layers --> and <!-- /layers -->), or the layer itself: the picture there is
# the code's.
set -euo pipefail
src=${NESTCP_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
doc=$src/docs/architecture.md
table=$(sed -n '/<!-- layers -->/,/<!-- \/layers -->/p' "$doc" | grep '^| `')
[ -n "$table" ] || { echo "FAIL: no layer table in $doc" >&2; exit 1; }
layers=$(awk -F'|' '{ gsub(/[` ]/, "", $2); print $2 }' <<<"$table")
bad=0 checked=0
while IFS='|' read -r _ layer allowed _; do
    layer=${layer//[\` ]/}
    allowed=" ${allowed//[\`,]/ } "
    for f in "$src/$layer"/*.[ch]; do
        [ -e "$f" ] || continue
        while read -r inc; do
            checked=$((checked + 1))
            # The layer an include names: the longest layer that prefixes its path.
            target=""
            for l in $layers; do
                case $inc in "$l"/*) [ ${#l} -gt ${#target} ] && target=$l ;; esac
            done
            [ -z "$target" ] && continue # a system or third-party header, or test/
            [ "$target" = "$layer" ] && continue
            case $allowed in *" $target "*) ;; *)
                echo "FAIL: ${f#"$src"/} includes $inc: $layer may not include $target" >&2
                bad=1
                ;;
            esac
        done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
    done
done <<<"$table"
[ "$bad" = 0 ] || exit 1
[ "$checked" -gt 100 ] || { echo "FAIL: only $checked includes checked" >&2; exit 1; }
echo "ok: $checked includes of $(wc -l <<<"$layers") layers follow docs/architecture.md"
