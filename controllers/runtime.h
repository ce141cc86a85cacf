#ifndef NESTCP_CONTROLLERS_RUNTIME_H
#define NESTCP_CONTROLLERS_RUNTIME_H

/*
 * The controller runtime: shared informers, one workqueue per controller, and the executor that
 * carries out the plans reconcilers return (lib/ctrl/plan.h), all on one libev loop.
 *
 *   manager_new -> manager_add_controller (x5) -> manager_start -> ev_run ...
 *   -> manager_stop (graceful; its callback ends the loop) -> manager_free
 *
 * A reconcile error, or a failed action, retries the key with exponential backoff; a 409
 * Conflict, or AlreadyExists on a create, requeues it rate-limited and is counted as result
 * "requeue" rather than "error"; a DELETE answered 404 counts as done. Metrics are named as
 * controller-runtime's (controller_runtime_reconcile_total{controller,result}, workqueue_*),
 * plus nestcp_* for the API client, the caches and Events.
 *
 * Reconcilers see the caches only through struct cache_view: read-only stores, the same ones
 * unit tests fill by hand (kube_store_put) to test reconcilers without a server.
 */

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "lib/ctrl/plan.h"
#include "lib/kube/client.h"
#include "lib/kube/events.h"
#include "lib/kube/store.h"
#include "lib/util/err.h"
#include "lib/util/strmap.h"

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
    /* Each cache holds what controllers/cachekeep.h keeps of its objects. */
    const struct kube_store *secrets;             /* label cluster.x-k8s.io/cluster-name, and
                                                   * only nestcp's or named like them */
    const struct kube_store *services;            /* label app.kubernetes.io/managed-by=nestcp */
    const struct kube_store *statefulsets;        /* label app.kubernetes.io/managed-by=nestcp */
    const struct kube_store *pods;                /* control-plane pods: MANAGER_POD_SELECTOR */
    const struct kube_store *claims;              /* their claims: MANAGER_CLAIM_SELECTOR */
    const struct kube_store *configmaps;          /* label app.kubernetes.io/managed-by=nestcp */
    const struct kube_store *networkpolicies;     /* label app.kubernetes.io/managed-by=nestcp */
    const struct kube_store *jobs;                /* etcd snapshots (controllers/snapshot.h) */
    double now;                                   /* wall clock, seconds since the epoch */
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
#define CACHE_VIEW_CONFLICT_TTL 30.0

/* Why res ns/name may not be written (an object of that name exists and is controlled by
 * someone else: "Service ns1/c-apiserver exists and its controller is ..."), found within
 * CACHE_VIEW_CONFLICT_TTL of view->now; NULL when no conflict is known. */
const char *cache_view_conflict(const struct cache_view *view, const struct kube_resource *res,
                                const char *ns, const char *name);

/* Remembers in map (conflicts or found) until `until` (wall clock) why and/or obj (taken) of
 * res ns/name, or forgets it when both are NULL. A hint for the next reconcile: out of memory,
 * nothing is remembered. Values are freed with cache_view_note_free. */
void cache_view_note(struct strmap *map, const struct kube_resource *res, const char *ns,
                     const char *name, const char *why, cJSON *obj, double until);
void cache_view_note_free(void *value);

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
    /* Calls enqueue for the keys to reconcile when the controller starts and at every
     * resync, instead of every object of the primary type (a key whose object may not exist).
     * May be NULL. */
    void (*seed)(void *ctx, enqueue_fn enqueue, void *q);
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

/* The namespace of the pod the manager runs in (its ServiceAccount's namespace file), into
 * out; false outside a pod. */
bool manager_pod_namespace(char *out, size_t size);

/* The i-th resource the manager caches (lists and watches), or NULL past the last. */
const struct kube_resource *manager_cached_resource(size_t i);

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

