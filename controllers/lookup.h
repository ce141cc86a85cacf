#ifndef NESTCP_CONTROLLERS_LOOKUP_H
#define NESTCP_CONTROLLERS_LOOKUP_H

/*
 * A tenant cluster's objects in the caches (struct cache_view): which control plane, Cluster,
 * NestedCluster and components belong together, by the rule of lib/render/member.h that
 * `nestcp render` follows too, and which control planes a change of any cached object
 * concerns (the map functions that decide what to reconcile).
 *
 * Pure functions of the view; every object returned is borrowed from it and valid until
 * control returns to the event loop.
 */

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "api/kinds.h"
#include "controllers/caches.h"
#include "lib/kube/store.h"
#include "lib/render/cluster.h"
#include "lib/render/member.h"

/* A render_source (lib/render/cluster.h) over the caches of view (borrowed). */
void lookup_source(const struct cache_view *view, struct render_source *ret_src);

/* The index functions of the caches of control planes, NestedClusters, Clusters and the
 * component kinds (kube_store_index_fn): member_index_keys, and for control planes also
 * LOOKUP_KEY_CLAIM, the cluster name each claims (lookup_claimed_name). They let the lookups
 * below, and lookup_each_claimant, find one cluster's objects without walking a namespace. */
#define LOOKUP_KEY_CLAIM MEMBER_KEY__COUNT
size_t lookup_index_control_plane(const cJSON *obj, struct kube_store_index_key *keys);
size_t lookup_index_nested_cluster(const cJSON *obj, struct kube_store_index_key *keys);
size_t lookup_index_cluster(const cJSON *obj, struct kube_store_index_key *keys);
size_t lookup_index_component(const cJSON *obj, struct kube_store_index_key *keys);

/* The cluster name a control plane claims, the way render_cluster_resolve names it: its
 * Cluster's (an ownerReference of kind Cluster), else its cluster-name label, else its name. */
const char *lookup_claimed_name(const cJSON *ncp);

/* Calls fn, until it returns false, with every control plane of ns that claims cluster_name
 * (and, from a store without the index, every other of ns: fn checks), in the order of
 * kube_store_foreach_in_namespace. */
void lookup_each_claimant(const struct cache_view *view, const char *ns, const char *cluster_name,
                          kube_store_each_fn fn, void *userdata);

/* The store that caches kind (a nestcp kind or API_KIND_CLUSTER), or NULL. */
const struct kube_store *lookup_store(const struct cache_view *view, enum api_kind kind);

/* The kind of a nestcp object or Cluster from its apiVersion and kind; -ENOENT otherwise. */
int lookup_kind_of(const cJSON *obj, enum api_kind *ret_kind);

/* The Cluster API Cluster of a NestedControlPlane (kind API_KIND_NESTED_CONTROL_PLANE) or
 * NestedCluster (API_KIND_NESTED_CLUSTER), or NULL. *ret_by_owner (may be NULL) tells whether
 * an ownerReference named it; such a Cluster may be missing from the cache (NULL). */
const cJSON *lookup_capi_cluster(const struct cache_view *view, const cJSON *obj,
                                 enum api_kind kind, bool *ret_by_owner);

/* The cluster name of a NestedControlPlane or NestedCluster (borrowed from the view). */
const char *lookup_cluster_name(const struct cache_view *view, const cJSON *obj,
                                enum api_kind kind);

/* The component of part that belongs to the control plane (member_component), or NULL. */
const cJSON *lookup_component(const struct cache_view *view, const cJSON *ncp,
                              enum render_part part);

/* The part of a component kind; -EINVAL for another kind. */
int lookup_part_of_kind(enum api_kind kind, enum render_part *ret_part);

/* The control plane of a component object (member_control_plane_of_component), or NULL. */
const cJSON *lookup_control_plane_of_component(const struct cache_view *view,
                                               const cJSON *component, enum render_part part);

/* The control plane of a NestedCluster: through its Cluster's spec.controlPlaneRef, or, with
 * no Cluster, the control plane in its namespace with the same cluster name. */
const cJSON *lookup_control_plane_of_nested_cluster(const struct cache_view *view, const cJSON *nc);

/* The NestedCluster of a control plane: its Cluster's spec.infrastructureRef, or, with no
 * Cluster, the NestedCluster in its namespace with the same cluster name. NULL if none. */
const cJSON *lookup_nested_cluster_of_control_plane(const struct cache_view *view,
                                                    const cJSON *ncp);

/* Calls fn(userdata, ncp) for every control plane whose reconcile depends on obj, an object
 * of type res that was added, changed or deleted: the control plane itself; for a component,
 * its control plane; for a Cluster or NestedCluster, the control plane it belongs to; for a
 * Secret, StatefulSet or Service, the control plane of its controller owner (a control plane
 * or a component), else for a Secret labelled cluster.x-k8s.io/cluster-name (e.g. a CA a user
 * supplied) the control plane of that cluster name. */
void lookup_control_planes_for(const struct cache_view *view, const struct kube_resource *res,
                               const cJSON *obj, void (*fn)(void *userdata, const cJSON *ncp),
                               void *userdata);

/* True when obj carries a controller ownerReference to an object of kind (any version of its
 * group); *ret_name (may be NULL) gets the owner's name (borrowed). */
bool lookup_controlled_by_kind(const cJSON *obj, enum api_kind kind, const char **ret_name);

/* True when obj's controller ownerReference has uid. */
bool lookup_controlled_by_uid(const cJSON *obj, const char *uid);

#endif
