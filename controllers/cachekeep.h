#ifndef NESTCP_CONTROLLERS_CACHEKEEP_H
#define NESTCP_CONTROLLERS_CACHEKEEP_H

/*
 * What the manager's caches keep of each object: the transforms (kube_informer_opts.transform)
 * the runtime registers with its informers. Each removes, in place, what no controller reads,
 * so that memory grows with what nestcp uses rather than with what the API server sends:
 *
 *   every kind      metadata.managedFields and kubectl's last-applied-configuration
 *                   annotation (kube_transform_trim_metadata); the rest of the metadata stays
 *                   (uid, resourceVersion, generation, labels, annotations, ownerReferences,
 *                   finalizers, deletionTimestamp), as do the spec and status of nestcp's kinds,
 *                   Clusters, Services, ConfigMaps, NetworkPolicies and claims;
 *   Secret          cached whole when it is nestcp's (its controller is one of nestcp's kinds)
 *                   or named like one of nestcp's: <cluster>-ca, -etcd, -proxy, -sa,
 *                   -kubeconfig (a CA a user supplies has such a name) or
 *                   <cluster>-<component>-certs-<hash>; any other Secret is not cached at all
 *                   (nestcp reads none);
 *   StatefulSet     spec.replicas, spec.volumeClaimTemplates, spec.template.metadata and
 *                   spec.template.spec.volumes (the certificates Secret it mounts) of the spec,
 *                   and the whole status; the containers go;
 *   Pod             spec.schedulingGates and spec.volumes of the spec, and the status' phase,
 *                   conditions, pod IPs and container statuses; the containers go;
 *   Job             the status; the spec goes.
 *
 * A controller that starts reading another field of a StatefulSet or a Pod adds it here
 * (test_cachekeep.c holds the lists).
 */

#include <stdbool.h>

#include <cjson/cJSON.h>

/* The transforms; ctx is unused. Each returns whether obj is to be cached. */
typedef bool cachekeep_fn(void *ctx, cJSON *obj);

bool cachekeep_object(void *ctx, cJSON *obj);
bool cachekeep_secret(void *ctx, cJSON *obj);
bool cachekeep_statefulset(void *ctx, cJSON *obj);
bool cachekeep_pod(void *ctx, cJSON *obj);
bool cachekeep_job(void *ctx, cJSON *obj);

/* The transform of the caches of kind ("Secret", "Pod", ...): one of the above. */
cachekeep_fn *cachekeep_transform(const char *kind);

/* Whether a Secret is one the caches hold (see above). */
bool cachekeep_secret_is_ours(const cJSON *secret);

#endif
