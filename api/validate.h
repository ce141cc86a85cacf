#ifndef NESTCP_API_VALIDATE_H
#define NESTCP_API_VALIDATE_H

/*
 * Validation of parsed (and defaulted) objects. Every function collects all the problems it
 * finds into errs, one line each with the field path and the bad value:
 *
 *     spec.clusterNetwork.services.cidrBlocks[0]: "10.96.0.0/33" is not a valid CIDR
 *
 * and returns 0 when it found none, -EINVAL when it appended any, -ENOMEM when out of memory.
 * The catalog may be NULL: checks against the installed packages are then skipped.
 */

#include "api/catalog.h"
#include "api/errors.h"
#include "api/types.h"

/* Longest cluster name: "<cluster>-controller-manager" plus "-" and a 10-character revision
 * hash is the StatefulSet's controller-revision-hash label, which must fit in 63 characters. */
#define API_CLUSTER_NAME_MAX 33

/* The cluster name every derived object is named after: a DNS-1035 label (Service names) of at
 * most API_CLUSTER_NAME_MAX characters. path names where it came from ("metadata.name"). */
int api_cluster_name_validate(const char *name, const char *path, struct api_errors *errs);

/* A semver-ish version: "1.20.2" or "v1.20.2" (pre-release and build suffixes allowed). */
int api_version_validate(const char *version, const char *path, struct api_errors *errs);

/* spec.clusterNetwork: CIDR syntax, host bits, one block per family, service range size
 * (16 .. 2^20 addresses), no overlap between services and pods, serviceDomain syntax. */
int api_cluster_network_validate(const struct api_cluster_network *net, const char *path,
                                 struct api_errors *errs);

/* Feature-gate names (syntax, and against the catalog for k8s_version when both are given). */
int api_feature_gates_validate(const struct api_gates *gates, const char *k8s_version,
                               const struct api_catalog *cat, const char *path,
                               struct api_errors *errs);

/* A whole NestedControlPlane (after api_control_plane_default): cluster name, version,
 * endpoint, network, feature gates, certificates, component references. */
int api_control_plane_validate(const struct api_control_plane *ncp, const struct api_catalog *cat,
                               struct api_errors *errs);

/* A component (after api_component_default). Its own spec.version must be a known version; its
 * feature gates are checked against that version, else against the version ncp (when given)
 * supplies. */
int api_component_validate(const struct api_component *c, const struct api_control_plane *ncp,
                           const struct api_catalog *cat, struct api_errors *errs);

int api_nested_cluster_validate(const struct api_nested_cluster *nc, struct api_errors *errs);

/* Syntax helpers, true when s is valid. */
bool api_is_dns1123_label(const char *s);
bool api_is_dns1123_subdomain(const char *s);
bool api_is_dns1035_label(const char *s);

#endif
