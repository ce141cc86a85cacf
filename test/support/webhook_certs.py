#!/usr/bin/env python3
"""Does, once, what cert-manager does for the webhooks of providers that clusterctl installs.

Cluster API's components files ask cert-manager for their webhook serving certificates (a
Certificate of a SelfSigned Issuer) and have its CA injector copy the CA into the CRDs'
conversion webhooks and into the webhook configurations (annotation
cert-manager.io/inject-ca-from). cert-manager's CRDs come from its Go module, but its
controllers cannot be built here: their main packages are modules of their own
(github.com/cert-manager/cert-manager/cmd/controller, .../cmd/cainjector, .../cmd/webhook)
that the Go module proxy does not serve. So the tests provide the certificates themselves,
which clusterctl supports (cert-manager "provided" by the user), with this script:

  webhook_certs.py NAMESPACE PORT

For every Certificate in NAMESPACE whose issuer is a SelfSigned Issuer it writes the Secret
spec.secretName (tls.crt, tls.key, ca.crt: a self-signed certificate for spec.dnsNames, as
cert-manager's SelfSigned issuer makes it), then sets caBundle in every CRD,
ValidatingWebhookConfiguration and MutatingWebhookConfiguration annotated
cert-manager.io/inject-ca-from: NAMESPACE/<certificate>. A Certificate of another issuer kind
is refused (exit 1). Needs kubectl (KUBECONFIG) and openssl.

It also stands in for the Service routing this machine lacks: a webhook's Service cannot be
reached here (ClusterIPs do not route, and Endpoints refuse loopback pod IPs), so each of those
webhooks is pointed at https://127.0.0.1:PORT<its path> instead, where the provider's manager,
run as a pod by the node agent, listens on every address; the certificate names 127.0.0.1 too.
"""

import base64
import json
import os
import subprocess
import sys
import tempfile


def kubectl(*args, stdin=None):
    out = subprocess.run(["kubectl", "--request-timeout=20s", *args], input=stdin,
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"webhook_certs: kubectl {' '.join(args[:3])}: {out.stderr.strip()}")
    return out.stdout


def issue(cert, tmp):
    """A self-signed certificate and key for the Certificate's DNS names (PEM strings)."""
    names = cert["spec"].get("dnsNames") or []
    if not names:
        sys.exit(f"webhook_certs: Certificate {cert['metadata']['name']} names no dnsNames")
    key, crt = os.path.join(tmp, "tls.key"), os.path.join(tmp, "tls.crt")
    san = ",".join([f"DNS:{n}" for n in names] + ["IP:127.0.0.1"])
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "90", "-subj",
                    f"/CN={names[0]}", "-addext", f"subjectAltName={san}",
                    "-addext", "basicConstraints=critical,CA:TRUE",
                    "-addext", "keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign",
                    "-addext", "extendedKeyUsage=serverAuth",
                    "-keyout", key, "-out", crt], check=True, capture_output=True)
    with open(crt) as f:
        crt_pem = f.read()
    with open(key) as f:
        key_pem = f.read()
    return crt_pem, key_pem


def b64(text):
    return base64.b64encode(text.encode()).decode()


def client_config(cc, ca_b64, port):
    """The clientConfig with the CA, its Service replaced by the loopback URL."""
    cc = dict(cc)
    svc = cc.pop("service", None)
    if svc:
        cc["url"] = f"https://127.0.0.1:{port}{svc.get('path', '')}"
    cc["caBundle"] = ca_b64
    return cc


def inject(ref, ca_b64, port):
    """caBundle (and the URL) into everything annotated cert-manager.io/inject-ca-from: ref."""
    done = []
    for kind in ("customresourcedefinitions", "validatingwebhookconfigurations",
                 "mutatingwebhookconfigurations"):
        for obj in json.loads(kubectl("get", kind, "-o", "json"))["items"]:
            ann = obj["metadata"].get("annotations") or {}
            if ann.get("cert-manager.io/inject-ca-from") != ref:
                continue
            name = obj["metadata"]["name"]
            if kind == "customresourcedefinitions":
                conv = obj["spec"].get("conversion") or {}
                if conv.get("strategy") != "Webhook":
                    continue
                cc = conv["webhook"]["clientConfig"]
                patch = [{"op": "replace", "path": "/spec/conversion/webhook/clientConfig",
                          "value": client_config(cc, ca_b64, port)}]
            else:
                patch = [{"op": "replace", "path": f"/webhooks/{i}/clientConfig",
                          "value": client_config(w["clientConfig"], ca_b64, port)}
                         for i, w in enumerate(obj.get("webhooks") or [])]
            if patch:
                kubectl("patch", kind, name, "--type", "json", "-p", json.dumps(patch))
                done.append(f"{kind}/{name}")
    return done


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    ns, port = sys.argv[1], int(sys.argv[2])
    issuers = {i["metadata"]["name"]: i for i in
               json.loads(kubectl("-n", ns, "get", "issuers.cert-manager.io", "-o",
                                  "json"))["items"]}
    certs = json.loads(kubectl("-n", ns, "get", "certificates.cert-manager.io", "-o",
                               "json"))["items"]
    if not certs:
        sys.exit(f"webhook_certs: no Certificate in namespace {ns}")
    for cert in certs:
        name, spec = cert["metadata"]["name"], cert["spec"]
        ref = spec.get("issuerRef") or {}
        issuer = issuers.get(ref.get("name"))
        if ref.get("kind", "Issuer") != "Issuer" or not issuer or \
                "selfSigned" not in issuer["spec"]:
            sys.exit(f"webhook_certs: Certificate {ns}/{name}: only SelfSigned Issuers are "
                     f"provided here (issuerRef {ref})")
        with tempfile.TemporaryDirectory() as tmp:
            crt, key = issue(cert, tmp)
        secret = {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                  "metadata": {"name": spec["secretName"], "namespace": ns,
                               "annotations": {"cert-manager.io/certificate-name": name}},
                  "data": {"tls.crt": b64(crt), "tls.key": b64(key), "ca.crt": b64(crt)}}
        kubectl("apply", "-f", "-", stdin=json.dumps(secret))
        targets = inject(f"{ns}/{name}", b64(crt), port)
        print(f"Certificate {ns}/{name}: Secret {spec['secretName']}, CA in "
              f"{len(targets)} objects")


if __name__ == "__main__":
    main()
