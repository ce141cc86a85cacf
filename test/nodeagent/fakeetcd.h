#ifndef NESTCP_NODEAGENT_FAKEETCD_H
#define NESTCP_NODEAGENT_FAKEETCD_H

/*
 * A stand-in for the etcd members of StatefulSets, for benchmarks only: it answers the calls of
 * lib/etcd/client.h (POST /v3/cluster/member/{list,add,promote,remove}, POST
 * /v3/maintenance/status, GET /health) for every etcd Pod of the given stores, on one address,
 * with no etcd process and no data.
 *
 * TLS as a member serves it: the client's SNI host, <pod>.<statefulset>.<ns>.svc, picks the
 * Pod; the Pod's `certs` volume names its Secret, whose server.crt and server.key are served
 * and whose ca.crt verifies the client certificate, which is required (etcd's
 * --client-cert-auth). A host that names no Pod, or a Pod that is gated, deleting or has no IP
 * (its etcd would not run), fails the handshake. ALPN selects http/1.1; HTTP/1.1 with
 * keep-alive, bodies up to 64 KiB.
 *
 * Membership per StatefulSet lives in memory. A cluster forms from the first Pod asked about:
 * its annotations etcd.nestcp.x-k8s.io/initial-cluster and -initial-cluster-state (as the
 * container reads them) name the members, with IDs derived from their peer URLs and the Pod's
 * --initial-cluster-token, and a cluster ID from those IDs. Afterwards only calls change it:
 * add (a learner, at most one), promote (only a learner whose Pod runs), remove. A member has
 * started while its Pod runs (not gated, not deleting, with a pod IP); then it lists its name
 * and client URL https://<pod>.<statefulset>.<ns>.svc:2379, as the manifest's arguments
 * advertise. The first voting member leads. Data is never lost: a replaced Pod finds its
 * member as it was.
 *
 * The stores are borrowed and read on each handshake and request (an informer's, say): the
 * etcd Pods, and the Secrets their certs volumes name (keys ca.crt, server.crt, server.key).
 */

#include <stddef.h>

#include "lib/util/err.h"

struct ev_loop;
struct fake_etcd;
struct kube_store;

struct fake_etcd_stats {
    unsigned long handshakes; /* completed */
    unsigned long refused;    /* handshakes failed: unknown host, Pod not running, bad cert */
    unsigned long requests;   /* answered, errors included */
    unsigned long changes;    /* membership changes made */
};

/* Listens on address ("ip:port"; port 0 picks one) and serves the Pods of pods with the
 * Secrets of secrets. Returns 0, -EINVAL (bad address), a socket error (-EADDRINUSE, ...),
 * -ENOMEM, with detail in e. */
int fake_etcd_new(struct ev_loop *loop, const char *address, const struct kube_store *pods,
                  const struct kube_store *secrets, struct fake_etcd **ret, struct err *e);

/* The port listened on. */
int fake_etcd_port(const struct fake_etcd *fe);

void fake_etcd_get_stats(const struct fake_etcd *fe, struct fake_etcd_stats *ret);

/* Closes the listener and every connection. Accepts NULL. */
void fake_etcd_free(struct fake_etcd *fe);

#endif
