#ifndef NESTCP_API_DEFAULTS_H
#define NESTCP_API_DEFAULTS_H

/*
 * Defaults that need context. The static defaults (replicas 1, keyAlgorithm ECDSA-P256, ...)
 * were already applied by the parser from the schema; these fill what depends on the owner
 * Cluster, the control plane or the package catalog. All arguments but the object may be NULL.
 * Each returns 0 or -ENOMEM. Calling one twice changes nothing the second time.
 */

#include "api/catalog.h"
#include "api/types.h"

#define API_DEFAULT_SERVICE_CIDR "10.96.0.0/12"
#define API_DEFAULT_SERVICE_DOMAIN "cluster.local"
#define API_DEFAULT_APISERVER_PORT 6443

/* NestedControlPlane:
 *   spec.version               <- catalog default_version
 *   spec.controlPlaneEndpoint  <- the Cluster's, else <cluster>-apiserver.<namespace>.svc:6443
 *   spec.clusterNetwork        <- each of services, pods, serviceDomain from the Cluster's;
 *                                 else services 10.96.0.0/12 and serviceDomain cluster.local
 *   spec.certificates          <- zero values get the schema defaults */
int api_control_plane_default(struct api_control_plane *ncp, const struct api_capi_cluster *cl,
                              const struct api_catalog *cat);

/* NestedEtcd / NestedAPIServer / NestedControllerManager:
 *   spec.replicas  <- 1 when 0
 *   spec.version   <- etcd: catalog etcd_version_for(control plane version);
 *                     others: the control plane's spec.version (canonical, no "v") */
int api_component_default(struct api_component *c, const struct api_control_plane *ncp,
                          const struct api_catalog *cat);

/* NestedCluster: spec.controlPlaneEndpoint <- the Cluster's when absent. */
int api_nested_cluster_default(struct api_nested_cluster *nc, const struct api_capi_cluster *cl);

/* The feature gates a component runs with: the control plane's spec.featureGates overridden
 * gate by gate by the component's own. *ret (zeroed by the caller) is filled; free it with
 * api_gates_done. Returns 0 or -ENOMEM. */
int api_component_effective_gates(const struct api_component *c,
                                  const struct api_control_plane *ncp, struct api_gates *ret);

#endif
