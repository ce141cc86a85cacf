#ifndef NESTCP_CTRL_PLAN_H
#define NESTCP_CTRL_PLAN_H

/*
 * A plan: what one reconcile wants done. Reconcilers build plans from what the caches hold
 * (struct ctrl_view) without any I/O; the manager (lib/ctrl/manager.h) carries a plan out on
 * the event loop, one action after another in order (or several at once, plan_together),
 * stopping at the first failure.
 *
 * Outcome of executing a plan, as the runtime reports it to the workqueue:
 *   - every action succeeded: requeue after `requeue_after` seconds if > 0, else done;
 *   - an action got 409 Conflict, or a create got AlreadyExists: requeue at once (the cache is
 *     about to catch up) with the key's rate limit;
 *   - any other failure: the key is retried with exponential backoff, and the failure is logged
 *     with the action's `why`.
 * An Event in the plan is recorded (asynchronously) once every action planned before it has
 * succeeded, and dropped when one of those fails: an Event says a thing happened only after it
 * did, so plan it after the action it reports.
 */

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "lib/kube/client.h"
#include "lib/kube/events.h"

struct ev_loop;

/* Called once when a call ends: code 0, or a negative code with a message (may be NULL). */
typedef void (*plan_call_done_fn)(void *done_ctx, int code, const char *message);

/* An operation other than a request to the API server (a call to a tenant's etcd), carried out
 * in its turn like the other actions: the plan goes on when it ends with code 0, and fails as
 * a request fails otherwise. */
struct plan_call_ops {
    const char *name; /* for logs, e.g. "etcd member add" */
    /* Starts the call on loop; done runs exactly once, later, on the loop. Returns 0 with a
     * handle for cancel in *ret_handle, or a negative code (done does not run). */
    int (*start)(void *arg, struct ev_loop *loop, plan_call_done_fn done, void *done_ctx,
                 void **ret_handle);
    /* Ends a call in flight: done runs with -ECANCELED before it returns. */
    void (*cancel)(void *handle);
    void (*free)(void *arg); /* frees arg; may be NULL */
};

struct plan_action {
    /* KUBE_CREATE, KUBE_PATCH, KUBE_UPDATE or KUBE_DELETE; ignored for a call */
    enum kube_verb verb;
    const struct plan_call_ops *call; /* a call rather than a request; NULL: a request */
    void *call_arg;                   /* owned, freed with call->free */
    enum kube_patch_type patch_type;
    bool force; /* server-side apply: take ownership of conflicting fields */
    const struct kube_resource *resource;
    char *namespace_;
    char *name;
    char *subresource;      /* "status" or NULL */
    cJSON *body;            /* owned; the object, the patch, or delete options */
    char *precondition_uid; /* delete: only this incarnation */
    /* Server-side apply only to an object that does not exist yet or whose controller
     * ownerReference has this uid: sent first with a resourceVersion no object has, so the API
     * server creates it if absent and answers 409 otherwise, and only then read; NULL: no such
     * check. */
    char *claim_uid;
    /* A create that finds the object exists (the caches, which select by label, do not hold
     * it): the runtime reads it and keeps it for the next reconcile (view->found). */
    bool read_if_exists;
    /* A status write whose only change is progress a user reads (plan_update_status_progress):
     * sent at most once per manager_opts.progress_interval per object. */
    bool progress;
    const char *propagation; /* delete: "Orphan"; NULL: "Background" */
    char *why;               /* for logs, e.g. "StatefulSet default/c-etcd: spec changed" */
    bool with_next;          /* sent together with the next action (plan_together) */
};

struct plan_event {
    size_t after; /* recorded once the actions planned before it (this many) succeeded */
    enum kube_event_type type;
    char *reason;  /* CamelCase, e.g. "CreatedStatefulSet" */
    char *message; /* never Secret data; after the count of a counted Event */
    /* plan_event_count: the message follows how many of the actions [counts_from, after)
     * succeeded ("3 CA Secrets created"). */
    bool counted;
    size_t counts_from;
    bool recorded; /* set by the runtime: a counted Event recorded when its step ended */
};

struct plan {
    struct plan_action *actions;
    size_t n_actions, cap_actions;
    struct plan_event *events;
    size_t n_events, cap_events;
    double requeue_after; /* seconds; 0: none */
};

void plan_init(struct plan *p);
void plan_done(struct plan *p);

/* Each of these takes ownership of obj/body (also on failure) and copies the strings.
 * Returns 0 or -ENOMEM. `why` is a printf format. */

/* Create obj (namespace and name from its metadata). Used for objects that must never be
 * overwritten, such as CA Secrets. */
int plan_create(struct plan *p, const struct kube_resource *res, cJSON *obj, const char *why, ...)
    __attribute__((format(printf, 4, 5)));

/* The same, for an object a user may have made without the label the caches select on (a CA
 * Secret from `kubectl create secret tls`): when it exists already the runtime reads it, keeps
 * it for the next reconcile's view (view->found) and requeues the key. */
