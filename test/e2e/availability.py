#!/usr/bin/env python3
"""Measures a tenant API server's availability as a client of it sees it.

    availability.py SOURCE NAME PORT CA CERT KEY OUT [PERIOD] [readyz|readwrite]

SOURCE says where the client finds an API server, as one of two clients would:
  a path      the node agent's hosts file of a pod (in place of cluster DNS it maps the Service
              name NAME to one ready pod, and is rewritten as pods come and go): a client inside
              the tenant's namespace, through the Service name;
  pods:NS:SEL a client on the host that picks endpoints itself: a watch of the super cluster's
              Pods in NS matching the label selector SEL (kubectl, with the caller's
              KUBECONFIG), taking every pod that is Ready and not terminating, round robin. This
              is what the pods' EndpointSlice would hold; the slice itself cannot, since the
              API refuses loopback addresses in an EndpointSlice and the node agent's pod IPs
              are loopback addresses.
Every PERIOD seconds (default 0.2) until SIGTERM it makes one operation:
  readyz     GET /readyz (the default);
  readwrite  a real read, GET of ConfigMap default/avail-probe, then a real write, a merge
             patch of its data.n to a counter (the ConfigMap must exist before).
TLS is verified against CA for NAME; the client certificate is CERT/KEY. CERT may instead be
token:FILE (KEY is then ignored): the requests carry the bearer token in FILE, read once at the
start, and no client certificate.

An operation behaves as client-go's request does: each attempt is a new connection (so a server
that sent GOAWAY or closed is simply left), and an attempt that reaches no server (connection
refused or reset, a timeout, no address to go to), or is answered 429 or 5xx, is tried again,
after the answer's Retry-After if it has one, else after a short backoff (0.1 s doubling to 1 s),
each time on a freshly chosen address. Any other answer ends the operation: 2xx is a success, a
401, 403 or another 4xx a failure at once (client-go does not retry those either). An operation
with no 2xx within 10 s of its start fails.

Each operation is one line of OUT: "<unix time of its start> ok|fail <address> <op> <status
line or error> [(<n> attempts in <seconds> s; first: <first error>)]", where op is readyz, read
or write.
"""
import json
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time

source, name, port, ca, cert, key, out = sys.argv[1:8]
period = float(sys.argv[8]) if len(sys.argv) > 8 else 0.2
mode = sys.argv[9] if len(sys.argv) > 9 else "readyz"
if mode not in ("readyz", "readwrite"):
    sys.exit("availability.py: mode must be readyz or readwrite, not %r" % mode)
CM = "/api/v1/namespaces/default/configmaps/avail-probe"
DEADLINE = 10.0
running = True


def stop(*_):
    global running
    running = False


signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)

ctx = ssl.create_default_context(cafile=ca)
token = None
if cert.startswith("token:"):
    with open(cert[len("token:"):]) as f:
        token = f.read().strip()
else:
    ctx.load_cert_chain(cert, key)


class HostsFile:
    """The address the hosts file maps NAME to."""

    def __init__(self, path):
        self.path = path

    def pick(self):
        try:
            with open(self.path) as f:
                for line in f:
                    fields = line.split("#", 1)[0].split()
                    if len(fields) > 1 and name in fields[1:]:
                        return fields[0]
        except OSError:
            pass
        return None


