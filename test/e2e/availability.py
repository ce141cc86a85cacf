#!/usr/bin/env python3
"""Measures a tenant API server's availability as a client inside the tenant would see it.

    availability.py HOSTS NAME PORT CA CERT KEY OUT [PERIOD]

Every PERIOD seconds (default 0.2) until SIGTERM: NAME is looked up in HOSTS (the node agent's
hosts file of a pod, which maps a Service name to one ready pod and is rewritten as pods come
and go), then GET https://NAME:PORT/readyz is sent to that address with TLS verified against CA
for NAME and the client certificate CERT/KEY. Each attempt is one line of OUT:
"<unix time> ok|fail <address> <detail>".
"""
import signal
import socket
import ssl
import sys
import time

hosts, name, port, ca, cert, key, out = sys.argv[1:8]
period = float(sys.argv[8]) if len(sys.argv) > 8 else 0.2
running = True


def stop(*_):
    global running
    running = False


signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)

ctx = ssl.create_default_context(cafile=ca)
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


def readyz(addr):
    with socket.create_connection((addr, int(port)), timeout=2) as raw:
        raw.settimeout(2)
        with ctx.wrap_socket(raw, server_hostname=name) as s:
            s.sendall(b"GET /readyz HTTP/1.1\r\nHost: %s:%s\r\nConnection: close\r\n\r\n"
                      % (name.encode(), port.encode()))
            data = b""
            while len(data) < 65536:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
    status = data.split(b"\r\n", 1)[0].decode(errors="replace")
    return status.split(" ")[1] == "200" if " " in status else False, status


with open(out, "a", buffering=1) as log:
    while running:
        start = time.time()
        addr = lookup()
        if addr is None:
            log.write("%.3f fail - no address for %s\n" % (start, name))
        else:
            try:
                ok, detail = readyz(addr)
            except (OSError, ssl.SSLError) as e:
                ok, detail = False, "%s: %s" % (type(e).__name__, e)
            log.write("%.3f %s %s %s\n" % (start, "ok" if ok else "fail", addr,
                                          detail.replace("\n", " ")))
        delay = period - (time.time() - start)
        if delay > 0:
            time.sleep(delay)