int plan_create_else_read(struct plan *p, const struct kube_resource *res, cJSON *obj,
                          const char *why, ...) __attribute__((format(printf, 4, 5)));

/* Server-side apply obj with the manager's field manager (manager_opts.field_manager) and
 * force. */
int plan_apply(struct plan *p, const struct kube_resource *res, cJSON *obj, const char *why, ...)
    __attribute__((format(printf, 4, 5)));

/* The same, for an object the caches do not hold: applied only if it does not exist or is
 * controlled by owner_uid. Otherwise it is left untouched, the runtime records the conflict
 * (view->conflicts) with a Warning Event ObjectConflict, and the key backs off. An absent
 * object costs one request, the apply that creates it; an existing one is read before it is
 * applied or left alone. obj must have metadata. */
int plan_apply_claimed(struct plan *p, const struct kube_resource *res, cJSON *obj,
                       const char *owner_uid, const char *why, ...)
    __attribute__((format(printf, 5, 6)));

/* JSON merge patch of ns/name (subresource may be NULL or "status"). */
int plan_merge_patch(struct plan *p, const struct kube_resource *res, const char *ns,
                     const char *name, const char *subresource, cJSON *patch, const char *why, ...)
    __attribute__((format(printf, 7, 8)));

/* Replace the status of obj (a full object carrying metadata.resourceVersion, so a concurrent
 * write gives 409 and the key is reconciled again). */
int plan_update_status(struct plan *p, const struct kube_resource *res, cJSON *obj, const char *why,
                       ...) __attribute__((format(printf, 4, 5)));

/* The same, for a status whose only change is how far something got, which a user reads in
 * messages ("etcd 1/3 updated"), not a transition. Such writes are coalesced: one is sent only
 * when no status of the object was written in the last manager_opts.progress_interval seconds
 * (lib/ctrl/manager.h); otherwise it is left out, and the key is reconciled again when that
 * interval ends, to write what is then true unless a status write of another kind, sent at
 * once, carried it before. */
int plan_update_status_progress(struct plan *p, const struct kube_resource *res, cJSON *obj,
                                const char *why, ...) __attribute__((format(printf, 4, 5)));

/* Delete ns/name with propagation Background, only if its uid is still `uid` (NULL: any). */
int plan_delete(struct plan *p, const struct kube_resource *res, const char *ns, const char *name,
                const char *uid, const char *why, ...) __attribute__((format(printf, 6, 7)));

/* The same, with propagation Orphan: what the object owns is left in place (for a
 * StatefulSet replaced by another that adopts its pods). */
int plan_delete_orphan(struct plan *p, const struct kube_resource *res, const char *ns,
                       const char *name, const char *uid, const char *why, ...)
    __attribute__((format(printf, 6, 7)));

/* A call (see struct plan_call_ops); takes ownership of arg (also on failure). */
int plan_call(struct plan *p, const struct plan_call_ops *ops, void *arg, const char *why, ...)
    __attribute__((format(printf, 4, 5)));

int plan_event(struct plan *p, enum kube_event_type type, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* An Event that counts the writes planned since `first` that were made: its message is their
 * number, a space and `what` ("CA Secrets created"). For writes sent together (plan_together),
 * of which one may fail while the others are made: once all have their answers, it is recorded
 * when at least one of them succeeded, with how many did, whatever happened to the others. Plan
 * it right after them. Returns 0, -ENOMEM, or -EINVAL when a write of progress
 * (plan_update_status_progress), which the runtime may leave out, is among them. */
int plan_event_count(struct plan *p, size_t first, enum kube_event_type type, const char *reason,
                     const char *what);

/* Holds the events [first, end) until every action planned so far succeeded: for an Event that
 * reports what the plan's last write (its status) records. */
void plan_events_after_all(struct plan *p, size_t first, size_t end);

/* Drops the events [first, end): what they report is not written by this plan. */
void plan_events_drop(struct plan *p, size_t first, size_t end);

/* Marks the actions planned since `first` (requests, none of them a write of progress) as
 * independent of one another: the runtime sends them at once, as one step, and goes on once
 * every one has succeeded. When any of them fails, the plan ends as if the first of them in
 * order had failed alone, once the others have their answers too: the Events planned after it
 * are dropped although the others' writes may have been made. So only writes that do not need
 * each other, and that no Event of the plan counts, may go together (the adoptions of a
 * control plane's components; a component's missing Services and NetworkPolicy). A call among
 * them ends the step before it. */
void plan_together(struct plan *p, size_t first);

/* Moves src's actions (not its events) to the end of dst. Returns 0, or -ENOMEM (both are
 * unchanged then). */
int plan_append(struct plan *dst, struct plan *src);

/* Asks for the key to be reconciled again after `seconds` (the earliest request wins). */
void plan_requeue_after(struct plan *p, double seconds);

#endif
