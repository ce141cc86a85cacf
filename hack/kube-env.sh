#!/usr/bin/env bash
# A real super cluster for development and tests: etcd, kube-apiserver and
# kube-controller-manager built by hack/kube-build.sh from the Go module proxy, all on loopback,
# all state in one directory. KUBE_VERSION (default 1.37.2) and ETCD_VERSION (default 3.6.17)
# pick the releases; `up` builds them first if they are not cached. Storage is real: the
# controller manager's hostPath provisioner gives every claim of the default StorageClass
# `standard` a PersistentVolume under /tmp/hostpath_pv/<uuid>, removed with the claim; its
# claim binder syncs every second instead of every 15 s (a provisioning that lost a race with the
# StatefulSet controller's write of the claim is retried only by that sync; see
# docs/architecture.md, "Measured: one tenant, from apply to /readyz"). Pod
# Security admission enforces the `restricted` profile in every namespace but kube-system (a
# namespace label pod-security.kubernetes.io/enforce overrides it).
#
#   hack/kube-env.sh build                       build (or find cached) Kubernetes binaries
#   eval "$(hack/kube-env.sh up [--dir DIR])"    start; prints `export KUBECONFIG=...` etc.
#   hack/kube-env.sh status [--dir DIR]          what runs, and whether the apiserver is ready
#   hack/kube-env.sh down [--dir DIR] [--keep-logs]
#   hack/kube-env.sh logs [--dir DIR]            the last lines of every component's log
#   hack/kube-env.sh stop|start COMPONENT [--dir DIR]
#                                                stop or restart one of etcd, apiserver,
#                                                controller-manager (same ports, same data)
#
# DIR defaults to $NESTCP_KUBE_ENV_DIR, or for `up` a new temporary directory.
# Only the processes whose pid files `up` wrote are ever stopped.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
components=(etcd apiserver controller-manager)

die() {
    echo "kube-env: $*" >&2
    exit 1
}

usage() {
    sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'
}

# Any socket on the port, not only a listener: an outgoing connection that
# holds it as its local port makes a later bind fail with "address in use".
port_in_use() {
    [ -n "$(ss -Htan "sport = :$1" 2>/dev/null)" ]
}

# pick_port VAR: sets VAR to a free TCP port on loopback that this script has
# not handed out yet (a variable, not $(...), so that taken_ports is kept).
# Ports come from below the kernel's ephemeral range, so that no outgoing
# connection (etcd clients, probes, tests) can take one between this choice and
# the bind, nor while the API server is restarted on the same port.
pick_port() {
    local p lo=32768 rest
    read -r lo rest </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
    [ "$lo" -gt 11000 ] || die "ephemeral ports start at $lo: no room for test ports in 10000-$lo"
    for _ in $(seq 1 200); do
        p=$((10000 + (RANDOM * 32768 + RANDOM) % (lo - 10000)))
        case " ${taken_ports:-} " in *" $p "*) continue ;; esac
        if ! port_in_use "$p"; then
            taken_ports="${taken_ports:-} $p"
            printf -v "$1" '%s' "$p"
            return 0
        fi
    done
    die "no free port found on 127.0.0.1"
}

# gen_cert NAME CN O SANS USAGE: a leaf signed by the env's CA (ECDSA P-256).
gen_cert() {
    local name=$1 cn=$2 org=$3 sans=$4 usage=$5 subj
    subj="/CN=$cn"
    [ -n "$org" ] && subj="/O=$org$subj"
    openssl ecparam -name prime256v1 -genkey -noout -out "$pki/$name.key" 2>/dev/null
    {
        echo "basicConstraints=critical,CA:FALSE"
        echo "keyUsage=critical,digitalSignature,keyEncipherment"
        echo "extendedKeyUsage=$usage"
        [ -n "$sans" ] && echo "subjectAltName=$sans"
    } >"$pki/$name.ext"
    openssl req -new -key "$pki/$name.key" -subj "$subj" -out "$pki/$name.csr" 2>/dev/null
    openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" \
        -CAcreateserial -days 30 -extfile "$pki/$name.ext" -out "$pki/$name.crt" 2>/dev/null
    rm -f "$pki/$name.csr" "$pki/$name.ext"
}

