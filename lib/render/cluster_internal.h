#ifndef NESTCP_RENDER_CLUSTER_INTERNAL_H
#define NESTCP_RENDER_CLUSTER_INTERNAL_H

/* What lib/render/cluster*.c share; not for other modules. */

#include "lib/render/cluster.h"

struct render_cluster_part {
    struct api_component *obj; /* NULL when missing */
    char *api_version;         /* of the object as read (for owner references) */
    char *missing;             /* why obj is NULL */
    char version[RENDER_VERSION_MAX];
    const struct render_package *pkg;
    struct api_gates gates; /* effective */
};

struct render_cluster {
    const struct render_catalog *cat;
    char *name; /* cluster name */
    char *ns;
    struct api_control_plane *ncp;
    char *ncp_api_version;
    struct api_capi_cluster *capi;
    struct api_nested_cluster *nc;
    struct render_cluster_part parts[RENDER_PART__COUNT];
    render_key_fn key_fn; /* NULL: pki_key_generate */
    void *key_ctx;
    int64_t renew_before;                 /* seconds; 0: renewBeforeDays */
    int64_t leaf_validity;                /* seconds; 0: validityDays */
    const struct render_check_memo *memo; /* NULL: every check runs */
    bool etcd_storage_kept;     /* spec.storage unset, the etcd StatefulSet runs on emptyDir */
    bool allow_privileged;      /* the admin lets patches and flags pass the privilege rules */
    char manager_namespace[64]; /* where the manager's pods run (NetworkPolicy peers) */
    char skew[1600];            /* why the resolved versions break the version skew policy, or "" */
};

/* "<Kind> <ns>/<name>" for messages. */
void render_cluster_what(enum api_kind kind, const char *ns, const char *name, char *out,
                         size_t size);

/* Adds {apiVersion, kind, name, uid, controller, blockOwnerDeletion} to obj's
 * metadata.ownerReferences when uid is known. Returns 0 or -ENOMEM. */
int render_cluster_set_owner(cJSON *obj, const char *api_version, enum api_kind kind,
                             const struct api_meta *meta);

/* metadata.<field> of obj as a string, or NULL. */
const char *render_cluster_meta_str(const cJSON *obj, const char *field);

/* The NestedControlPlane's reference to a component: "spec.etcd", ... */
const char *render_cluster_ref_path(enum render_part part);

/* "Cluster", or the kind's name. */
const char *render_cluster_kind_name(enum api_kind kind);

/* Appends every line of local to errs as "<what>: <line>", skipping lines errs already has. */
void render_cluster_merge_errors(struct api_errors *errs, const struct api_errors *local,
                                 const char *what);

/* ---- lib/render/cluster_find.c: a control plane's objects ---- */

/* apiVersion of obj, copied; NULL when it has none or out of memory. */
char *render_cluster_dup_api_version(const cJSON *obj);

/* The Cluster of the control plane, parsed into rc->capi (or none). Returns 0, -EINVAL (an
 * error in errs), -ENOMEM. */
int render_cluster_find_capi_cluster(struct render_cluster *rc, const struct render_source *src,
                                     const cJSON *ncp_json, const char *what,
                                     struct api_errors *errs);

/* The NestedCluster of the Cluster's infrastructureRef, parsed into rc->nc (or none). */
int render_cluster_find_nested_cluster(struct render_cluster *rc, const struct render_source *src,
                                       struct api_errors *errs);

/* Finds and parses each component into rc->parts (a missing one says why in its part). */
int render_cluster_find_components(struct render_cluster *rc, const struct render_source *src,
                                   const cJSON *ncp_json, struct api_errors *errs);

#endif
