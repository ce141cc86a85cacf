#!/usr/bin/env python3
"""Load on the API server pods of a StatefulSet's update revision, as a tenant's users would.

    newpod_load.py NS STS NAME CA CERT KEY OUT [WORKERS]

Once a second it reads the StatefulSet NS/STS and its pods (kubectl, with the caller's
KUBECONFIG) and takes the pods that run the StatefulSet's updateRevision while it rolls
(currentRevision != updateRevision), are Ready and not terminating: the new pods a client of the
pods' EndpointSlice would reach (the slice itself cannot hold the node agent's loopback pod
IPs). WORKERS threads (default 10) then each loop over a create, a get and a list of ConfigMaps
in namespace default against those pods, round robin, TLS verified against CA for NAME with the
client certificate CERT/KEY, each worker over one kept-alive connection (HTTP/1.1) and
no retry: what the server answers
is what is counted. Until SIGTERM; then OUT gets one line per pod and status,
"<pod> <status> <count>", and the totals are printed.
"""
import http.client
import json
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time

ns, sts, name, ca, cert, key, out = sys.argv[1:8]
workers = int(sys.argv[8]) if len(sys.argv) > 8 else 10
stop = threading.Event()
lock = threading.Lock()
targets = []  # (pod, ip)
counts = {}   # (pod, status) -> n

ctx = ssl.create_default_context(cafile=ca)
ctx.load_cert_chain(cert, key)


def refresh():
    global targets
    while not stop.is_set():
        try:
            s, pods = (json.loads(subprocess.run(
                ["kubectl", "-n", ns, "get"] + what + ["-o", "json"],
                capture_output=True, timeout=10, check=True).stdout)
                for what in (["statefulset", sts], ["pods"]))
            items = pods["items"]
            st = s.get("status", {})
            upd = st.get("updateRevision")
            found = []
            if upd and st.get("currentRevision") != upd:
                for p in items:
                    if not p["metadata"]["name"].startswith(sts + "-"):
                        continue
                    ready = [c for c in p.get("status", {}).get("conditions", [])
                             if c["type"] == "Ready" and c["status"] == "True"]
                    if (p["metadata"]["labels"].get("controller-revision-hash") == upd and ready
                            and not p["metadata"].get("deletionTimestamp")
                            and p["status"].get("podIP")):
                        found.append((p["metadata"]["name"], p["status"]["podIP"]))
            with lock:
                targets = found
        except Exception as e:
            print("newpod_load: cannot read the pods: %s" % e, file=sys.stderr, flush=True)
        stop.wait(1.0)


def connect(ip):
    conn = http.client.HTTPSConnection(ip, 6443, context=ctx, timeout=10)
    # Verified for NAME while connected to the pod's IP.
    conn.sock = ctx.wrap_socket(socket.create_connection((ip, 6443), timeout=10),
                                server_hostname=name)
    return conn


def work(n):
    i, conn, at = 0, None, None
    while not stop.is_set():
        with lock:
            t = list(targets)
        if not t:
            if conn:
                conn.close()
                conn, at = None, None
            stop.wait(0.2)
            continue
        pod, ip = t[(n + i) % len(t)]
        cm = "load-%d-%d" % (n, i)
        ops = [("POST", "/api/v1/namespaces/default/configmaps",
                json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": cm}, "data": {"n": str(i)}})),
               ("GET", "/api/v1/namespaces/default/configmaps/" + cm, None),
               ("GET", "/api/v1/namespaces/default/configmaps?limit=50", None)]
        for method, path, body in ops:
            try:
                if at != ip:
                    if conn:
                        conn.close()
                    conn, at = connect(ip), ip
                conn.request(method, path, body=body,
                             headers={"Content-Type": "application/json",
                                      "Accept": "application/json"})
                r = conn.getresponse()
                r.read()
                code = str(r.status)
                if r.getheader("Connection", "").lower() == "close":
                    conn.close()
                    conn, at = None, None
            except Exception as e:
                code = type(e).__name__
                if conn:
                    conn.close()
                conn, at = None, None
            with lock:
                counts[(pod, code)] = counts.get((pod, code), 0) + 1
        i += 1


signal.signal(signal.SIGTERM, lambda *_: stop.set())
threads = [threading.Thread(target=refresh, daemon=True)]
threads += [threading.Thread(target=work, args=(n,), daemon=True) for n in range(workers)]
for t in threads:
    t.start()
while not stop.is_set():
    stop.wait(0.5)
for t in threads:
    t.join(timeout=15)
with lock, open(out, "w") as f:
    for (pod, code), n in sorted(counts.items()):
        f.write("%s %s %d\n" % (pod, code, n))
total = sum(counts.values())
print("load on the new pods: %d requests: %s" % (
    total, ", ".join("%s %s: %d" % (p, c, n) for (p, c), n in sorted(counts.items()))))
