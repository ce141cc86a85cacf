#ifndef NESTCP_CMD_MGMT_H
#define NESTCP_CMD_MGMT_H

/*
 * The management cluster, for the one-shot commands (`nestcp get kubeconfig`, `nestcp
 * describe`): the kubeconfig loaded as the manager loads it (--kubeconfig, else $KUBECONFIG,
 * else ~/.kube/config, else the in-cluster service account; TLS always verified), a
 * lib/kube client on a loop of its own, and requests that run that loop until they complete.
 */

#include <cjson/cJSON.h>

#include "lib/util/err.h"

struct ev_loop;
struct kube_client;
struct kube_config;
struct kube_resource;

/* Seconds one request may take before it fails with -ETIMEDOUT. */
#define MGMT_REQUEST_TIMEOUT_MS 30000

struct mgmt {
    struct ev_loop *loop;
    struct kube_config *cfg;
    struct kube_client *client;
    const char *namespace_; /* the -n flag, else the kubeconfig context's; borrowed */
    /* Cluster API's Cluster at the version read (mgmt_resource): 0 before it is looked up,
     * 1 once found, -ENOENT when no version is served. */
    int clusters_found;
    struct kube_resource *clusters;
};

/* Connects to the management cluster with the kubeconfig at path (NULL or "": the usual
 * order). ns NULL or "" takes the context's namespace. Returns 0, or the loader's code with a
 * message in e naming the file. mgmt_close frees what it opened, also after a failure. */
int mgmt_open(struct mgmt *m, const char *path, const char *ns, struct err *e);
void mgmt_close(struct mgmt *m);

/* The resource to send requests for res to: for Cluster API's Cluster, at the newest of
 * api_capi_cluster_versions the server serves, as the manager's cache reads it (looked up at
 * the first call by listing one Cluster in ns at each version, newest first; a 404 moves on);
 * any other resource as it is. Returns 0 with *ret_res (borrowed from m or the caller),
 * -ENOENT when no version of Cluster is served, or the client's code with its message in e. */
int mgmt_resource(struct mgmt *m, const struct kube_resource *res, const char *ns,
                  const struct kube_resource **ret_res, struct err *e);

/* GET ns/name of res (ns ignored for cluster-scoped kinds), at mgmt_resource's version.
 * Returns 0 with the object in
 * *ret_obj (caller frees), or the client's code (-ENOENT for NotFound, ...) with its message
 * in e. */
int mgmt_get(struct mgmt *m, const struct kube_resource *res, const char *ns, const char *name,
             cJSON **ret_obj, struct err *e);

/* LIST res in ns (label_selector may be NULL), at mgmt_resource's version. Returns 0 with the List
 * in *ret_list (caller frees; its `items` may be empty), or the client's code with its message in
 * e. */
int mgmt_list(struct mgmt *m, const struct kube_resource *res, const char *ns,
              const char *label_selector, cJSON **ret_list, struct err *e);

/* The Cluster API Cluster of a NestedControlPlane, as controllers/lookup.h finds it: the one
 * its ownerReference of kind Cluster names, else the one in its namespace whose
 * spec.controlPlaneRef names it. Returns 0 with *ret_cluster (caller frees) or NULL when there
 * is none (also when Cluster API's CRD is not installed), or the client's code. */
int mgmt_cluster_of(struct mgmt *m, const cJSON *ncp, cJSON **ret_cluster, struct err *e);

/* The cluster name of a control plane: its Cluster's name (cluster may be NULL), else its
 * label cluster.x-k8s.io/cluster-name, else its own name. Borrowed. */
const char *mgmt_cluster_name(const cJSON *ncp, const cJSON *cluster);

#endif