# write_kubeconfig FILE USER: a kubeconfig with the user's client certificate, files embedded.
write_kubeconfig() {
    local file=$1 user=$2
    cat >"$file" <<KC
apiVersion: v1
kind: Config
clusters:
- name: nestcp-super
  cluster:
    server: https://127.0.0.1:$apiserver_port
    certificate-authority-data: $(base64 -w0 <"$pki/ca.crt")
users:
- name: $user
  user:
    client-certificate-data: $(base64 -w0 <"$pki/$user.crt")
    client-key-data: $(base64 -w0 <"$pki/$user.key")
contexts:
- name: nestcp-super
  context:
    cluster: nestcp-super
    user: $user
current-context: nestcp-super
KC
    chmod 600 "$file"
}

bins() {
    [ -f "$dir/bin-dir" ] && [ -f "$dir/etcd-bin-dir" ] || die "$dir was not set up by 'up'"
    bin_dir=$(cat "$dir/bin-dir")
    etcd_bin_dir=$(cat "$dir/etcd-bin-dir")
}

# Sets the array `cmd` to the command line of a component; `up` and `start` both use it.
cmdline() {
    # shellcheck disable=SC1091
    . "$dir/ports"
    case "$1" in
    etcd)
        cmd=("$etcd_bin_dir/etcd" --name super --data-dir "$dir/etcd-data" \
            --listen-client-urls "http://127.0.0.1:$etcd_port" \
            --advertise-client-urls "http://127.0.0.1:$etcd_port" \
            --listen-peer-urls "http://127.0.0.1:$etcd_peer_port" \
            --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
            --initial-cluster "super=http://127.0.0.1:$etcd_peer_port" \
            --log-level warn)
        ;;
    apiserver)
        cmd=("$bin_dir/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" \
            --bind-address 127.0.0.1 --advertise-address 127.0.0.1 \
            --secure-port "$apiserver_port" \
            --tls-cert-file "$dir/pki/apiserver.crt" --tls-private-key-file "$dir/pki/apiserver.key" \
            --client-ca-file "$dir/pki/ca.crt" --authorization-mode RBAC \
            --service-account-key-file "$dir/pki/sa.pub" \
            --service-account-signing-key-file "$dir/pki/sa.key" \
            --service-account-issuer https://kubernetes.default.svc \
            --service-cluster-ip-range 10.96.0.0/16 --allow-privileged=true \
            --admission-control-config-file "$dir/admission.yaml" \
            --endpoint-reconciler-type none \
            --profiling=false --v=1)
        ;;
    controller-manager)
        cmd=("$bin_dir/kube-controller-manager" --kubeconfig "$dir/controller-manager.kubeconfig" \
            --leader-elect=false --controllers '*' \
            --service-account-private-key-file "$dir/pki/sa.key" \
            --root-ca-file "$dir/pki/ca.crt" --use-service-account-credentials=true \
            --enable-hostpath-provisioner=true --pvclaimbinder-sync-period=1s \
            --secure-port 0 \
            --profiling=false --v=1)
        ;;
    esac
}

start_component() {
    local c=$1 cmd
    cmdline "$c"
    setsid "${cmd[@]}" >>"$dir/logs/$c.log" 2>&1 </dev/null &
    echo $! >"$dir/$c.pid"
}

pid_alive() {
    [ -f "$dir/$1.pid" ] && kill -0 "$(cat "$dir/$1.pid")" 2>/dev/null
}

stop_component() {
    local c=$1 pid
    [ -f "$dir/$c.pid" ] || return 0
    pid=$(cat "$dir/$c.pid")
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$pid" 2>/dev/null || true
        while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
    fi
    rm -f "$dir/$c.pid"
}

readyz() {
    curl -sS --max-time 2 --cacert "$dir/pki/ca.crt" --cert "$dir/pki/admin.crt" \
        --key "$dir/pki/admin.key" "https://127.0.0.1:$apiserver_port/readyz" 2>/dev/null
}

wait_ready() {
    # shellcheck disable=SC1091
    . "$dir/ports"
    for _ in $(seq 1 300); do
        [ "$(readyz)" = ok ] && return 0
        pid_alive apiserver || break
        sleep 0.2
    done
    echo "kube-env: kube-apiserver did not become ready; its log ends with:" >&2
    tail -n 30 "$dir/logs/apiserver.log" >&2 || true
    return 1
}

