#!/usr/bin/env bash
# The operator commands against the real super cluster, with `nestcp manager` running two
# tenants (CAPN's Cluster API shape and a standalone control plane) until Ready:
#   - `nestcp get kubeconfig` prints the admin kubeconfig of each, byte for byte the Secret's,
#     which kubectl reads, naming the tenant's API server and its CA, with a client
#     certificate that CA signed; by cluster name and by NestedControlPlane name;
#   - `--server` points it elsewhere and keeps TLS verified against the original host;
#   - a missing cluster, a malformed Secret and a bad --server fail with a message naming
#     the object, and a non-zero exit status;
#   - `nestcp describe` shows the control plane, its three components Ready, their
#     StatefulSets and Pods, and when the certificates each mounts expire (the date openssl
#     reads from that Secret), and no Secret data;
#   - the bash completion script loads and completes commands and flags.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

ns=nested-cli-$$
install_crds
new_namespace "$ns"
fake_kubelet "$ns"
start_manager mgr "$ns"
kubectl -n "$ns" apply -f "$NESTCP_SOURCE_DIR/config/samples/capn-cluster.yaml" >/dev/null
cluster c | kubectl -n "$ns" apply -f - >/dev/null
wait_ready "$ns" sample-control-plane 180
wait_ready "$ns" c 180
echo "both control planes Ready"

nestcp() { "$NESTCP_BIN" "$@"; }
secret_data() { kubectl -n "$ns" get secret "$1" -o "jsonpath={.data.${2//./\\.}}" | base64 -d; }

# --- get kubeconfig ---
for name in c sample; do
    nestcp get kubeconfig "$name" -n "$ns" >"$work/$name.kubeconfig" ||
        fail "nestcp get kubeconfig $name failed"
    cmp -s "$work/$name.kubeconfig" <(secret_data "$name-kubeconfig" value) ||
        fail "the kubeconfig of $name is not the Secret's"
    server=$(command kubectl --kubeconfig "$work/$name.kubeconfig" config view --minify \
        -o jsonpath='{.clusters[0].cluster.server}')
    command kubectl --kubeconfig "$work/$name.kubeconfig" config view --minify --raw \
        -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d >"$work/$name-ca.crt"
    command kubectl --kubeconfig "$work/$name.kubeconfig" config view --minify --raw \
        -o jsonpath='{.users[0].user.client-certificate-data}' | base64 -d >"$work/$name-admin.crt"
    cmp -s "$work/$name-ca.crt" <(secret_data "$name-ca" tls.crt) ||
        fail "$name: the kubeconfig's CA is not the Secret $name-ca's"
    openssl verify -CAfile "$work/$name-ca.crt" "$work/$name-admin.crt" >/dev/null ||
        fail "$name: the client certificate is not signed by the cluster CA"
    openssl x509 -in "$work/$name-admin.crt" -noout -subject | grep -q 'O *= *system:masters' ||
        fail "$name: the client certificate is not in system:masters"
    echo "get kubeconfig $name: server $server, CA of $name-ca, client certificate it signed"
done
[ "$(command kubectl --kubeconfig "$work/c.kubeconfig" config view --minify \
    -o jsonpath='{.clusters[0].cluster.server}')" = "https://c-apiserver.$ns.svc:6443" ] ||
    fail "the standalone cluster's server is not its API server Service"
[ "$(command kubectl --kubeconfig "$work/sample.kubeconfig" config view --minify \
    -o jsonpath='{.clusters[0].cluster.server}')" = "https://sample-apiserver:6443" ] ||
    fail "the Cluster API cluster's server is not its controlPlaneEndpoint"
# A NestedControlPlane's name finds its cluster's kubeconfig.
nestcp get kubeconfig sample-control-plane -n "$ns" | cmp -s - "$work/sample.kubeconfig" ||
    fail "get kubeconfig sample-control-plane is not cluster sample's kubeconfig"

