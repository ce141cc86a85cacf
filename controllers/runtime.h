#ifndef NESTCP_CONTROLLERS_RUNTIME_H
#define NESTCP_CONTROLLERS_RUNTIME_H

/*
 * The controller runtime: shared informers, one workqueue per controller, and the executor that
 * carries out the plans reconcilers return (controllers/plan.h), all on one libev loop.
 *
 *   manager_new -> manager_add_controller (x5) -> manager_start -> ev_run ... -> manager_stop
 *
 * Reconcilers see the caches only through struct cache_view: read-only stores, the same ones
 * unit tests fill by hand (kube_store_put) to test reconcilers without a server.
 */

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "controllers/plan.h"
#include "lib/kube/client.h"
#include "lib/kube/store.h"
#include "lib/util/err.h"

struct ev_loop;
struct manager;

/* Every resource nestcp reads, as the caches hold it. Stores are borrowed. */
struct cache_view {
    const struct kube_store *control_planes;      /* NestedControlPlane */
    const struct kube_store *etcds;               /* NestedEtcd */
    const struct kube_store *apiservers;          /* NestedAPIServer */
    const struct kube_store *controller_managers; /* NestedControllerManager */
    const struct kube_store *nested_clusters;     /* NestedCluster */
    const struct kube_store *clusters;            /* Cluster API Cluster (empty if no CRD) */
    const struct kube_store *secrets;             /* label cluster.x-k8s.io/cluster-name */
    const struct kube_store *services;            /* label app.kubernetes.io/managed-by=nestcp */
    const struct kube_store *statefulsets;        /* label app.kubernetes.io/managed-by=nestcp */
    double now;                                   /* wall clock, seconds since the epoch */
};

typedef void (*enqueue_fn)(void *q, const char *ns, const char *name);

struct controller_def {
    const char *name; /* "nestedetcd": log field and metrics label */
    const struct kube_resource *primary;
    /* Builds the plan for primary ns/name from view. Returns 0, or a negative code with a
     * message in e (the runtime logs it and retries the key with backoff; the plan is dropped).
     * A primary that no longer exists gives an empty plan. */
    int (*reconcile)(void *ctx, const struct cache_view *view, const char *ns, const char *name,
                     struct plan *plan, struct err *e);
    /* For a change (add, update or delete) of obj, of type res, calls enqueue for every primary
     * key it concerns — for the primary type itself, its own key. May be NULL: then changes of
     * the primary type enqueue themselves, and changes of objects whose controller
     * ownerReference is of the primary kind enqueue their owner. */
    void (*map)(void *ctx, const struct cache_view *view, const struct kube_resource *res,
                const cJSON *obj, enqueue_fn enqueue, void *q);
    void *ctx;
    int concurrency; /* keys reconciled at once; 0: the manager's default */
};

/* Nestcp's own resources. */
extern const struct kube_resource NESTCP_CONTROL_PLANES;
extern const struct kube_resource NESTCP_ETCDS;
extern const struct kube_resource NESTCP_APISERVERS;
extern const struct kube_resource NESTCP_CONTROLLER_MANAGERS;
extern const struct kube_resource NESTCP_NESTED_CLUSTERS;
extern const struct kube_resource CAPI_CLUSTERS;

#endif