# The default StorageClass: the hostPath provisioner of the controller manager
# (--enable-hostpath-provisioner) makes a PersistentVolume under /tmp/hostpath_pv/<uuid> for
# each claim and its deleter removes the directory with the claim. `kubectl apply` is
# idempotent; it is retried only while the API server, already ready, refuses it.
default_storage_class() {
    local kc=("$bin_dir/kubectl" --kubeconfig "$dir/kubeconfig" --request-timeout=10s)
    for _ in $(seq 1 50); do
        "${kc[@]}" apply -f - >/dev/null 2>"$dir/logs/storageclass.log" <<YAML && return 0
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: kubernetes.io/host-path
reclaimPolicy: Delete
volumeBindingMode: Immediate
YAML
        pid_alive apiserver || break
        sleep 0.2
    done
    echo "kube-env: the default StorageClass was not created:" >&2
    cat "$dir/logs/storageclass.log" >&2 || true
    return 1
}

wait_etcd() {
    # shellcheck disable=SC1091
    . "$dir/ports"
    for _ in $(seq 1 100); do
        curl -sf --max-time 1 "http://127.0.0.1:$etcd_port/health" >/dev/null 2>&1 && return 0
        pid_alive etcd || break
        sleep 0.1
    done
    echo "kube-env: etcd did not become healthy; its log ends with:" >&2
    tail -n 30 "$dir/logs/etcd.log" >&2 || true
    return 1
}

