#!/usr/bin/env bash
# The one test command: installs what is missing, builds (warnings as errors), and runs every
# test against a real super cluster; then builds with AddressSanitizer + UndefinedBehaviorSanitizer
# and runs the unit tests and the integration tests of nestcp's own code again there; then
# fuzzes every parser target for 20 s (their corpora were replayed with the unit tests).
#
#   hack/test.sh                 everything
#   hack/test.sh --quick         unit tests only, no sanitizer build
#   hack/test.sh -L LABEL        only tests with this CTest label (unit, integration, e2e)
#   hack/test.sh -R REGEX        only tests whose name matches (-L and -R do not fuzz)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
jobs=$(nproc 2>/dev/null || echo 2)
quick=0
ctest_args=()
while [ $# -gt 0 ]; do
    case "$1" in
    --quick) quick=1; shift ;;
    -L | -R) ctest_args+=("$1" "$2"); shift 2 ;;
    -h | --help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
[ "$quick" = 1 ] && ctest_args=(-L unit)

step() { printf '\n==== %s ====\n' "$*"; }
t0=$(date +%s)

fuzz=0
[ "$quick" = 0 ] && [ ${#ctest_args[@]} -eq 0 ] && fuzz=1

step "dependencies"
if [ "$fuzz" = 1 ]; then
    hack/install-deps.sh --fuzz --image
elif [ "$quick" = 0 ]; then
    hack/install-deps.sh --image
else
    hack/install-deps.sh
fi
if [ "$quick" = 0 ]; then
    # Every release the tests start: the super cluster's, every tenant line shipped, and
    # Cluster API's core manager and clusterctl (test/e2e/test_capi_clusterctl.sh), whose module
    # also holds the Cluster CRD the integration tests install (hack/capi-crd.sh).
    t_kube=$(date +%s)
    hack/kube-build.sh
    # Kubernetes' own e2e.test for the conformance test (test/e2e/test_conformance.sh).
    hack/kube-build.sh conformance 1.36.3 >/dev/null
    echo "Kubernetes, etcd, Cluster API and e2e.test binaries ready in $(($(date +%s) - t_kube)) s"
    # The image's build base (test/integration/deploy/test_deploy_image_run.sh builds on it):
    # made once with mmdebstrap where no registry answers, then cached.
    hack/image-build.sh --base-only
fi

run_suite() {
    local dir=$1
    shift
    local rc=0
    (cd "$dir" && ctest --output-on-failure --timeout 1200 -j"$jobs" "$@") || rc=$?
    if [ "$rc" != 0 ] && [ -d "$dir/kube-env/logs" ]; then
        echo "---- super cluster logs ($dir/kube-env/logs) ----"
        hack/kube-env.sh logs --dir "$dir/kube-env" --lines 80 || true
    fi
    rm -rf "$dir/kube-env"
    return "$rc"
}

step "build (warnings as errors)"
cmake -S . -B build -DNESTCP_WERROR=ON >/dev/null
cmake --build build -j"$jobs"

step "tests ${ctest_args[*]:-(all)}"
run_suite build "${ctest_args[@]}"

if [ "$quick" = 0 ]; then
    step "sanitizer build (ASan + UBSan)"
    cmake -S . -B build-asan -DNESTCP_WERROR=ON -DNESTCP_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
    cmake --build build-asan -j"$jobs"
    step "unit and integration tests under ASan + UBSan"
    # Every C test and the manager's own process tests run again with the sanitizers; the
    # slow shell scenarios that exercise kubectl and scripts more than nestcp's memory
    # (deployment, image staging, faults and upgrades already run above) are not repeated,
    # nor the renewal scenario, which mostly waits for two-minute certificates to age (its code
    # paths run under the sanitizers in the unit tests).
    asan_skip='integration_test_deploy_|integration_test_nested_(faults|upgrade|renewal)|integration_test_api_(crds|explain)|integration_test_kube_env'
    if [ ${#ctest_args[@]} -gt 0 ]; then
        run_suite build-asan "${ctest_args[@]}" -LE e2e -E "$asan_skip"
    else
        run_suite build-asan -LE e2e -E "$asan_skip"
    fi
fi

if [ "$fuzz" = 1 ]; then
    step "fuzzing: every target for 20 s"
    t_fuzz=$(date +%s)
    hack/fuzz.sh -t 20
    echo "fuzzing took $(($(date +%s) - t_fuzz)) s"
fi

step "all tests passed in $(($(date +%s) - t0)) s"
