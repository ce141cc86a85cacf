#ifndef NESTCP_NODEAGENT_HOSTS_H
#define NESTCP_NODEAGENT_HOSTS_H

/*
 * The /etc/hosts a pod gets in place of cluster DNS. Service ClusterIPs are not routable on
 * this node, so names resolve to pod IPs:
 *
 *   <svc>.<ns>, <svc>.<ns>.svc, <svc>.<ns>.svc.<domain>
 *        -> the IP of one ready pod the Service selects (any selected pod with an IP when the
 *           Service sets publishNotReadyAddresses); plain <svc> too within the pod's namespace
 *   <hostname>.<subdomain>.<ns>.svc[.<domain>]  (StatefulSet pods: <pod>.<svc>.<ns>.svc)
 *        -> that pod's IP, whether or not it is ready, so peers find each other while they
 *           start (as publishNotReadyAddresses does for etcd's headless Service);
 *           <hostname>.<subdomain> too within the pod's namespace
 *
 * The pod's own names map to its own IP, as the kubelet writes them.
 */

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "lib/util/buf.h"

struct hosts_pod {
    const char *namespace_;
    const char *name;
    const char *hostname;  /* spec.hostname or the pod name */
    const char *subdomain; /* spec.subdomain or NULL */
    const cJSON *labels;   /* metadata.labels (borrowed) */
    const char *ip;        /* NULL while the pod has none */
    bool ready;
};

/* Appends the hosts file of self to out. pods are every pod the node knows (self among them
 * or not); services an array of Service objects (may be NULL); domain the cluster domain
 * ("cluster.local"). Output is deterministic for the same input. Returns 0 or -ENOMEM. */
int hosts_render(const struct hosts_pod *self, const struct hosts_pod *pods, size_t npods,
                 const cJSON *services, const char *domain, struct buf *out);

#endif
