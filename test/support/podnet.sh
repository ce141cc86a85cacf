# shellcheck shell=bash
# Sourced by the tests that run a node agent: each agent's pods get loopback IPs 127.N.x.y, and
# tests may run at the same time, so each claims an N no running test holds. N is 20..99: the node
# agent's unit test (test/nodeagent/tests/test_runtime.c), which may run beside them, uses
# 100..199.
#
# A claim is an flock(1) on /tmp/nestcp-podnet/N.lock held through a file descriptor of this
# shell. Processes the test starts inherit the descriptor, so the claim lasts while anything of
# the test still runs, and the kernel drops it when the last of them exits: a test killed with
# -9 leaves nothing to clean up.

podnet_dir=${TMPDIR:-/tmp}/nestcp-podnet

# podnet_claim: sets $podnet to a free N, held until podnet_release or the end of every process
# holding the descriptor. Returns 1 when every N is held.
podnet_claim() {
    local i n fd
    mkdir -p "$podnet_dir"
    for ((i = 0; i < 80; i++)); do
        n=$((20 + (RANDOM + i) % 80))
        exec {fd}>>"$podnet_dir/$n.lock" || continue
        if flock -n "$fd"; then
            podnet=$n
            podnet_fds+=("$fd")
            return 0
        fi
        exec {fd}>&-
    done
    return 1
}

# podnet_release: gives back every N this shell claimed (processes still holding the
# descriptor keep their N until they exit).
podnet_release() {
    local fd
    for fd in "${podnet_fds[@]}"; do exec {fd}>&-; done
    podnet_fds=()
}
podnet_fds=()
