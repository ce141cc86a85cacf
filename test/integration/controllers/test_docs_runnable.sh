#!/usr/bin/env bash
# The documentation runs as written. Every shell block of README.md and docs/*.md whose fence is
# marked runnable (an info string `sh runnable`, which GitHub renders as `sh`) is run:
#   - file by file, each file's blocks in document order in one bash (set -euo pipefail), as a
#     reader would type them into one terminal, from a directory holding the repository's
#     files as a checkout does (what the blocks write stays there);
#   - with kubectl's current namespace a new one of this test's, where a `nestcp manager` and
#     the stand-in kubelets (lib.sh) run, so commands without -n go there; `nestcp` is the
#     build's;
# and fails on the first command that fails, showing the trace. README.md and docs/render.md
# must have runnable blocks, so the test cannot pass by losing its markers. Then what a reader
# would check of the README flow: the control plane listed Ready, the admin kubeconfig written
# with mode 0600 pointing at the control plane's endpoint; of docs/render.md: both samples'
# clusters rendered from stdin; of docs/create-cluster.md (in the namespace `tenants`, which it
# creates): the NestedCluster Ready, the kubeconfig 0600, the deleted control plane gone.
# Blocks that need what this machine lacks (a kubelet that runs pods, Cluster API, clusterctl)
# are left unmarked.
set -euo pipefail
: "${NESTCP_BIN:?}"
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

src=$NESTCP_SOURCE_DIR
ns=docs-runnable-$$

# blocks FILE: the runnable blocks of FILE, each preceded by a comment naming its line.
blocks() {
    awk -v f="$1" '
        /^```sh runnable[ \t]*$/ { inb = 1; printf "# %s:%d\n", f, NR; next }
        inb && /^```[ \t]*$/ { inb = 0; next }
        inb { print }
    ' "$src/$1"
}

install_crds
new_namespace "$ns"
start_manager manager "$ns"
fake_kubelet "$ns"
# docs/create-cluster.md creates and uses the namespace `tenants`: one of this test's, run the
# same way, so it must not exist yet (a namespace that does is not this test's to delete).
command kubectl get namespace tenants >/dev/null 2>&1 &&
    fail "namespace tenants exists; docs/create-cluster.md creates it (delete it first)"
namespaces="${namespaces:-} tenants"
start_manager manager-tenants tenants
fake_kubelet tenants

# The reader's checkout and shell.
checkout=$work/checkout
mkdir -p "$checkout" "$work/bin"
for f in "$src"/*; do
    case $(basename "$f") in build | build-*) continue ;; esac
    ln -s "$f" "$checkout/"
done
ln -s "$NESTCP_BIN" "$work/bin/nestcp"
cp "$KUBECONFIG" "$work/kubeconfig"
KUBECONFIG=$work/kubeconfig command kubectl config set-context --current --namespace "$ns" \
    >/dev/null

ran=""
for doc in README.md $(cd "$src" && ls docs/*.md); do
    blocks "$doc" >"$work/script.sh"
    [ -s "$work/script.sh" ] || continue
    n=$(grep -c "^# $doc:" "$work/script.sh")
    out=$work/$(basename "$doc" .md).out
    t0=$(now)
    if ! (cd "$checkout" && PATH="$work/bin:$PATH" KUBECONFIG="$work/kubeconfig" \
        bash -euxo pipefail "$work/script.sh" >"$out" 2>"$out.trace"); then
        echo "--- the runnable blocks of $doc" >&2
        cat "$work/script.sh" >&2
        echo "--- their trace and errors (last lines)" >&2
        tail -n 30 "$out.trace" >&2
        fail "$doc: a runnable block failed"
    fi
    echo "$doc: $n runnable block(s) ran in $(elapsed "$t0") s"
    ran="$ran $doc"
done
for doc in README.md docs/render.md; do
    case " $ran " in *" $doc "*) ;; *) fail "$doc has no runnable block" ;; esac
done

# --- README.md, "Using nestcp" ---
grep -Eq '^sample-control-plane +v1\.36\.3 +true +Ready ' "$work/README.out" ||
    fail "kubectl get nestedcontrolplanes does not show sample-control-plane Ready:
$(grep -E '^(NAME|sample)' "$work/README.out")"
kc=$checkout/sample.kubeconfig
[ -f "$kc" ] || fail "the README flow wrote no sample.kubeconfig"
[ "$(stat -c %a "$kc")" = 600 ] || fail "sample.kubeconfig has mode $(stat -c %a "$kc"), not 600"
server=$(command kubectl config view --kubeconfig "$kc" -o jsonpath='{.clusters[0].cluster.server}')
[ "$server" = https://sample-apiserver:6443 ] ||
    fail "sample.kubeconfig points at '$server', not the Cluster's endpoint"
grep -q "server: https://sample-apiserver:6443" "$work/README.out" ||
    fail "kubectl config view of sample.kubeconfig does not show its server"
grep -q '^  name: standalone-apiserver$' "$work/README.out" ||
    fail "nestcp render of standalone.yaml printed no standalone-apiserver"

# --- docs/render.md: stdin with two samples concatenated renders both clusters ---
for c in sample standalone; do
    grep -q "^  name: $c-etcd$" "$work/render.out" || fail "docs/render.md rendered no $c-etcd"
done
# --- docs/create-cluster.md: both samples Ready in tenants, the kubeconfig 0600, deletion ---
# "READY true once the control plane is": the NestedCluster follows the control plane.
nc_ready() { [ "$(kubectl -n tenants get nc sample -o jsonpath='{.status.ready}')" = true ]; }
until_true 30 nc_ready || fail "NestedCluster tenants/sample is not ready 30 s after its control plane"
kc=$checkout/standalone.kubeconfig
[ -f "$kc" ] && [ "$(stat -c %a "$kc")" = 600 ] ||
    fail "docs/create-cluster.md did not write standalone.kubeconfig with mode 600"
[ -z "$(command kubectl -n tenants get ncp,statefulsets -l cluster.x-k8s.io/cluster-name=standalone \
    -o name)" ] || fail "the standalone control plane is not gone after its deletion"
echo "ok: README.md and docs/*.md runnable blocks ran as written"
