#!/usr/bin/env python3
"""Measures a tenant API server's availability as a client inside the tenant would see it.

    availability.py HOSTS NAME PORT CA CERT KEY OUT [PERIOD] [readyz|readwrite]

Every PERIOD seconds (default 0.2) until SIGTERM: NAME is looked up in HOSTS (the node agent's
hosts file of a pod, which maps a Service name to one ready pod and is rewritten as pods come
and go), then requests go to that address with TLS verified against CA for NAME and the client
certificate CERT/KEY, each on a new connection:
  readyz     GET /readyz (the default);
  readwrite  a real read, GET of ConfigMap default/avail-probe, then a real write, a merge
             patch of its data.n to a counter (the ConfigMap must exist before).
CERT may instead be token:FILE (KEY is then ignored): the requests carry the bearer token in
FILE, read once at the start, and no client certificate.
Each request is one line of OUT: "<unix time> ok|fail <address> <op> <detail>", where op is
readyz, read or write.
"""
import signal
import socket
import ssl
import sys
import time

hosts, name, port, ca, cert, key, out = sys.argv[1:8]
period = float(sys.argv[8]) if len(sys.argv) > 8 else 0.2
mode = sys.argv[9] if len(sys.argv) > 9 else "readyz"
if mode not in ("readyz", "readwrite"):
    sys.exit("availability.py: mode must be readyz or readwrite, not %r" % mode)
CM = "/api/v1/namespaces/default/configmaps/avail-probe"
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


def lookup():
    try:
        with open(hosts) as f:
            for line in f:
                fields = line.split("#", 1)[0].split()
                if len(fields) > 1 and name in fields[1:]:
                    return fields[0]
    except OSError:
        pass
    return None


def request(addr, method, path, body=b"", ctype=None):
    head = b"%s %s HTTP/1.1\r\nHost: %s:%s\r\nConnection: close\r\n" % (
        method.encode(), path.encode(), name.encode(), port.encode())
    if ctype:
        head += b"Content-Type: %s\r\n" % ctype.encode()
    if token:
        head += b"Authorization: Bearer %s\r\n" % token.encode()
    head += b"Content-Length: %d\r\n\r\n" % len(body)
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
    status = data.split(b"\r\n", 1)[0].decode(errors="replace")
    return status.split(" ")[1] == "200" if " " in status else False, status


def attempt(log, addr, op, *req):
    t = time.time()
    try:
        ok, detail = request(addr, *req)
    except (OSError, ssl.SSLError) as e:
        ok, detail = False, "%s: %s" % (type(e).__name__, e)
    log.write("%.3f %s %s %s %s\n" % (t, "ok" if ok else "fail", addr, op,
                                     detail.replace("\n", " ")))


n = 0
with open(out, "a", buffering=1) as log:
    while running:
        start = time.time()
        addr = lookup()
        ops = ["readyz"] if mode == "readyz" else ["read", "write"]
        if addr is None:
            for op in ops:
                log.write("%.3f fail - %s no address for %s\n" % (start, op, name))
        elif mode == "readyz":
            attempt(log, addr, "readyz", "GET", "/readyz")
        else:
            n += 1
            attempt(log, addr, "read", "GET", CM)
            attempt(log, addr, "write", "PATCH", CM, b'{"data":{"n":"%d"}}' % n,
                    "application/merge-patch+json")
        delay = period - (time.time() - start)
        if delay > 0:
            time.sleep(delay)
