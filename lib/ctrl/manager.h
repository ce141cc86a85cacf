#ifndef NESTCP_CTRL_MANAGER_H
#define NESTCP_CTRL_MANAGER_H

/*
 * The controller runtime: shared caches (one informer each), one workqueue per controller, and
 * the executor that carries out the plans reconcilers return (lib/ctrl/plan.h), all on one
 * libev loop. It knows no kind of its own: the caller names the caches it wants
 * (struct ctrl_cache_spec) and the controllers that read them.
 *
 *   manager_new -> manager_add_controller (xN) -> manager_start -> ev_run ...
 *   -> manager_stop (graceful; its callback ends the loop) -> manager_free
 *
 * A reconcile error, or a failed action, retries the key with exponential backoff; a 409
 * Conflict, or AlreadyExists on a create, requeues it rate-limited and is counted as result
 * "requeue" rather than "error"; a DELETE answered 404 counts as done. Metrics are named as
 * controller-runtime's (controller_runtime_reconcile_total{controller,result}, workqueue_*),
 * plus <metrics_prefix>_* for the API client, the caches and Events.
 *
 * Reconcilers see the caches only through struct ctrl_view: read-only stores, in the order of
 * the cache table, the same ones unit tests fill by hand (kube_store_put) to test reconcilers
 * without a server.
 */

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "lib/ctrl/plan.h"
#include "lib/kube/client.h"
#include "lib/kube/events.h"
#include "lib/kube/store.h"
#include "lib/util/err.h"
#include "lib/util/strmap.h"

struct ev_loop;
struct manager;

/* One shared cache: every object of a resource (in the manager's namespace) that a label
 * selector selects, kept as a transform leaves it. */
struct ctrl_cache_spec {
    const struct kube_resource *resource;
    const char *selector; /* label selector; NULL: every object */
    /* The resource may not be served (its CRD absent): the manager lists it first, and while
     * the answer is 404 its cache stays empty and counts as synced. A 404 on the cache's own
     * list or watch (the CRD deleted) makes it so again: its objects leave the view as
     * deletions do, and the probes go on. */
    bool optional;
    /* What of each object is cached (kube_informer_opts.transform; ctx is NULL); NULL: all. */
    bool (*transform)(void *ctx, cJSON *obj);
    /* An optional cache's versions, newest first, NULL-terminated; NULL: resource->version
     * alone. The probe lists them in turn and the cache reads the first one served (a 404 moves
     * on to the next); while it reads an older one it looks for a newer every absent_retry and,
     * once one is served, fills a second informer at it and swaps when that one has synced. */
    const char *const *versions;
    /* The index of its store (kube_informer_opts.index); NULL: none. */
    kube_store_index_fn index;
};

/* The caches now. Stores and maps are borrowed until control returns to the loop. */
struct ctrl_view {
    const struct kube_store *const *stores; /* one per cache, in the order of the table */
    size_t n_stores;
    double now; /* wall clock, seconds since the epoch */
    /* Objects of a name the manager would write that someone else controls, found by a
     * plan_apply_claimed (see ctrl_note_why). */
    const struct strmap *conflicts;
    /* Objects a plan_create_else_read found existing, read live (see ctrl_note_object). */
    const struct strmap *found;
    /* Reconciled objects whose last plan had a write rejected (see ctrl_note_why). */
    const struct strmap *rejected;
};

/* Seconds a conflict found by plan_apply_claimed, or an object read by plan_create_else_read,
 * is remembered before the object is read again. */
#define CTRL_NOTE_TTL 30.0

/* Notes about objects: the maps of struct ctrl_view hold one per object res ns/name, with a
 * reason (conflicts: "Service ns1/c-apiserver exists and its controller is ..."; rejected:
 * "apply of StatefulSet ns/x was rejected: ...") or an object (found), until a wall-clock
 * time. */

/* The reason noted for res ns/name in notes, still valid at now; NULL when there is none. */
const char *ctrl_note_why(const struct strmap *notes, double now, const struct kube_resource *res,
                          const char *ns, const char *name);

/* Until when (wall clock) a note for res ns/name in notes is valid, if it is still valid at
 * now; 0 when there is none. */
double ctrl_note_until(const struct strmap *notes, double now, const struct kube_resource *res,
                       const char *ns, const char *name);

/* The object noted for res ns/name in notes, still valid at now; NULL when there is none. */
const cJSON *ctrl_note_object(const struct strmap *notes, double now,
                              const struct kube_resource *res, const char *ns, const char *name);

/* Notes in notes until `until` (wall clock) why and/or obj (taken) of res ns/name, or forgets
 * it when both are NULL. A hint for the next reconcile: out of memory, nothing is noted.
 * Values are freed with ctrl_note_free. */
void ctrl_note_put(struct strmap *notes, const struct kube_resource *res, const char *ns,
                   const char *name, const char *why, cJSON *obj, double until);
void ctrl_note_free(void *value);

typedef void (*enqueue_fn)(void *q, const char *ns, const char *name);

