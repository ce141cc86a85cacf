#!/usr/bin/env bash
# How long a tenant control plane takes to answer, and what the floor is.
#
#   test/bench/bench_e2e.sh [BUILD_DIR]      (default build/; run as root; not part of CTest)
#
# nestcp: the time from `kubectl apply --server-side` of NestedControlPlane objects to each
# tenant's
# kube-apiserver answering GET /readyz (TLS verified), for 1 tenant and for 10 applied at once,
# with `nestcp manager` and the node agent running them as local processes.
# Floor, measured in the same run: the same etcd and kube-apiserver binaries started by hand
# with the same flags (`nestcp render`'s command lines and certificates; only what a pod runtime
# supplies is substituted: pod IP, pod name, mount paths, and the Service names through a hosts
# file in a private mount namespace), etcd first, the API server as soon as etcd is healthy,
# polled every 50 ms; for 1 tenant and for 10 at once.
# Uses the super cluster of $KUBECONFIG/$NESTCP_KUBE_ENV_DIR when set, else starts its own.
# NESTCP_BENCH_KEEP=1 keeps the work directory (the manager's and node agent's logs).
# NESTCP_BENCH_MANAGER_ARGS adds flags to the manager's command line (e.g. --concurrency 16).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
nestcp=$build/nestcp
agent=$build/test/nodeagent/nestcp-nodeagent
if [ ! -x "$nestcp" ] || [ ! -x "$agent" ]; then
    echo "bench_e2e: build nestcp and nestcp-nodeagent in $build first" >&2
    exit 1
fi
[ "$(id -u)" -eq 0 ] || { echo "bench_e2e: run as root (mount namespaces)" >&2; exit 1; }

work=$(mktemp -d /tmp/nestcp-bench-e2e.XXXXXX)
own_env=0
agent_pid=
mgr_pid=
ns=bench-e2e-$$
node=bench-e2e-$$
pod_net=$((20 + RANDOM % 100))
floor_net=$((pod_net + 100))

now() { date +%s.%N; }
log() { echo "[$(date +%T)] $*" >&2; }
load1() { awk '{ printf "%s ", $1 }' /proc/loadavg >>"$work/load"; }
phase() { load1; log "$@"; } # a timed run starts: its load average is kept for the summary

stop() {
    local pid=$1 secs=$2
    [ -n "$pid" ] || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    for _ in $(seq 1 $((secs * 5))); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.2
    done
    kill -KILL "$pid" 2>/dev/null || true
}

cleanup() {
    stop "$mgr_pid" 20
    stop "$agent_pid" 60
    if [ "$own_env" = 1 ]; then
        "$root/hack/kube-env.sh" down --dir "$work/kube" >/dev/null 2>&1 || true
    else
        kubectl -n "$ns" get ncp,netcd,nkas,nkcm -o name 2>/dev/null |
            xargs -r kubectl -n "$ns" patch --type merge -p '{"metadata":{"finalizers":null}}' \
                >/dev/null 2>&1 || true
        kubectl -n "$ns" delete pods --all --grace-period=0 --force --wait=false >/dev/null 2>&1 || true
        kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
        kubectl delete node "$node" --wait=false >/dev/null 2>&1 || true
    fi
    if [ -n "${NESTCP_BENCH_KEEP:-}" ]; then
        echo "bench_e2e: logs kept in $work" >&2
    else
        rm -rf "$work"
    fi
}
trap cleanup EXIT

if [ -z "${KUBECONFIG:-}" ] || [ -z "${NESTCP_KUBE_ENV_DIR:-}" ]; then
    log "starting a super cluster (hack/kube-env.sh up)"
    eval "$("$root/hack/kube-env.sh" up --dir "$work/kube")"
    own_env=1
fi
# The tenants' releases (stable channel), as hack/kube-build.sh cached them.
tenant_k8s=1.36.3
tenant_etcd=3.6.17
bin_dir=$("$root/hack/kube-build.sh" kubernetes "$tenant_k8s")
etcd_bin=$("$root/hack/kube-build.sh" etcd "$tenant_etcd")/etcd
export KUBECONFIG