class PodWatch:
    """Ready, not terminating pods of a selector, from a kubectl watch of the super cluster."""

    def __init__(self, namespace, selector):
        self.pods = {}
        self.lock = threading.Lock()
        self.next = 0
        self.proc = None
        self.cmd = ["kubectl", "get", "pods", "-n", namespace, "-l", selector, "--watch",
                    "--output-watch-events", "--request-timeout=0", "-o", "json"]
        threading.Thread(target=self.watch, daemon=True).start()

    def watch(self):
        # A watch that ends is started again; what it knew stays until the new one says.
        while running:
            self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, text=True)
            self.read()
            self.proc.wait()
            time.sleep(0.5)

    def read(self):
        # kubectl prints each event as one line of JSON (indented over several lines without
        # --output-watch-events): an event is complete once what was read parses.
        lines = []
        for line in self.proc.stdout:
            lines.append(line)
            try:
                ev = json.loads("".join(lines))
            except ValueError:
                continue
            lines = []
            obj = ev.get("object", {})
            pod = obj.get("metadata", {}).get("name")
            st = obj.get("status", {})
            ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                        for c in st.get("conditions", []))
            serving = (ev.get("type") != "DELETED" and ready and st.get("podIP") and
                       not obj["metadata"].get("deletionTimestamp"))
            with self.lock:
                if serving:
                    self.pods[pod] = st["podIP"]
                else:
                    self.pods.pop(pod, None)

    def pick(self):
        with self.lock:
            addrs = sorted(self.pods.values())
            self.next += 1
            return addrs[self.next % len(addrs)] if addrs else None

    def close(self):
        if self.proc:
            self.proc.terminate()


def request(addr, method, path, body=b"", ctype=None):
    """One attempt: (status code or None, status line or error, Retry-After seconds or None)."""
    head = b"%s %s HTTP/1.1\r\nHost: %s:%s\r\nConnection: close\r\n" % (
        method.encode(), path.encode(), name.encode(), port.encode())
    if ctype:
        head += b"Content-Type: %s\r\n" % ctype.encode()
    if token:
        head += b"Authorization: Bearer %s\r\n" % token.encode()
    head += b"Content-Length: %d\r\n\r\n" % len(body)
    try:
        with socket.create_connection((addr, int(port)), timeout=2) as raw:
            raw.settimeout(2)
            with ctx.wrap_socket(raw, server_hostname=name) as s:
                s.sendall(head + body)
                data = b""
                while len(data) < 65536:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    data += chunk
    except (OSError, ssl.SSLError) as e:
        return None, "%s: %s" % (type(e).__name__, e), None
    lines = data.split(b"\r\n\r\n", 1)[0].decode(errors="replace").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) < 2 or not parts[1].isdigit():
        return None, "no HTTP answer: %r" % lines[0][:80], None
    retry_after = None
    for h in lines[1:]:
        k, _, v = h.partition(":")
        if k.strip().lower() == "retry-after" and v.strip().isdigit():
            retry_after = float(v.strip())
    return int(parts[1]), lines[0], retry_after


def operation(src, log, op, *req):
    start = time.time()
    attempts, first, backoff = 0, None, 0.1
    while True:
        addr = src.pick()
        attempts += 1
        if addr is None:
            code, detail, retry_after = None, "no address for %s" % name, None
        else:
            code, detail, retry_after = request(addr, *req)
        final = code is not None and code != 429 and code < 500
        if final or time.time() - start + (retry_after or backoff) > DEADLINE or not running:
            break
        first = first or detail
        time.sleep(retry_after if retry_after is not None else backoff)
        backoff = min(backoff * 2, 1.0)
    ok = code is not None and 200 <= code < 300
    if not ok and not running:
        return  # stopped in the middle: not a measurement
    if not ok and not final:
        detail = "no 2xx within %g s: %s" % (DEADLINE, detail)
    if attempts > 1:
        detail += " (%d attempts in %.2f s; first: %s)" % (attempts, time.time() - start, first)
    log.write("%.3f %s %s %s %s\n" % (start, "ok" if ok else "fail", addr or "-", op,
                                     detail.replace("\n", " ")))


if source.startswith("pods:"):
    _, namespace, selector = source.split(":", 2)
    src = PodWatch(namespace, selector)
else:
    src = HostsFile(source)
n = 0
with open(out, "a", buffering=1) as log:
    while running:
        start = time.time()
        if mode == "readyz":
            operation(src, log, "readyz", "GET", "/readyz")
        else:
            n += 1
            operation(src, log, "read", "GET", CM)
            operation(src, log, "write", "PATCH", CM, b'{"data":{"n":"%d"}}' % n,
                      "application/merge-patch+json")
        delay = period - (time.time() - start)
        if delay > 0:
            time.sleep(delay)
if isinstance(src, PodWatch):
    src.close()