struct controller_def {
    const char *name;                    /* "nestedetcd": log field and metrics label */
    const struct kube_resource *primary; /* one of the caches */
    /* Builds the plan for primary ns/name from view. Returns 0, or a negative code with a
     * message in e (the runtime logs it and retries the key with backoff; the plan is dropped).
     * A primary that no longer exists gives an empty plan. */
    int (*reconcile)(void *ctx, const struct ctrl_view *view, const char *ns, const char *name,
                     struct plan *plan, struct err *e);
    /* For a change (add, update or delete) of obj, of type res, calls enqueue for every primary
     * key it concerns — for the primary type itself, its own key. May be NULL: then changes of
     * the primary type enqueue themselves, and changes of objects whose controller
     * ownerReference is of the primary kind enqueue their owner. */
    void (*map)(void *ctx, const struct ctrl_view *view, const struct kube_resource *res,
                const cJSON *obj, enqueue_fn enqueue, void *q);
    /* Calls enqueue for the keys to reconcile when the controller starts and at every
     * resync, instead of every object of the primary type (a key whose object may not exist).
     * May be NULL. */
    void (*seed)(void *ctx, enqueue_fn enqueue, void *q);
    void *ctx;
    int concurrency; /* keys reconciled at once; 0: the manager's default */
};

/* The namespace of the pod the manager runs in (its ServiceAccount's namespace file), into
 * out; false outside a pod. */
bool manager_pod_namespace(char *out, size_t size);

struct manager_opts {
    /* The caches, borrowed for the manager's lifetime; the view's stores follow this order. */
    const struct ctrl_cache_spec *caches;
    size_t n_caches;
    const char *component;      /* the source of Events; required */
    const char *field_manager;  /* of creates, updates and server-side applies; required */
    const char *metrics_prefix; /* of the metrics not named as controller-runtime's; required */
    /* Why action a may not be sent (what the manager's RBAC would answer 403), or NULL to let
     * it through; a refused action fails with -EPERM and this message. NULL: none refused. */
    const char *(*refuse)(const struct plan_action *a);
    const char *namespace_; /* watch only this namespace; NULL: all */
    int concurrency;        /* keys each controller reconciles at once; 0: 4 */
    /* Leader election: informers run on every replica, workqueues only on the leader. */
    bool leader_elect;
    /* The Lease's namespace. NULL: the service account's namespace file in a pod, else
     * leader_election_default_namespace if that namespace exists, else "default". */
    const char *leader_election_namespace;
    const char *leader_election_default_namespace; /* NULL: "default" */
    const char *leader_election_id;                /* the Lease; required with leader_elect */
    double lease_duration;                         /* seconds; 0: 15 */
    double renew_deadline;                         /* seconds; 0: 10 */
    double retry_period;                           /* seconds; 0: 2 */
    /* Called on the loop when leadership is lost (code -ETIMEDOUT or -EBUSY). Every
     * workqueue has stopped by then; the process is expected to exit. */
    void (*on_lost_leadership)(void *userdata, int code);
    void *userdata;
    /* Bound on waiting for in-flight plans at manager_stop(), seconds; 0: 15. */
    double shutdown_timeout;
    /* Seconds between checks for an optional cache's resource while it is not served; 0: 60. */
    double absent_retry;
    /* Seconds between reconciles of every object, changed or not (controller-runtime's
     * SyncPeriod); 0: 10 h. */
    double sync_period;
    /* Seconds after a status write of an object within which a write of progress only
     * (plan_update_status_progress) waits; 0: 5. */
    double progress_interval;
    /* Tests: send every plan action and Event through this hook instead of the client
     * (client may then be NULL: no informer runs and every cache stays empty). */
    kube_send_fn send;
    void *send_ctx;
};

/* Creates a manager on loop for client (both borrowed; they must outlive the manager).
 * opts is required; its strings are copied, its cache table is borrowed. Returns 0, -EINVAL
 * (detail in e), -ENOMEM. */
int manager_new(struct ev_loop *loop, struct kube_client *client, const struct manager_opts *opts,
                struct manager **ret_manager, struct err *e);

/* Adds a controller; def is copied, its strings and ctx are borrowed. Only before
 * manager_start(). Returns 0, -EINVAL (missing name, primary or reconcile; a primary that is
 * not one of the caches; a name used twice; started already), -ENOMEM. */
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

/* Every cache has synced (an optional cache counts as synced while its resource is absent). */
bool manager_synced(const struct manager *m);
/* Leading, or leader election is off. */
bool manager_leading(const struct manager *m);
/* Controllers are processing keys. */
bool manager_processing(const struct manager *m);

/* The caches now; the stores are borrowed until control returns to the loop. */
void manager_view(const struct manager *m, struct ctrl_view *ret_view);

/* Frees the trees the caches parsed for reading beyond their budget (lib/kube/store.h): only
 * where no object read from them is still in use. The runtime does it between reconciles and
 * once per turn of the loop; a long walk of the caches outside a reconcile (a metrics
 * collector's) does it between the objects it is done with, so as not to hold them all. */
void manager_trim_caches(struct manager *m);

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