# tenants PREFIX N: N standalone control planes <prefix>0..<prefix>N-1, one member each.
tenants() {
    local i
    for i in $(seq 0 $(($2 - 1))); do
        cat <<EOF
---
apiVersion: controlplane.cluster.x-k8s.io/v1beta1
kind: NestedControlPlane
metadata:
  name: $1$i
spec:
  version: "$tenant_k8s"
  etcd: {kind: NestedEtcd, name: $1$i-etcd}
  apiserver: {kind: NestedAPIServer, name: $1$i-apiserver}
  controllerManager: {kind: NestedControllerManager, name: $1$i-controller-manager}
---
apiVersion: controlplane.cluster.x-k8s.io/v1beta1
kind: NestedEtcd
metadata: {name: $1$i-etcd}
spec: {replicas: 1}
---
apiVersion: controlplane.cluster.x-k8s.io/v1beta1
kind: NestedAPIServer
metadata: {name: $1$i-apiserver}
spec: {replicas: 1}
---
apiVersion: controlplane.cluster.x-k8s.io/v1beta1
kind: NestedControllerManager
metadata: {name: $1$i-controller-manager}
spec: {replicas: 1}
EOF
    done
}

# ---- the floor: the rendered etcd and kube-apiserver, started by hand ----

# floor N: renders N tenants, lays out each one's certificates, starts every etcd at once and
# each kube-apiserver as soon as its etcd is healthy (polled every 50 ms, like /readyz after);
# prints "<cluster> <etcd healthy s> <apiserver ready s>" per tenant, counted from the start.
floor() {
    local n=$1 dir=$work/floor-$1
    mkdir -p "$dir"
    tenants "f$n-" "$n" >"$dir/in.yaml"
    "$nestcp" render -n floor -o json -f "$dir/in.yaml" >"$dir/out.json"
    python3 - "$dir" "$floor_net" "$bin_dir" "$etcd_bin" <<'PY'
import base64, json, os, signal, socket, ssl, subprocess, sys, time
dir, net, bin_dir, etcd_bin = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
items = json.load(open(os.path.join(dir, "out.json")))["items"]
clusters = sorted(o["metadata"]["name"][:-len("-etcd")] for o in items
                  if o["kind"] == "StatefulSet" and o["metadata"]["name"].endswith("-etcd"))
def secret(prefix):
    return next(o for o in items if o["kind"] == "Secret" and o["metadata"]["name"].startswith(prefix))
def sts(name):
    return next(o for o in items if o["kind"] == "StatefulSet" and o["metadata"]["name"] == name)
# Runs argv with the hosts file over /etc/hosts, in a private mount namespace and a session
# of its own.
RUN = 'mount --bind "$0" /etc/hosts && mapfile -d "" -t a <"$1" && exec "${a[@]}"'
tenants = []
for i, c in enumerate(clusters):
    d = os.path.join(dir, c)
    etcd_ip = "127.%d.%d.%d" % (net, 1 + i // 100, 2 + 2 * (i % 100))
    api_ip = "127.%d.%d.%d" % (net, 1 + i // 100, 3 + 2 * (i % 100))
    # Every Secret and ConfigMap volume of the pods (certificates, the API server's
    # authentication configuration), written out as the kubelet would, and its mount path
    # mapped; the etcd member's data directory.
    paths = {"/var/lib/etcd": os.path.join(d, "data")}
    os.makedirs(paths["/var/lib/etcd"], mode=0o700)
    for comp in ("etcd", "apiserver"):
        spec = sts("%s-%s" % (c, comp))["spec"]["template"]["spec"]
        vols = {v["name"]: v for v in spec.get("volumes", [])}
        for m in spec["containers"][0].get("volumeMounts", []):
            v = vols.get(m["name"], {})
            if "secret" in v:
                obj = next(o for o in items if o["kind"] == "Secret"
                           and o["metadata"]["name"] == v["secret"]["secretName"])
                data = {k: base64.b64decode(x) for k, x in obj.get("data", {}).items()}
            elif "configMap" in v:
                obj = next(o for o in items if o["kind"] == "ConfigMap"
                           and o["metadata"]["name"] == v["configMap"]["name"])
                data = {k: x.encode() for k, x in obj.get("data", {}).items()}
            else:
                continue
            host = os.path.join(d, "%s-%s" % (comp, m["name"]))
            os.makedirs(host, mode=0o700)
            for k, x in data.items():
                fd = os.open(os.path.join(host, k), os.O_WRONLY | os.O_CREAT, 0o600)
                os.write(fd, x)
                os.close(fd)
            paths[m["mountPath"]] = host
    # What nestcp writes into a first member's annotations before it lifts its scheduling gate.
    subst = {"$(POD_NAME)": "%s-etcd-0" % c, "$(POD_NAMESPACE)": "floor",
             "$(NESTCP_INITIAL_CLUSTER)": "%s-etcd-0=https://%s-etcd-0.%s-etcd.floor.svc:2380"
                                          % (c, c, c),
             "$(NESTCP_INITIAL_CLUSTER_STATE)": "new"}
    for comp, ip, binary in (("etcd", etcd_ip, etcd_bin),
                             ("apiserver", api_ip, os.path.join(bin_dir, "kube-apiserver"))):
        ctr = sts("%s-%s" % (c, comp))["spec"]["template"]["spec"]["containers"][0]
        args = [binary]
        for a in ctr.get("args", []):
            a = a.replace("$(POD_IP)", ip)
            for k, v in list(subst.items()) + list(paths.items()):
                a = a.replace(k, v)
            args.append(a)
        with open(os.path.join(d, comp + ".args"), "w") as f:
            f.write("\0".join(args) + "\0")
    with open(os.path.join(d, "hosts"), "w") as h:
        h.write("127.0.0.1 localhost\n%s %s-etcd-0.%s-etcd.floor.svc %s-etcd.floor.svc\n"
                "%s %s-apiserver %s-apiserver.floor.svc\n" % (etcd_ip, c, c, c, api_ip, c, c))
    ctx = ssl.create_default_context(cafile=os.path.join(paths["/etc/kubernetes/pki"], "ca.crt"))
    tenants.append({"c": c, "d": d, "etcd_ip": etcd_ip, "api_ip": api_ip, "ctx": ctx, "procs": []})

def start(t, comp):
    log = open(os.path.join(t["d"], comp + ".log"), "w")
    t["procs"].append(subprocess.Popen(
        ["unshare", "-m", "bash", "-c", RUN, os.path.join(t["d"], "hosts"),
         os.path.join(t["d"], comp + ".args")], stdout=log, stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL, start_new_session=True))

def etcd_healthy(t):
    try:
        with socket.create_connection((t["etcd_ip"], 2381), timeout=1) as s:
            s.sendall(b"GET /health HTTP/1.0\r\n\r\n")
            return b'"health":"true"' in s.recv(4096)
    except OSError:
        return False

def api_ready(t):
    name = "%s-apiserver" % t["c"]
    try:
        with socket.create_connection((t["api_ip"], 6443), timeout=1) as raw:
            with t["ctx"].wrap_socket(raw, server_hostname=name) as s:
                s.sendall(b"GET /readyz HTTP/1.0\r\nHost: %s\r\n\r\n" % name.encode())
                data = s.recv(4096)
                return data.startswith(b"HTTP/1.0 200") or data.startswith(b"HTTP/1.1 200")
    except (OSError, ssl.SSLError):
        return False

t0 = time.time()
for t in tenants:
    start(t, "etcd")
deadline = t0 + 600
try:
    while time.time() < deadline and any("api" not in t for t in tenants):
        for t in tenants:
            if "etcd" not in t and etcd_healthy(t):
                t["etcd"] = time.time() - t0
                start(t, "apiserver")
            elif "etcd" in t and "api" not in t and api_ready(t):
                t["api"] = time.time() - t0
        time.sleep(0.05)
finally:
    for t in tenants:
        for p in t["procs"]:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
for t in tenants:
    if "api" not in t:
        sys.exit("floor: %s did not become ready; see %s" % (t["c"], t["d"]))
    print("%s %.2f %.2f" % (t["c"], t["etcd"], t["api"]))
PY
}

# ---- nestcp: kubectl apply -> /readyz ----

kubectl config view --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' |
    base64 -d >"$work/super-ca.crt"
kubectl config view --raw -o jsonpath='{.users[0].user.client-certificate-data}' | base64 -d >"$work/super.crt"
kubectl config view --raw -o jsonpath='{.users[0].user.client-key-data}' | base64 -d >"$work/super.key"
chmod 600 "$work"/super.*
super_server=$(kubectl config view --raw -o jsonpath='{.clusters[0].cluster.server}')

# watch_ready N T0 OUT: polls until N tenants of the namespace answer /readyz on an API server
# pod (TLS verified with the tenant's CA from Secret <c>-ca), as the floor polls its own: every
# 50 ms, each tenant in turn, a 1 s timeout. The super cluster is asked for the pods only
# while a tenant's pod IP is not known yet. Writes "<cluster> <seconds since T0>" per tenant
# to OUT.
watch_ready() {
    python3 - "$super_server" "$work/super-ca.crt" "$work/super.crt" "$work/super.key" "$ns" "$1" "$2" "$3" <<'PY'
import base64, http.client, json, os, socket, ssl, sys, tempfile, time
server, ca, cert, key, ns, n, t0, out = sys.argv[1:9]
n, t0 = int(n), float(t0)
host, port = server[len("https://"):].rsplit(":", 1)
sctx = ssl.create_default_context(cafile=ca)
sctx.load_cert_chain(cert, key)
def get(path):
    c = http.client.HTTPSConnection(host, int(port), context=sctx, timeout=10)
    c.request("GET", path)
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, body
def api_ready(c, ip):
    name = "%s-apiserver" % c
    try:
        with socket.create_connection((ip, 6443), timeout=1) as raw:
            with cas[c].wrap_socket(raw, server_hostname=name) as s:
                s.sendall(b"GET /readyz HTTP/1.0\r\nHost: %s\r\n\r\n" % name.encode())
                return s.recv(4096).split(b"\r\n", 1)[0].split(b" ")[1:2] == [b"200"]
    except (OSError, ssl.SSLError, IndexError):
        return False
cas, ips, done = {}, {}, {}
deadline = time.time() + 900
while len(done) < n and time.time() < deadline:
    if len(ips) < n:
        st, body = get("/api/v1/namespaces/%s/pods?labelSelector=app.kubernetes.io/component%%3Dapiserver" % ns)
        for p in json.loads(body).get("items", []) if st == 200 else []:
            c = p["metadata"]["labels"].get("cluster.x-k8s.io/cluster-name")
            ip = p.get("status", {}).get("podIP")
            if not c or c in ips or not ip:
                continue
            if c not in cas:
                st, b = get("/api/v1/namespaces/%s/secrets/%s-ca" % (ns, c))
                if st != 200:
                    continue
                f = tempfile.NamedTemporaryFile(delete=False, suffix=".crt")
                f.write(base64.b64decode(json.loads(b)["data"]["tls.crt"]))
                f.close()
                cas[c] = ssl.create_default_context(cafile=f.name)
                os.unlink(f.name)
            ips[c] = ip
    for c, ip in ips.items():
        if c not in done and api_ready(c, ip):
            done[c] = time.time() - t0
    time.sleep(0.05)
with open(out, "w") as f:
    for c, s in sorted(done.items()):
        f.write("%s %.2f\n" % (c, s))
sys.exit(0 if len(done) == n else 1)
PY
}

# nestcp_run PREFIX N: applies N tenants at once; prints "<cluster> <seconds>" per tenant; then
# deletes them and waits until their pods are gone.
nestcp_run() {
    local prefix=$1 n=$2 t0
    tenants "$prefix" "$n" >"$work/$prefix.yaml"
    t0=$(now)
    echo "$t0" >"$work/$prefix.t0"
    # Server-side: one request per object (a client-side apply reads each object first, which
    # spreads the last tenant's objects over seconds on a loaded machine).
    kubectl -n "$ns" apply --server-side -f "$work/$prefix.yaml" >/dev/null
    awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }' >"$work/$prefix.applied"
    watch_ready "$n" "$t0" "$work/$prefix.result" ||
        { log "not every tenant answered; see $work"; cat "$work/$prefix.result" >&2; exit 1; }
    cat "$work/$prefix.result"
    # Then until the control planes are Ready (controller managers too), for the breakdown.
    kubectl -n "$ns" wait --for=condition=Ready ncp --all --timeout=600s >/dev/null || true
    kubectl -n "$ns" get pods -o go-template='{{range .items}}{{.metadata.name}} {{.metadata.creationTimestamp}} {{range .status.conditions}}{{if and (eq .type "Ready") (eq .status "True")}}{{.lastTransitionTime}}{{end}}{{end}}{{"\n"}}{{end}}' \
        >"$work/$prefix.pods"
    kubectl -n "$ns" delete -f "$work/$prefix.yaml" --ignore-not-found --wait=true --timeout=300s >/dev/null
    for _ in $(seq 1 300); do
        [ -z "$(kubectl -n "$ns" get pods -o name)" ] && break
        sleep 1
    done
}

# summary FILE COLUMN: "first median last" of a column of seconds.
summary() {
    awk -v k="$2" '{ print $k }' "$1" | sort -n |
        awk '{ v[NR] = $1 } END { printf "%.1f %.1f %.1f", v[1], v[int((NR + 1) / 2)], v[NR] }'
}

phase "floor: 1 tenant started by hand"
floor 1 >"$work/floor1"
phase "floor: 10 tenants started by hand at once"
floor 10 >"$work/floor10"

kubectl apply -f "$root/config/crd/bases" >/dev/null
for _ in $(seq 1 120); do
    kubectl wait --for condition=established --timeout=30s crd --all >/dev/null 2>&1 && break
    sleep 0.5
done
kubectl create namespace "$ns" >/dev/null
"$agent" --node-name "$node" --state-dir "$work/agent" --pod-network "$pod_net" \
    --selector app.kubernetes.io/managed-by=nestcp --stop-grace-max 5 >"$work/agent.log" 2>&1 &
agent_pid=$!
"$nestcp" manager --namespace "$ns" --templates "$root/templates" --metrics-bind-address 127.0.0.1:0 --metrics-secure=false \
    --health-probe-bind-address 127.0.0.1:0 ${NESTCP_BENCH_MANAGER_ARGS:-} >"$work/manager.log" 2>&1 &
mgr_pid=$!
for _ in $(seq 1 60); do
    kubectl get ncp -n "$ns" >/dev/null 2>&1 && [ -n "$(kubectl get node "$node" -o name 2>/dev/null)" ] && break
    sleep 0.5
done

# Off the clock, as a platform's manager is: running, its watches delivering. A warm-up set of
# the four kinds that creates nothing (the control plane names components that do not exist,
# the components wait for a control plane to adopt them) is applied, and the clock starts once
# the manager has written each one's Ready condition. This also takes the super cluster's first
# write of each kind after its CRD was established (about 2 s, once per CRD, not per tenant).
# Without it, a tenant was applied 0.3 s after the manager started, and in 3 of 7 runs the
# manager saw one of its four objects 0.3 s after the other three.
tenants warm- 1 | sed -e 's/, name: warm-0-[a-z-]*}$/, name: warm-none}/' >"$work/warm.yaml"
t=$(now)
kubectl -n "$ns" apply --server-side -f "$work/warm.yaml" >/dev/null
kubectl -n "$ns" wait --for=condition=Ready=false --timeout=60s \
    ncp/warm-0 netcd/warm-0-etcd nkas/warm-0-apiserver nkcm/warm-0-controller-manager >/dev/null
awk -v a="$t" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }' >"$work/warm"
kubectl -n "$ns" delete --wait=true --timeout=60s -f "$work/warm.yaml" >/dev/null