# --server: the new address, TLS still verified against the name the certificate carries.
nestcp get kubeconfig c -n "$ns" --server https://127.0.0.1:16443 >"$work/fwd.kubeconfig" ||
    fail "get kubeconfig --server failed"
view() { command kubectl --kubeconfig "$work/fwd.kubeconfig" config view --minify -o "jsonpath=$1"; }
[ "$(view '{.clusters[0].cluster.server}')" = https://127.0.0.1:16443 ] || fail "--server not applied"
[ "$(view '{.clusters[0].cluster.tls-server-name}')" = "c-apiserver.$ns.svc" ] ||
    fail "--server: tls-server-name is not the original host"
[ "$(view '{.clusters[0].cluster.insecure-skip-tls-verify}')" != true ] || fail "TLS verification off"
command kubectl --kubeconfig "$work/fwd.kubeconfig" config view --minify --raw \
    -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d |
    cmp -s - "$work/c-ca.crt" || fail "--server changed the CA"
echo "get kubeconfig --server: server https://127.0.0.1:16443, tls-server-name c-apiserver.$ns.svc"

# expect_failure WANT-STATUS WANT-MESSAGE CMD...: CMD exits WANT-STATUS, prints nothing on
# stdout and WANT-MESSAGE on stderr.
expect_failure() {
    local want=$1 msg=$2 rc=0
    shift 2
    "$@" >"$work/out" 2>"$work/err" || rc=$?
    [ "$rc" = "$want" ] || fail "$*: exit status $rc, want $want ($(cat "$work/err"))"
    [ ! -s "$work/out" ] || fail "$*: printed on stdout: $(head -c 200 "$work/out")"
    grep -qF -- "$msg" "$work/err" || fail "$*: says '$(cat "$work/err")', not '$msg'"
    echo "  $* -> $rc: $(cat "$work/err")"
}
echo "errors:"
expect_failure 1 "Secret $ns/nope-kubeconfig not found" nestcp get kubeconfig nope -n "$ns"
expect_failure 1 "no NestedControlPlane, Cluster or cluster name nope in namespace $ns" \
    nestcp describe nope -n "$ns"
kubectl -n "$ns" create secret generic broken-kubeconfig --from-literal=value='clusters: [' >/dev/null
expect_failure 1 "Secret $ns/broken-kubeconfig" nestcp get kubeconfig broken -n "$ns"
kubectl -n "$ns" create secret generic empty-kubeconfig --from-literal=other=x >/dev/null
expect_failure 1 "Secret $ns/empty-kubeconfig" nestcp get kubeconfig empty -n "$ns"
expect_failure 2 "--server" nestcp get kubeconfig c -n "$ns" --server http://127.0.0.1:1
expect_failure 2 "NAME is missing" nestcp get kubeconfig -n "$ns"
expect_failure 1 "management cluster" nestcp get kubeconfig c -n "$ns" --kubeconfig "$work/none"

# --- describe ---
nestcp describe c -n "$ns" >"$work/describe-c.txt" || fail "nestcp describe c failed"
nestcp describe sample -n "$ns" >"$work/describe-sample.txt" || fail "nestcp describe sample failed"
cat "$work/describe-c.txt" "$work/describe-sample.txt"
line() { grep -E "$2" "$work/describe-$1.txt" || fail "describe $1: no line matching '$2'"; }
line c "^NestedControlPlane $ns/c +Ready: True, version v1\.36\.3" >/dev/null
line c "NestedEtcd c-etcd +Ready: True, version 3\.6\.17, phase Ready, 1/1 ready" >/dev/null
line c "NestedAPIServer c-apiserver +Ready: True, version 1\.36\.3" >/dev/null
line c "NestedControllerManager c-cm +Ready: True, version 1\.36\.3" >/dev/null
for sts in c-etcd c-apiserver c-controller-manager; do
    line c "StatefulSet $sts +1/1 ready, 1 updated" >/dev/null
    line c "Pod $sts-0 +Ready: True" >/dev/null
    # The certificates Secret the StatefulSet mounts, and its earliest NotAfter.
    certs=$(kubectl -n "$ns" get statefulset "$sts" \
        -o jsonpath='{.spec.template.spec.volumes[?(@.name=="certs")].secret.secretName}')
    shown=$(line c "Secret $certs +certificates expire")
    earliest=$(kubectl -n "$ns" get secret "$certs" -o json | python3 -c '
import base64, json, re, subprocess, sys
from datetime import datetime, timezone
data = json.load(sys.stdin)["data"]
dates = []
def enddate(pem):
    out = subprocess.run(["openssl", "x509", "-noout", "-enddate"], input=pem,
                         capture_output=True, check=True).stdout.decode()
    dates.append(datetime.strptime(out.strip().split("=", 1)[1], "%b %d %H:%M:%S %Y %Z"))
for k, v in data.items():
    if k.endswith(".crt"):
        enddate(base64.b64decode(v))
    elif k.endswith(".conf"):  # a kubeconfig: its client certificate
        m = re.search(r"client-certificate-data: *(\S+)", base64.b64decode(v).decode())
        enddate(base64.b64decode(m.group(1)))
print(min(dates).replace(tzinfo=timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))')
    grep -qF "expire $earliest " <<<"$shown" ||
        fail "describe c: $certs shows '$shown', openssl reads $earliest"
done
admin_end=$(date -u -d "$(openssl x509 -in "$work/c-admin.crt" -noout -enddate | cut -d= -f2)" \
    '+%Y-%m-%d %H:%M UTC')
line c "Secret c-kubeconfig +admin kubeconfig: certificates expire $admin_end \(in [0-9]+ days, value\)" \
    >/dev/null
line sample "^Cluster $ns/sample " >/dev/null
line sample "NestedCluster sample +Ready: True" >/dev/null
line sample "NestedControlPlane sample-control-plane +Ready: True" >/dev/null
line sample "NestedEtcd sample-nestedetcd +Ready: True" >/dev/null
if grep -qE 'BEGIN|PRIVATE|LS0tLS1' "$work"/describe-*.txt; then
    fail "describe printed Secret data"
fi
nestcp describe c -n "$ns" --show-conditions | grep -qE "Condition Ready +True" ||
    fail "describe --show-conditions lists no Ready condition"
echo "describe: three components Ready, their StatefulSets, Pods and certificate expiry"

# --- completion ---
nestcp completion bash >"$work/nestcp.bash"
bash -n "$work/nestcp.bash" || fail "the bash completion script does not parse"
complete_words() {
    bash -c '
        source "$1"; shift
        COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
        _nestcp
        echo "${COMPREPLY[*]}"' _ "$work/nestcp.bash" "$@"
}
[ "$(bash -c 'source "$1"; complete -p nestcp' _ "$work/nestcp.bash")" = "complete -F _nestcp nestcp" ] ||
    fail "complete -p nestcp"
[ "$(complete_words nestcp ge)" = get ] || fail "nestcp ge<TAB>: $(complete_words nestcp ge)"
[ "$(complete_words nestcp get kube)" = kubeconfig ] || fail "nestcp get kube<TAB>"
[ "$(complete_words nestcp get kubeconfig c --se)" = --server ] ||
    fail "nestcp get kubeconfig c --se<TAB>: $(complete_words nestcp get kubeconfig c --se)"
[ "$(complete_words nestcp describe --show)" = --show-conditions ] || fail "describe --show<TAB>"
[ "$(complete_words nestcp completion z)" = zsh ] || fail "nestcp completion z<TAB>"
[ "$(complete_words nestcp help desc)" = describe ] || fail "nestcp help desc<TAB>"
echo "completion: bash script loads, completes commands, subcommands and flags"
echo PASS
