#ifndef NESTCP_CONTROLLERS_CACHES_H
#define NESTCP_CONTROLLERS_CACHES_H

/*
 * What nestcp's manager (lib/ctrl/manager.h) caches, and how reconcilers see it: nestcp's own
 * resources, the table of shared caches (each with the label selector it lists by and what
 * controllers/cachekeep.h keeps of its objects), and struct cache_view, a named store per
 * cache, which reconcilers read and unit tests fill by hand (kube_store_put) to test
 * reconcilers without a server.
 *
 *   caches_manager_opts -> manager_new -> caches_add_reconciler (xN) -> manager_start ...
 */

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "lib/ctrl/manager.h"
#include "lib/ctrl/plan.h"
#include "lib/kube/client.h"
#include "lib/kube/store.h"
#include "lib/util/err.h"
#include "lib/util/strmap.h"

/* Nestcp's own resources. */
extern const struct kube_resource NESTCP_CONTROL_PLANES;
extern const struct kube_resource NESTCP_ETCDS;
extern const struct kube_resource NESTCP_APISERVERS;
extern const struct kube_resource NESTCP_CONTROLLER_MANAGERS;
extern const struct kube_resource NESTCP_NESTED_CLUSTERS;
extern const struct kube_resource CAPI_CLUSTERS;

/* The label selectors of the shared caches of Secrets, and of the objects packages render
 * (Services, StatefulSets, ConfigMaps, NetworkPolicies). */
#define MANAGER_SECRET_SELECTOR "cluster.x-k8s.io/cluster-name"
#define MANAGER_OWNED_SELECTOR "app.kubernetes.io/managed-by=nestcp"
/* The pods of tenants' control planes (etcd membership, the health of a roll), and the etcd
 * members' PersistentVolumeClaims (whose labels are the StatefulSet's selector, made before
 * nestcp labelled claims itself). */
#define MANAGER_POD_SELECTOR "app.kubernetes.io/managed-by=nestcp"
#define MANAGER_CLAIM_SELECTOR "app.kubernetes.io/component=etcd,cluster.x-k8s.io/cluster-name"
/* The Lease of leader election. */
#define MANAGER_LEASE_NAME "nestcp-manager"
/* The Lease's namespace outside a pod, when it exists (else "default"). */
#define MANAGER_LEASE_NAMESPACE "nestcp-system"
/* The source of nestcp's Events, the field manager of its writes, the prefix of its metrics. */
#define NESTCP_COMPONENT "nestcp"

/* Every resource nestcp reads, as the caches hold it. Stores are borrowed. */
struct cache_view {
    const struct kube_store *control_planes;      /* NestedControlPlane */
    const struct kube_store *etcds;               /* NestedEtcd */
    const struct kube_store *apiservers;          /* NestedAPIServer */
    const struct kube_store *controller_managers; /* NestedControllerManager */
    const struct kube_store *nested_clusters;     /* NestedCluster */
    const struct kube_store *clusters;            /* Cluster API Cluster (empty if no CRD) */
    /* Each cache holds what controllers/cachekeep.h keeps of its objects. */
    const struct kube_store *secrets;         /* label cluster.x-k8s.io/cluster-name, and
                                               * only nestcp's or named like them */
    const struct kube_store *services;        /* label app.kubernetes.io/managed-by=nestcp */
    const struct kube_store *statefulsets;    /* label app.kubernetes.io/managed-by=nestcp */
    const struct kube_store *pods;            /* control-plane pods: MANAGER_POD_SELECTOR */
    const struct kube_store *claims;          /* their claims: MANAGER_CLAIM_SELECTOR */
    const struct kube_store *configmaps;      /* label app.kubernetes.io/managed-by=nestcp */
    const struct kube_store *networkpolicies; /* label app.kubernetes.io/managed-by=nestcp */
    const struct kube_store *jobs;            /* etcd snapshots (controllers/snapshot.h) */
    double now;                               /* wall clock, seconds since the epoch */
    /* Objects of a name nestcp would write that someone else controls, found by a
     * plan_apply_claimed; read with cache_view_conflict. NULL: none. */
    const struct strmap *conflicts;
    /* Objects a plan_create_else_read found existing, read live; see cache_view_found. */
    const struct strmap *found;
    /* Reconciled objects whose last plan had a write rejected; see cache_view_rejected. */
    const struct strmap *rejected;
};

/* Seconds a conflict found by plan_apply_claimed is remembered before the object is read
 * again. */
#define CACHE_VIEW_CONFLICT_TTL CTRL_NOTE_TTL

/* The named view of the manager's generic one (whose stores follow caches_manager_opts'
 * table); a store the view lacks is NULL. */
void cache_view_of(const struct ctrl_view *view, struct cache_view *ret_view);

/* The caches of m now, named; the stores are borrowed until control returns to the loop. */
void cache_view_get(const struct manager *m, struct cache_view *ret_view);

/* Why res ns/name may not be written (an object of that name exists and is controlled by
 * someone else: "Service ns1/c-apiserver exists and its controller is ..."), found within
 * CACHE_VIEW_CONFLICT_TTL of view->now; NULL when no conflict is known. */
const char *cache_view_conflict(const struct cache_view *view, const struct kube_resource *res,
                                const char *ns, const char *name);

/* Why the last plan of the reconciled object res ns/name failed on a write the API server
 * (or the manager's own rules) rejected (400, 403, 404, 422: "apply of StatefulSet ns/x
 * rejected: ..."), until a plan of it succeeds; NULL when none did. Reconcilers show it as
 * their Ready condition: the runtime still writes the plan's status when a write before it was
 * rejected. */
const char *cache_view_rejected(const struct cache_view *view, const struct kube_resource *res,
                                const char *ns, const char *name);

/* res ns/name as read live after a plan_create_else_read found it existing, within
 * CACHE_VIEW_CONFLICT_TTL of view->now; NULL when none was. */
const cJSON *cache_view_found(const struct cache_view *view, const struct kube_resource *res,
                              const char *ns, const char *name);

/* A controller as nestcp's reconcilers define one: struct controller_def, with the named
 * view. */
struct reconciler_def {
    const char *name; /* "nestedetcd": log field and metrics label */
    const struct kube_resource *primary;
    int (*reconcile)(void *ctx, const struct cache_view *view, const char *ns, const char *name,
                     struct plan *plan, struct err *e);
    void (*map)(void *ctx, const struct cache_view *view, const struct kube_resource *res,
                const cJSON *obj, enqueue_fn enqueue, void *q);
    void (*seed)(void *ctx, enqueue_fn enqueue, void *q);
    void *ctx;
    int concurrency;
};

/* Fills in, where unset, what nestcp's manager is made of: the cache table, the refusal of
 * what controllers/access.h does not list, its names (NESTCP_COMPONENT) and its Lease
 * (MANAGER_LEASE_NAME, in MANAGER_LEASE_NAMESPACE outside a pod). */
void caches_manager_opts(struct manager_opts *opts);

/* Adds def to m (see manager_add_controller); def is borrowed and must outlive m. */
int caches_add_reconciler(struct manager *m, const struct reconciler_def *def, struct err *e);

/* The i-th resource the manager caches (lists and watches), or NULL past the last. */
const struct kube_resource *caches_resource(size_t i);

#endif