struct manager_opts {
    const char *namespace_; /* watch only this namespace; NULL: all */
    int concurrency;        /* keys each controller reconciles at once; 0: 4 */
    /* Leader election: informers run on every replica, workqueues only on the leader. */
    bool leader_elect;
    /* The Lease's namespace. NULL: the service account's namespace file in a pod, else
     * "nestcp-system" if that namespace exists, else "default". */
    const char *leader_election_namespace;
    const char *leader_election_id; /* NULL: MANAGER_LEASE_NAME */
    double lease_duration;          /* seconds; 0: 15 */
    double renew_deadline;          /* seconds; 0: 10 */
    double retry_period;            /* seconds; 0: 2 */
    /* Called on the loop when leadership is lost (code -ETIMEDOUT or -EBUSY). Every
     * workqueue has stopped by then; the process is expected to exit. */
    void (*on_lost_leadership)(void *userdata, int code);
    void *userdata;
    /* Bound on waiting for in-flight plans at manager_stop(), seconds; 0: 15. */
    double shutdown_timeout;
    /* Seconds between checks for the Cluster API Cluster CRD while it is absent; 0: 60. */
    double cluster_crd_retry;
    /* Seconds between reconciles of every object, changed or not (controller-runtime's
     * SyncPeriod); 0: 10 h. */
    double sync_period;
    /* Tests: send every plan action and Event through this hook instead of the client
     * (client may then be NULL: no informer runs and every cache stays empty). */
    kube_send_fn send;
    void *send_ctx;
};

/* Creates a manager on loop for client (both borrowed; they must outlive the manager).
 * opts may be NULL for the defaults; its strings are copied. Returns 0, -EINVAL (detail in e),
 * -ENOMEM. */
int manager_new(struct ev_loop *loop, struct kube_client *client, const struct manager_opts *opts,
                struct manager **ret_manager, struct err *e);

/* Adds a controller; def is copied, its strings and ctx are borrowed. Only before
 * manager_start(). Returns 0, -EINVAL (missing name, primary or reconcile; a name used twice;
 * started already), -ENOMEM. */
int manager_add_controller(struct manager *m, const struct controller_def *def, struct err *e);

/* Starts the informers (and leader election). Controllers begin to process keys once every
 * cache has synced and, under leader election, this replica leads; each begins with every
 * object of its primary type. Returns 0 or a negative code (detail in e). */
int manager_start(struct manager *m, struct err *e);

/* Graceful stop: stops handing out keys, waits (up to shutdown_timeout) for plans in flight,
 * then for Events in flight, then releases a held Lease; done (may be NULL) runs once on the
 * loop after that. Informers keep running until manager_free(). Returns 0 or -EALREADY. */
int manager_stop(struct manager *m, void (*done)(void *userdata), void *userdata);

/* Cancels whatever is still in flight and frees everything; does not release the Lease (see
 * manager_stop). Must not be called from a manager callback. Accepts NULL. */
void manager_free(struct manager *m);

/* Every cache has synced (the Cluster cache counts as synced while its CRD is absent). */
bool manager_synced(const struct manager *m);
/* Leading, or leader election is off. */
bool manager_leading(const struct manager *m);
/* Controllers are processing keys. */
bool manager_processing(const struct manager *m);

/* The caches now; the stores are borrowed until control returns to the loop. */
void manager_view(const struct manager *m, struct cache_view *ret_view);

/* Queues ns/name for the named controller (for tests and tools; reconcilers ask for a later
 * reconcile through plan_requeue_after). Returns 0, -ENOENT (no such controller), -EAGAIN (not
 * processing yet), -ENOMEM. */
int manager_enqueue(struct manager *m, const char *controller, const char *ns, const char *name);

/* The registry the manager exports its metrics to; reconcilers may add families (see
 * lib/ctrl/metrics.h). Borrowed for the manager's lifetime. */
struct metrics *manager_metrics(struct manager *m);

/* The event recorder (borrowed), for reconcilers that record outside a plan. */
struct kube_recorder *manager_recorder(struct manager *m);

/* The Lease's namespace and this replica's identity; NULL before they are known or without
 * leader election. */
const char *manager_lease_namespace(const struct manager *m);
const char *manager_identity(const struct manager *m);

#endif
