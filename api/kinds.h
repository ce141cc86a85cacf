#ifndef NESTCP_API_KINDS_H
#define NESTCP_API_KINDS_H

/*
 * The kinds nestcp serves, and Cluster API's Cluster which it reads. Each kind's metadata and
 * schema are data in api/kinds.c (the component kinds' schemas in api/kinds_component.c,
 * NestedControlPlane's in api/kinds_ncp.c); the CRDs under config/crd/ are generated from them
 * (hack/gen-crds.sh).
 *
 * Every nestcp kind is served as v1alpha4 (so CAPN manifests apply unchanged) and v1beta1 (the
 * storage version). The schemas of the two versions are identical, so no conversion webhook is
 * needed: the apiserver only rewrites apiVersion.
 */

#include <stdbool.h>

#include "api/schema.h"

#define API_GROUP_INFRASTRUCTURE "infrastructure.cluster.x-k8s.io"
#define API_GROUP_CONTROLPLANE "controlplane.cluster.x-k8s.io"
#define API_GROUP_CLUSTER "cluster.x-k8s.io"
#define API_VERSION_STORAGE "v1beta1"
#define API_VERSION_CAPN "v1alpha4"

enum api_kind {
    API_KIND_NESTED_CLUSTER = 0,
    API_KIND_NESTED_CONTROL_PLANE,
    API_KIND_NESTED_ETCD,
    API_KIND_NESTED_APISERVER,
    API_KIND_NESTED_CONTROLLER_MANAGER,
    API_KIND_CLUSTER, /* Cluster API's Cluster: read only; its CRD exists for tests */
    API_KIND_COUNT,
};

struct api_printer_column {
    const char *name;
    const char *type; /* string, integer, boolean, date */
    const char *json_path;
    const char *description;
    int priority; /* 0: shown by default; 1: only with -o wide */
};

struct api_kind_info {
    enum api_kind kind;
    const char *name; /* "NestedControlPlane" */
    const char *group;
    const char *plural, *singular, *list_kind;
    const char *const *short_names; /* NULL-terminated */
    const char *const *categories;  /* NULL-terminated */
    const char *const *versions;    /* served, oldest first, NULL-terminated */
    const char *storage_version;
    const char *description;
    const struct api_schema *spec;            /* the `spec` property */
    const struct api_schema *status;          /* the `status` property */
    const struct api_printer_column *columns; /* ended by a NULL name */
    bool contract_labels;                     /* carries the cluster.x-k8s.io/<contract> labels */
};

/* The versions every nestcp kind serves: {"v1alpha4", "v1beta1", NULL}. */
extern const char *const api_served_versions[];

/* The versions of Cluster API's Cluster nestcp reads, newest first: {"v1beta2", "v1beta1",
 * NULL}. It reads the first one the server serves: Cluster API 1.11 and later store Clusters as
 * v1beta2 and serve v1beta1 only through their conversion webhook, so reading v1beta2 needs no
 * webhook; the stand-in CRD (config/crd/capi) serves v1beta1. api_capi_cluster_from_json
 * parses both. */
extern const char *const api_capi_cluster_versions[];

/* Info for k (k < API_KIND_COUNT); never NULL. */
const struct api_kind_info *api_kind_info(enum api_kind k);

/* The kind an object's apiVersion and kind name, if it is one of ours in a served version (or
 * a Cluster API Cluster in any version). Returns 0, or -ENOENT when the group/kind is unknown,
 * or -EPROTONOSUPPORT when the group and kind are known but the version is not served. */
int api_kind_lookup(const char *api_version, const char *kind, enum api_kind *ret);

/* The Cluster API contract labels every nestcp CRD carries (reliability notes §3.1): key
 * "cluster.x-k8s.io/<contract>", value the CRD versions for that contract, joined with '_'.
 * Ended by a NULL key. */
struct api_contract_label {
    const char *key, *value;
};
extern const struct api_contract_label api_contract_labels[];

#endif