phase "nestcp: 1 tenant"
nestcp_run one- 1 >"$work/nestcp1"
phase "nestcp: 10 tenants at once"
nestcp_run ten- 10 >"$work/nestcp10"

echo
echo "bench_e2e: kubectl apply -> tenant GET /readyz, against starting the same binaries by hand"
echo "($(nproc) CPUs; tenants on Kubernetes $tenant_k8s, etcd $("$etcd_bin" --version | awk '/etcd Version/ { print $3 }'); seconds)"
echo
printf '%-8s %-28s %-28s %s\n' tenants "nestcp first/median/last" "by hand first/median/last" "ratio (last)"
for n in 1 10; do
    read -r a b c <<<"$(summary "$work/nestcp$n" 2)"
    read -r d e f <<<"$(summary "$work/floor$n" 3)"
    printf '%-8s %-28s %-28s %.1fx\n' "$n" "$a / $b / $c" "$d / $e / $f" \
        "$(awk -v x="$c" -v y="$f" 'BEGIN { print x / y }')"
done
echo
echo "Not counted: before the first clock, a warm-up set of the four kinds applied and each object's"
echo "Ready condition written by the manager (the first write of each kind too): $(cat "$work/warm") s"
load1
echo "1-minute load average as each run started (floor 1, floor 10, nestcp 1, nestcp 10) and at the end:"
echo "  $(cat "$work/load")"
echo "kubectl apply --server-side returned after (s): 1 tenant $(cat "$work/one-.applied")," \
    "10 tenants $(cat "$work/ten-.applied")"