cmd_up() {
    local bin_dir etcd_bin_dir
    "$here/install-deps.sh"
    bin_dir=$("$here/kube-build.sh" kubernetes "$kube_version")
    etcd_bin_dir=$("$here/kube-build.sh" etcd "$etcd_version")
    if [ -z "$dir" ]; then
        dir=$(mktemp -d "${TMPDIR:-/tmp}/nestcp-kube.XXXXXX")
    fi
    mkdir -p "$dir/logs" "$dir/pki"
    dir=$(cd "$dir" && pwd)
    if pid_alive apiserver || pid_alive etcd; then
        die "$dir already runs a super cluster; 'down' it first"
    fi
    echo "$bin_dir" >"$dir/bin-dir"
    echo "$etcd_bin_dir" >"$dir/etcd-bin-dir"
    dirname "$(dirname "$bin_dir")" >"$dir/bin-root"
    # One directory with this cluster's binaries, kubectl among them, for PATH.
    mkdir -p "$dir/bin"
    for b in "$bin_dir"/* "$etcd_bin_dir"/*; do ln -sfn "$b" "$dir/bin/"; done
    pki="$dir/pki"

    taken_ports=""
    etcd_port="" etcd_peer_port="" apiserver_port=""
    pick_port etcd_port
    pick_port etcd_peer_port
    pick_port apiserver_port
    {
        echo "etcd_port=$etcd_port"
        echo "etcd_peer_port=$etcd_peer_port"
        echo "apiserver_port=$apiserver_port"
    } >"$dir/ports"

    openssl ecparam -name prime256v1 -genkey -noout -out "$pki/ca.key" 2>/dev/null
    openssl req -x509 -new -key "$pki/ca.key" -subj "/CN=nestcp-super-ca" -days 30 \
        -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" \
        -out "$pki/ca.crt" 2>/dev/null
    gen_cert apiserver kube-apiserver "" \
        "IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:10.96.0.1" \
        serverAuth
    gen_cert admin admin system:masters "" clientAuth
    gen_cert controller-manager system:kube-controller-manager "" "" clientAuth
    openssl ecparam -name prime256v1 -genkey -noout -out "$pki/sa.key" 2>/dev/null
    openssl ec -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
    write_kubeconfig "$dir/kubeconfig" admin
    write_kubeconfig "$dir/controller-manager.kubeconfig" controller-manager
    # Pod Security admission enforces the restricted profile in every namespace that does not
    # say otherwise (a namespace label pod-security.kubernetes.io/enforce overrides it), so the
    # API server itself checks every pod nestcp's packages render in the tests' namespaces.
    cat >"$dir/admission.yaml" <<'YAML'
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults:
      enforce: restricted
      enforce-version: latest
      warn: restricted
      warn-version: latest
    exemptions:
      namespaces: [kube-system]
YAML

    start_component etcd
    if ! wait_etcd; then
        cmd_down >&2
        exit 1
    fi
    start_component apiserver
    if ! wait_ready; then
        cmd_down >&2
        exit 1
    fi
    start_component controller-manager
    if ! default_storage_class; then
        cmd_down >&2
        exit 1
    fi
    {
        echo "kube-env: super cluster up in $dir (kube-apiserver $kube_version https://127.0.0.1:$apiserver_port," \
            "etcd $etcd_version http://127.0.0.1:$etcd_port)"
    } >&2
    echo "export NESTCP_KUBE_ENV_DIR=$dir"
    echo "export KUBECONFIG=$dir/kubeconfig"
    echo "export NESTCP_KUBE_BIN_DIR=$bin_dir"
    echo "export NESTCP_ETCD_BIN_DIR=$etcd_bin_dir"
    echo "export NESTCP_BIN_ROOT=$(cat "$dir/bin-root")"
    # kubectl of the server's own version, so the client stays inside the skew policy.
    echo "export PATH=$dir/bin:\$PATH"
}

cmd_down() {
    [ -d "$dir" ] || die "no such directory: $dir"
    for c in controller-manager apiserver etcd; do
        stop_component "$c"
    done
    if [ "$keep_logs" = 1 ]; then
        rm -rf "$dir/etcd-data" "$dir/pki"
        echo "kube-env: stopped; logs kept in $dir/logs" >&2
    else
        rm -rf "$dir"
        echo "kube-env: stopped and removed $dir" >&2
    fi
}

cmd_status() {
    local bin_dir
    [ -d "$dir" ] || die "no such directory: $dir"
    bins
    # shellcheck disable=SC1091
    . "$dir/ports"
    for c in "${components[@]}"; do
        if pid_alive "$c"; then
            echo "$c: running (pid $(cat "$dir/$c.pid"))"
        else
            echo "$c: stopped"
        fi
    done
    if [ "$(readyz)" = ok ]; then
        echo "kube-apiserver: ready at https://127.0.0.1:$apiserver_port"
    else
        echo "kube-apiserver: not ready"
        return 1
    fi
}

cmd_logs() {
    for c in "${components[@]}"; do
        if [ -f "$dir/logs/$c.log" ]; then
            echo "==== $c ($dir/logs/$c.log, last ${log_lines} lines) ===="
            tail -n "$log_lines" "$dir/logs/$c.log"
        fi
    done
}

sub=${1:-}
[ -n "$sub" ] || {
    usage >&2
    exit 2
}
shift
dir=${NESTCP_KUBE_ENV_DIR:-}
kube_version=${KUBE_VERSION:-1.37.2}
kube_version=${kube_version#v}
etcd_version=${ETCD_VERSION:-3.6.17}
etcd_version=${etcd_version#v}
keep_logs=0
log_lines=60
component=""
while [ $# -gt 0 ]; do
    case "$1" in
    --dir) dir=$2; shift 2 ;;
    --dir=*) dir=${1#--dir=}; shift ;;
    --keep-logs) keep_logs=1; shift ;;
    --lines) log_lines=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    etcd | apiserver | controller-manager) component=$1; shift ;;
    *) die "unknown argument '$1' (see --help)" ;;
    esac
done

case "$sub" in
build)
    "$here/kube-build.sh" kubernetes "$kube_version"
    "$here/kube-build.sh" etcd "$etcd_version"
    ;;
up) cmd_up ;;
down)
    [ -n "$dir" ] || die "which environment? pass --dir or set NESTCP_KUBE_ENV_DIR"
    cmd_down
    ;;
status)
    [ -n "$dir" ] || die "which environment? pass --dir or set NESTCP_KUBE_ENV_DIR"
    cmd_status
    ;;
logs)
    [ -n "$dir" ] || die "which environment? pass --dir or set NESTCP_KUBE_ENV_DIR"
    cmd_logs
    ;;
stop | start)
    [ -n "$dir" ] || die "which environment? pass --dir or set NESTCP_KUBE_ENV_DIR"
    [ -n "$component" ] || die "$sub which component? etcd, apiserver or controller-manager"
    bins
    if [ "$sub" = stop ]; then
        stop_component "$component"
    else
        pid_alive "$component" && die "$component is already running"
        start_component "$component"
        case "$component" in
        etcd) wait_etcd ;;
        apiserver) wait_ready ;;
        esac
    fi
    ;;
-h | --help | help) usage ;;
*) die "unknown subcommand '$sub' (see --help)" ;;
esac
