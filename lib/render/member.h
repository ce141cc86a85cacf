#ifndef NESTCP_RENDER_MEMBER_H
#define NESTCP_RENDER_MEMBER_H

/*
 * Which objects belong to which tenant cluster: the one rule that `nestcp render` (through
 * render_cluster_resolve) and the controllers (through controllers/lookup.h, which also decides
 * what a change of any object concerns) both follow, over a struct render_source.
 *
 *   Cluster API Cluster    of a NestedControlPlane or NestedCluster: its ownerReference of
 *                          kind Cluster (group cluster.x-k8s.io), else the Cluster in the same
 *                          namespace whose spec.controlPlaneRef / spec.infrastructureRef names
 *                          it (Cluster API's controllers need not be installed), else none (a
 *                          standalone control plane);
 *   cluster name           the Cluster's name, else the label cluster.x-k8s.io/cluster-name,
 *                          else the object's own name;
 *   components             the one named by the control plane's spec.etcd / spec.apiserver /
 *                          spec.controllerManager in its namespace; where the spec names none,
 *                          the one object of the kind in the namespace that the control plane
 *                          controls (ownerReference) or that carries its cluster name label;
 *   a component's control plane: its controller ownerReference, else the control plane whose
 *                          spec names it, else the control plane of its cluster-name label
 *                          when that control plane names no component of this kind.
 *
 * References: a Cluster's v1beta1 references name the group in apiVersion, its v1beta2 ones
 * in apiGroup (and have no namespace); either must be the kind's group. A reference with
 * neither matches by kind alone (CAPN's samples leave apiVersion out), and one without
 * namespace is in the referring object's namespace. An ownerReference of kind Cluster may
 * carry any version of cluster.x-k8s.io (Cluster API 1.14 writes v1beta2).
 *
 * Pure functions of the source; every object returned is borrowed from it.
 */

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "api/kinds.h"
#include "lib/render/cluster.h"

/* The label that carries a cluster's name on every object of it. */
#define MEMBER_CLUSTER_NAME_LABEL "cluster.x-k8s.io/cluster-name"

/* The keys member_index_keys gives an object: what the lookups below search a namespace by. */
enum member_key {
    MEMBER_KEY_CONTROL_PLANE_REF,  /* a Cluster's spec.controlPlaneRef.name */
    MEMBER_KEY_INFRASTRUCTURE_REF, /* a Cluster's spec.infrastructureRef.name */
    MEMBER_KEY_CONTROLLER,         /* a component's controller NestedControlPlane's name */
    MEMBER_KEY_CLUSTER_LABEL,      /* a component's cluster-name label */
    MEMBER_KEY_PART_REF,           /* a control plane's spec.etcd / spec.apiserver /
                                    * spec.controllerManager name: MEMBER_KEY_PART_REF + part */
    MEMBER_KEY_OWNER_CLUSTER =
        MEMBER_KEY_PART_REF + RENDER_PART__COUNT, /* a control plane's
                                                   * member_owner_cluster_name */
    MEMBER_KEY_STANDALONE_NAME, /* a control plane's or NestedCluster's cluster name should
                                 * it have no Cluster: its label, else its name */
    MEMBER_KEY__COUNT
};

/* The most keys member_index_keys gives one object. */
#define MEMBER_INDEX_KEYS_MAX 5

/* Writes the keys of obj, an object of kind (a nestcp kind or API_KIND_CLUSTER), to keys (room
 * for MEMBER_INDEX_KEYS_MAX) and returns how many; each value is borrowed from obj. A source
 * that files objects under these keys can serve render_source.each_keyed. */
size_t member_index_keys(enum api_kind kind, const cJSON *obj, struct render_key *keys);

/* The kind of a nestcp object or Cluster from its apiVersion and kind; -ENOENT otherwise. */
int member_kind_of(const cJSON *obj, enum api_kind *ret_kind);

/* The part of a component kind; -EINVAL for another kind. */
int member_part_of_kind(enum api_kind kind, enum render_part *ret_part);

/* True when obj carries a controller ownerReference to an object of kind (any version of its
 * group); *ret_name (may be NULL) gets the owner's name (borrowed). */
bool member_controlled_by_kind(const cJSON *obj, enum api_kind kind, const char **ret_name);

/* True when obj's controller ownerReference has uid. */
bool member_controlled_by_uid(const cJSON *obj, const char *uid);

/* The name in obj's ownerReference (controller or not) of kind Cluster, or NULL. */
const char *member_owner_cluster_name(const cJSON *obj);

/* The Cluster API Cluster of a NestedControlPlane (kind API_KIND_NESTED_CONTROL_PLANE) or
 * NestedCluster (API_KIND_NESTED_CLUSTER), or NULL. *ret_by_owner (may be NULL) tells whether
 * an ownerReference named it; such a Cluster may be missing from the source (NULL).
 * *ret_count (may be NULL) gets how many Clusters name obj when no ownerReference does; more
 * than one is an error render reports, and the first is returned. */
const cJSON *member_capi_cluster(const struct render_source *src, const cJSON *obj,
                                 enum api_kind kind, bool *ret_by_owner, int *ret_count);

/* The cluster name of a NestedControlPlane or NestedCluster (borrowed). */
const char *member_cluster_name(const struct render_source *src, const cJSON *obj,
                                enum api_kind kind);

/* The component of part that belongs to the control plane ncp, or NULL. *ret_count (may be
 * NULL) gets how many objects matched when the spec names none (more than one: NULL). */
const cJSON *member_component(const struct render_source *src, const cJSON *ncp,
                              enum render_part part, int *ret_count);

/* The control plane a component object of part belongs to, or NULL. */
const cJSON *member_control_plane_of_component(const struct render_source *src,
                                               const cJSON *component, enum render_part part);

/* The control plane of a NestedCluster: through its Cluster's spec.controlPlaneRef, or, with
 * no Cluster, the control plane in its namespace with the same cluster name. */
const cJSON *member_control_plane_of_nested_cluster(const struct render_source *src,
                                                    const cJSON *nc);

/* The NestedCluster of a control plane: its Cluster's spec.infrastructureRef, or, with no
 * Cluster, the NestedCluster in its namespace with the same cluster name. NULL if none. */
const cJSON *member_nested_cluster_of_control_plane(const struct render_source *src,
                                                    const cJSON *ncp);

/* The control plane of a cluster name in ns: through the Cluster of that name, else the
 * standalone one. NULL if none. */
const cJSON *member_control_plane_of_cluster_name(const struct render_source *src, const char *ns,
                                                  const char *cluster_name);

/* Calls fn for each control plane a Cluster concerns: the one its controlPlaneRef names, and
 * any that name it as their owner. */
void member_control_planes_of_cluster(const struct render_source *src, const cJSON *cl,
                                      void (*fn)(void *userdata, const cJSON *ncp), void *userdata);

#endif