echo "By hand, etcd healthy after (s): 1 tenant $(summary "$work/floor1" 2 | awk '{ print $3 }')," \
    "10 tenants first/median/last $(summary "$work/floor10" 2 | tr ' ' /)"
echo "nestcp, 1 tenant, pods (seconds after kubectl apply; the API's timestamps have 1 s resolution):"
python3 - "$work/one-.pods" "$(cat "$work/one-.t0")" <<'PY'
import sys, datetime
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
ts = lambda s: datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").replace(
    tzinfo=datetime.timezone.utc).timestamp()
t0 = float(sys.argv[2])
for r in sorted(rows, key=lambda r: ts(r[1])):
    ready = "+%3.0f s" % (ts(r[2]) - t0) if len(r) > 2 else "?"
    print("  %-28s created +%3.0f s, Ready %s" % (r[0], ts(r[1]) - t0, ready))
PY
echo "nestcp, 1 tenant, the node agent's log (seconds after kubectl apply):"
python3 - "$work/agent.log" "$(cat "$work/one-.t0")" <<'PY'
import sys, datetime
t0 = float(sys.argv[2])
first = {}
for l in open(sys.argv[1]):
    f = l.split()
    if len(f) < 4 or "/one-0-" not in l:
        continue
    what = " ".join(f[2:4]) if f[2] == "pod" else f[2]
    pod = next((x[4:] for x in f if x.startswith("pod=")), "?").split("/")[-1]
    ts = datetime.datetime.strptime(f[0], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()
    k = (pod, what)
    first.setdefault(k, [ts, ts, 0])
    first[k][1] = ts
    first[k][2] += 1
for (pod, what), (a, b, n) in sorted(first.items(), key=lambda kv: kv[1][0]):
    span = "" if n == 1 else " (%d times, last +%.2f s)" % (n, b - t0)
    print("  %-28s %-12s +%.2f s%s" % (pod, what, a - t0, span))
PY
