#ifndef NESTCP_CTRL_MANAGER_INT_H
#define NESTCP_CTRL_MANAGER_INT_H

/*
 * The manager's insides, shared by the files of lib/ctrl and by nothing else:
 *   manager.c          lifecycle, processing, leader election, graceful stop
 *   caches.c           the shared caches: informers, probes of optional resources, sync,
 *                      and the mapping of their changes to keys
 *   executor.c         a key to a plan (the controller's reconcile), a plan to requests
 *   notes.c            what the executor notes for the next reconcile (struct ctrl_view's maps)
 *   manager_metrics.c  the manager's metric families and their collector
 *
 * Workqueues exist only while the controllers process keys: they are created when every cache
 * has synced and this replica leads, and at once filled with every object of each controller's
 * primary type. Cache events before that are not needed: reconciles are level-based and that
 * first fill covers every key.
 */

#include <stdbool.h>
#include <stddef.h>

#include <ev.h>

#include "lib/ctrl/manager.h"
#include "lib/ctrl/metrics.h"
#include "lib/kube/informer.h"
#include "lib/kube/leader.h"
#include "lib/kube/workqueue.h"
#include "lib/util/list.h"
#include "lib/util/strmap.h"

struct cache {
    struct manager *m;
    const struct ctrl_cache_spec *spec;
    struct kube_informer *inf; /* NULL before it starts, or while its resource is absent */
    bool synced;
    bool absent; /* the last probe of an optional cache answered 404 */
    struct kube_call *probe;
    ev_timer probe_timer;
    int probe_failures;
    /* The resource at each of the spec's versions, newest first (one: its own version). */
    struct kube_resource *served;
    size_t n_served;
    size_t version;             /* inf reads served[version] */
    size_t probe_version;       /* the probe in flight lists served[probe_version] */
    struct kube_informer *next; /* a newer version's informer until it has synced, or NULL */
    size_t next_version;
};

struct job;

struct controller {
    struct manager *m;
    struct controller_def def;
    int concurrency;
    struct workqueue *q; /* while processing */
    bool q_shut;
    struct list_node jobs; /* keys in flight (struct job) */
    unsigned active;
};

enum outcome { OUTCOME_SUCCESS, OUTCOME_REQUEUE_AFTER, OUTCOME_CONFLICT, OUTCOME_ERROR };
#define OUTCOME_COUNT 4
/* The result label of controller_runtime_reconcile_total, by outcome. */
extern const char *const ctrl_outcome_labels[OUTCOME_COUNT];

enum phase { PHASE_RUNNING, PHASE_DRAINING, PHASE_FLUSHING, PHASE_RELEASING, PHASE_STOPPED };

struct manager_metrics {
    struct metric *reconcile_total, *reconcile_errors, *reconcile_time;
    struct metric *active_workers, *max_concurrent;
    struct metric *wq_depth, *wq_waiting, *wq_in_flight, *wq_adds, *wq_retries;
    struct metric *wq_queue_duration, *wq_work_duration;
    struct metric *api_requests, *client_requests, *client_retries, *client_watches;
    struct metric *client_in_flight;
    struct metric *inf_lists, *inf_relists, *inf_list_failures, *inf_restarts, *inf_objects;
    struct metric *inf_synced, *inf_missed_deletes, *inf_bytes, *inf_version;
    struct metric *leader_status, *events;
};

struct manager {
    struct ev_loop *loop;
    struct kube_client *client;
    struct manager_opts opts; /* strings point at the copies below */
    char *namespace_, *lease_ns_opt, *lease_ns_default, *lease_id;
    char *component, *field_manager, *metrics_prefix;
    struct cache *caches; /* one per opts.caches */
    size_t n_caches;
    const struct kube_store **stores; /* the view of each cache: its informer's store, or empty */
    struct kube_store empty;          /* the view of a cache without an informer */
    struct controller **controllers;
    size_t n_controllers;
    bool started, synced, processing, leading;
    ev_timer sync_timer;
    ev_prepare trim;         /* once per turn of the loop: the caches' parsed trees are trimmed */
    ev_timer resync_timer;   /* every object again, each sync_period */
    struct strmap conflicts; /* "resource/ns/name" -> a note (notes.c) */
    struct strmap found;     /* the same, with the object read */
    struct strmap rejected;  /* primary "resource/ns/name" -> why its last write was rejected */
    /* "resource/ns/name" -> a note until opts.progress_interval after its last status write */
    struct strmap status_written;
    struct kube_recorder *recorder;
    /* leader election */
    struct kube_leader *leader;
    char *lease_ns;
    struct kube_call *ns_probe;
    ev_timer lease_timer;
    /* graceful stop */
    enum phase phase;
    int pending_drains;
    ev_timer stop_timer;
    void (*stop_done)(void *userdata);
    void *stop_userdata;
    struct metrics *metrics;
    struct manager_metrics mx;
};

/* manager.c: starts the workqueues once every cache has synced and this replica leads. */
void ctrl_processing_start(struct manager *m);

/* caches.c */

/* Sets up the caches of m->opts.caches. Returns 0 or -ENOMEM. */
int ctrl_caches_init(struct manager *m);
/* Starts every informer (or the probe of an optional resource). Returns 0 or the code of an
 * informer that cannot start (detail in e). */
int ctrl_caches_start(struct manager *m, struct err *e);
/* Ends the probes of optional resources; informers keep running. */
void ctrl_caches_stop_probes(struct manager *m);
/* Frees the caches. */
void ctrl_caches_done(struct manager *m);
/* Marks the manager synced, and starts processing, once every cache has synced. */
void ctrl_caches_check_synced(struct manager *m);
/* The cache of res, or NULL. */
struct cache *ctrl_cache_of(const struct manager *m, const struct kube_resource *res);
/* What the view shows of cache c: its informer's store, or an empty one. */
const struct kube_store *ctrl_cache_store(const struct manager *m, const struct cache *c);
/* Whether res and other are the same resource. */
bool ctrl_same_resource(const struct kube_resource *a, const struct kube_resource *b);
/* The enqueue_fn of controller q (struct controller). */
void ctrl_enqueue(void *q, const char *ns, const char *name);
/* Every primary object of every controller (or its seed), into its queue. */
void ctrl_enqueue_all(struct manager *m);

/* executor.c */

/* The workqueue of controller userdata hands out key: reconciles it and starts on the plan. */
void ctrl_executor_process(void *userdata, const char *key);
/* Cancels the requests and calls in flight of c's plans (each finishes its job). */
void ctrl_executor_cancel(struct controller *c);
/* Ends every plan of c: cancelled, or dropped when nothing is in flight. */
void ctrl_executor_abort(struct controller *c);

/* manager_metrics.c: registers the manager's families and their collector. Returns 0 or a
 * negative code. */
int ctrl_metrics_init(struct manager *m);

#endif
