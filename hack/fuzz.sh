#!/usr/bin/env bash
# Builds the fuzz targets of test/fuzz/ with clang and libFuzzer (plus AddressSanitizer and
# UndefinedBehaviorSanitizer) and runs one or all of them.
#
#   hack/fuzz.sh                      every target, 60 s each
#   hack/fuzz.sh -t 300 fuzz_yaml     one target for 300 s
#   hack/fuzz.sh -t 20                every target for 20 s (what hack/test.sh runs)
#   hack/fuzz.sh --build-only         only build (into build-libfuzzer/)
#   hack/fuzz.sh -- -dict=x.dict      pass further options to libFuzzer
#
# An input that runs longer than 60 s is reported as a hang (fuzz_template renders whole
# manifests: under the sanitizers on a busy machine one input can take over 10 s).
# Each run starts from the committed corpus (test/fuzz/corpus/<target>/) and writes what it
# learns to build-libfuzzer/corpus/<target>/, never to the source tree. A crash leaves its input
# in build-libfuzzer/artifacts/ and makes the script fail; to keep it as a regression test, fix
# the parser and copy the input into test/fuzz/corpus/<target>/ (replayed by CTest as
# unit_<target>). Targets: every test/fuzz/fuzz_*.c. Needs clang and libFuzzer's runtime
# (hack/install-deps.sh --fuzz: Debian's clang and libclang-rt-14-dev).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${NESTCP_FUZZ_BUILD_DIR:-$root/build-libfuzzer}
all=()
for f in "$root"/test/fuzz/fuzz_*.c; do
    f=${f##*/}
    all+=("${f%.c}")
done
seconds=60
build_only=0
targets=()
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
    -t) seconds=$2; shift 2 ;;
    --build-only) build_only=1; shift ;;
    -h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --) shift; extra=("$@"); break ;;
    fuzz_*) targets+=("$1"); shift ;;
    *) echo "fuzz.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
[ ${#targets[@]} -eq 0 ] && targets=("${all[@]}")
for t in "${targets[@]}"; do
    if [ ! -f "$root/test/fuzz/$t.c" ]; then
        echo "fuzz.sh: no target $t (known: ${all[*]})" >&2
        exit 2
    fi
done

cc=${CC:-clang}
if ! command -v "$cc" >/dev/null 2>&1; then
    echo "fuzz.sh: $cc not found; install clang and libclang-rt-14-dev (Debian)" >&2
    exit 1
fi

cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DNESTCP_SANITIZE=ON -DNESTCP_FUZZ_LIBFUZZER=ON \
    -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link" >/dev/null
cmake --build "$build" --target "${targets[@]}" -j "$(nproc 2>/dev/null || echo 2)"
[ "$build_only" = 1 ] && exit 0

mkdir -p "$build/artifacts"
failed=()
for t in "${targets[@]}"; do
    mkdir -p "$build/corpus/$t"
    log="$build/$t.log"
    printf '==== %s: %s s ====\n' "$t" "$seconds"
    if ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "$build/test/fuzz/$t" -max_total_time="$seconds" -timeout=60 -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 -artifact_prefix="$build/artifacts/$t-" \
        "${extra[@]}" "$build/corpus/$t" "$root/test/fuzz/corpus/$t" >"$log" 2>&1; then
        execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
        rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log")
        cov=$(grep -Eo 'DONE +cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' "$log" | tail -1 | sed -E 's/^DONE +//')
        echo "$t: $execs runs, peak RSS $rss MB, $cov; nothing found"
    else
        failed+=("$t")
        tail -n 60 "$log"
        echo "fuzz.sh: $t failed; input in $build/artifacts/, log in $log" >&2
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz.sh: failures in ${failed[*]}" >&2
    exit 1
fi
