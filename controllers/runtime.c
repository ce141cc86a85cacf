#include "controllers/runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "api/kinds.h"
#include "controllers/access.h"
#include "controllers/cachekeep.h"
#include "lib/ctrl/metrics.h"
#include "lib/kube/informer.h"
#include "lib/kube/leader.h"
#include "lib/kube/workqueue.h"
#include "lib/util/buf.h"
#include "lib/util/log.h"
#include "lib/util/strutil.h"

/*
 * The manager: eleven shared caches (one informer each), one workqueue per controller, leader
 * election, and the executor, which turns a key into a plan (the controller's reconcile) and
 * the plan into requests, one after another, on the same loop.
 *
 * Workqueues exist only while the controllers process keys: they are created when every cache
 * has synced and this replica leads, and at once filled with every object of each controller's
 * primary type. Cache events before that are not needed: reconciles are level-based and that
 * first fill covers every key.
 */

const struct kube_resource NESTCP_CONTROL_PLANES = {
    API_GROUP_CONTROLPLANE, API_VERSION_STORAGE, "nestedcontrolplanes", "NestedControlPlane", true};
const struct kube_resource NESTCP_ETCDS = {API_GROUP_CONTROLPLANE, API_VERSION_STORAGE,
                                           "nestedetcds", "NestedEtcd", true};
const struct kube_resource NESTCP_APISERVERS = {API_GROUP_CONTROLPLANE, API_VERSION_STORAGE,
                                                "nestedapiservers", "NestedAPIServer", true};
const struct kube_resource NESTCP_CONTROLLER_MANAGERS = {
    API_GROUP_CONTROLPLANE, API_VERSION_STORAGE, "nestedcontrollermanagers",
    "NestedControllerManager", true};
const struct kube_resource NESTCP_NESTED_CLUSTERS = {API_GROUP_INFRASTRUCTURE, API_VERSION_STORAGE,
                                                     "nestedclusters", "NestedCluster", true};
const struct kube_resource CAPI_CLUSTERS = {API_GROUP_CLUSTER, API_VERSION_STORAGE, "clusters",
                                            "Cluster", true};

enum cache_id {
    CACHE_CONTROL_PLANES,
    CACHE_ETCDS,
    CACHE_APISERVERS,
    CACHE_CONTROLLER_MANAGERS,
    CACHE_NESTED_CLUSTERS,
    CACHE_CLUSTERS,
    CACHE_SECRETS,
    CACHE_SERVICES,
    CACHE_STATEFULSETS,
    CACHE_PODS,
    CACHE_CLAIMS,
    CACHE_CONFIGMAPS,
    CACHE_NETWORKPOLICIES,
    CACHE_JOBS,
    CACHE_COUNT,
};

static const struct cache_spec {
    const struct kube_resource *res;
    const char *selector;
    bool optional; /* its CRD may be absent */
} cache_specs[CACHE_COUNT] = {
    [CACHE_CONTROL_PLANES] = {&NESTCP_CONTROL_PLANES, NULL, false},
    [CACHE_ETCDS] = {&NESTCP_ETCDS, NULL, false},
    [CACHE_APISERVERS] = {&NESTCP_APISERVERS, NULL, false},
    [CACHE_CONTROLLER_MANAGERS] = {&NESTCP_CONTROLLER_MANAGERS, NULL, false},
    [CACHE_NESTED_CLUSTERS] = {&NESTCP_NESTED_CLUSTERS, NULL, false},
    [CACHE_CLUSTERS] = {&CAPI_CLUSTERS, NULL, true},
    [CACHE_SECRETS] = {&KUBE_SECRETS, MANAGER_SECRET_SELECTOR, false},
    [CACHE_SERVICES] = {&KUBE_SERVICES, MANAGER_OWNED_SELECTOR, false},
    [CACHE_STATEFULSETS] = {&KUBE_STATEFULSETS, MANAGER_OWNED_SELECTOR, false},
    [CACHE_PODS] = {&KUBE_PODS, MANAGER_POD_SELECTOR, false},
    [CACHE_CLAIMS] = {&KUBE_PVCS, MANAGER_CLAIM_SELECTOR, false},
    [CACHE_CONFIGMAPS] = {&KUBE_CONFIGMAPS, MANAGER_OWNED_SELECTOR, false},
    [CACHE_NETWORKPOLICIES] = {&KUBE_NETWORKPOLICIES, MANAGER_OWNED_SELECTOR, false},
    [CACHE_JOBS] = {&KUBE_JOBS, MANAGER_OWNED_SELECTOR, false},
};

const struct kube_resource *manager_cached_resource(size_t i)
{
    return i < CACHE_COUNT ? cache_specs[i].res : NULL;
}

#define DEFAULT_CONCURRENCY 4
#define DEFAULT_SHUTDOWN_TIMEOUT 15.0
#define DEFAULT_CRD_RETRY 60.0
#define FLUSH_TIMEOUT 3.0
#define RELEASE_TIMEOUT 5.0
#define SYNC_WARN_INTERVAL 30.0
/* Every object is reconciled at least this often (controller-runtime's SyncPeriod). */
#define DEFAULT_SYNC_PERIOD (10 * 3600.0)
#define SA_NAMESPACE_FILE "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

struct manager;

struct cache {
    struct manager *m;
    const struct cache_spec *spec;
    struct kube_informer *inf; /* NULL before it starts, or while its CRD is absent */
    bool synced;
    bool absent; /* the last probe of an optional cache answered 404 */
    struct kube_call *probe;
    ev_timer probe_timer;
    int probe_failures;
};

struct job;

struct controller {
    struct manager *m;
    struct controller_def def;
    int concurrency;
    struct workqueue *q; /* while processing */
    bool q_shut;
    struct job *jobs; /* keys in flight */
    unsigned active;
};

/* One key in flight: its plan and the action being carried out. */
struct job {
    struct controller *c;
    char *key; /* "ns/name"; ns and name point into a second copy */
    char *ns, *name, *split;
    struct plan plan;
    size_t next;
    double started;
    struct kube_call *call;
    void *call_handle; /* a plan call in flight (struct plan_call_ops) */
    double retry_after; /* the server's Retry-After on the failed action: the least requeue */
    bool claimed;       /* the current action's claim_uid was checked against the live object */
    bool rejected;      /* a write was rejected: only the status write still runs */
    size_t events_done; /* the plan's Events recorded so far */
    struct job *prev, *next_job;
};

/* A same-named object someone else controls (cache_view_conflict), or an object read live
 * (cache_view_found). */
struct conflict {
    double until; /* wall clock */
    char *key;    /* "resource/ns/name" */
    cJSON *obj;   /* found: the object */
    char why[];
};

enum outcome { OUTCOME_SUCCESS, OUTCOME_REQUEUE_AFTER, OUTCOME_CONFLICT, OUTCOME_ERROR };
static const char *const outcome_labels[] = {"success", "requeue_after", "requeue", "error"};

enum phase { PHASE_RUNNING, PHASE_DRAINING, PHASE_FLUSHING, PHASE_RELEASING, PHASE_STOPPED };

struct manager_metrics {
    struct metric *reconcile_total, *reconcile_errors, *reconcile_time;
    struct metric *active_workers, *max_concurrent;
    struct metric *wq_depth, *wq_waiting, *wq_in_flight, *wq_adds, *wq_retries;
    struct metric *wq_queue_duration, *wq_work_duration;
    struct metric *api_requests, *client_requests, *client_retries, *client_watches;
    struct metric *client_in_flight;
    struct metric *inf_lists, *inf_relists, *inf_list_failures, *inf_restarts, *inf_objects;
    struct metric *inf_synced, *inf_missed_deletes, *inf_bytes;
    struct metric *leader_status, *events;
};

struct manager {
    struct ev_loop *loop;
    struct kube_client *client;
    struct manager_opts opts; /* strings point at the copies below */
    char *namespace_, *lease_ns_opt, *lease_id;
    struct cache caches[CACHE_COUNT];
    struct kube_store empty; /* the view of a cache without an informer */
    struct controller **controllers;
    size_t n_controllers;
    bool started, synced, processing, leading;
    ev_timer sync_timer;
    ev_timer resync_timer; /* every object again, each sync_period */
    struct strmap conflicts; /* "resource/ns/name" -> struct conflict */
    struct strmap found;     /* the same, with the object read */
    struct strmap rejected;  /* primary "resource/ns/name" -> why its last write was rejected */
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

static void maybe_start_processing(struct manager *m);

/* ---- small helpers ---- */

static bool same_resource(const struct kube_resource *a, const struct kube_resource *b)
{
    return a == b || (strcmp(a->group, b->group) == 0 && strcmp(a->resource, b->resource) == 0);
}

static struct cache *cache_of(struct manager *m, const struct kube_resource *res)
{
    for (int i = 0; i < CACHE_COUNT; i++)
        if (same_resource(m->caches[i].spec->res, res))
            return &m->caches[i];
    return NULL;
}

static const struct kube_store *cache_store(const struct manager *m, const struct cache *c)
{
    return c->inf ? kube_informer_store(c->inf) : &m->empty;
}

static const char *verb_name(const struct plan_action *a)
{
    if (a->call)
        return a->call->name;
    switch (a->verb) {
    case KUBE_CREATE:
        return "create";
    case KUBE_PATCH:
        return a->patch_type == KUBE_PATCH_APPLY ? "apply" : "patch";
    case KUBE_UPDATE:
        return "update";
    case KUBE_DELETE:
        return "delete";
    case KUBE_GET:
        return "get";
    case KUBE_LIST:
        return "list";
    }
    return "unknown";
}

void manager_view(const struct manager *m, struct cache_view *ret_view)
{
    *ret_view = (struct cache_view){
        .control_planes = cache_store(m, &m->caches[CACHE_CONTROL_PLANES]),
        .etcds = cache_store(m, &m->caches[CACHE_ETCDS]),
        .apiservers = cache_store(m, &m->caches[CACHE_APISERVERS]),
        .controller_managers = cache_store(m, &m->caches[CACHE_CONTROLLER_MANAGERS]),
        .nested_clusters = cache_store(m, &m->caches[CACHE_NESTED_CLUSTERS]),
        .clusters = cache_store(m, &m->caches[CACHE_CLUSTERS]),
        .secrets = cache_store(m, &m->caches[CACHE_SECRETS]),
        .services = cache_store(m, &m->caches[CACHE_SERVICES]),
        .statefulsets = cache_store(m, &m->caches[CACHE_STATEFULSETS]),
        .pods = cache_store(m, &m->caches[CACHE_PODS]),
        .claims = cache_store(m, &m->caches[CACHE_CLAIMS]),
        .configmaps = cache_store(m, &m->caches[CACHE_CONFIGMAPS]),
        .networkpolicies = cache_store(m, &m->caches[CACHE_NETWORKPOLICIES]),
        .jobs = cache_store(m, &m->caches[CACHE_JOBS]),
        .now = time_wall(),
        .conflicts = &m->conflicts,
        .found = &m->found,
        .rejected = &m->rejected,
    };
}

static void conflict_key(struct buf *b, const struct kube_resource *res, const char *ns,
                         const char *name)
{
    buf_printf(b, "%s/%s/%s", res->resource, ns ? ns : "", name ? name : "");
}

static const struct conflict *conflict_get(const struct strmap *map, double now,
                                           const struct kube_resource *res, const char *ns,
                                           const char *name)
{
    struct buf key = BUF_INIT;
    const struct conflict *c = NULL;

    if (!map || !res)
        return NULL;
    conflict_key(&key, res, ns, name);
    if (key.data)
        c = strmap_get(map, key.data);
    buf_done(&key);
    return c && c->until > now ? c : NULL;
}

const char *cache_view_conflict(const struct cache_view *view, const struct kube_resource *res,
                                const char *ns, const char *name)
{
    const struct conflict *c = conflict_get(view->conflicts, view->now, res, ns, name);

    return c ? c->why : NULL;
}

const char *cache_view_rejected(const struct cache_view *view, const struct kube_resource *res,
                                const char *ns, const char *name)
{
    const struct conflict *c = conflict_get(view->rejected, view->now, res, ns, name);

    return c ? c->why : NULL;
}

const cJSON *cache_view_found(const struct cache_view *view, const struct kube_resource *res,
                              const char *ns, const char *name)
{
    const struct conflict *c = conflict_get(view->found, view->now, res, ns, name);

    return c ? c->obj : NULL;
}

void cache_view_note_free(void *value)
{
    struct conflict *c = value;

    if (c) {
        free(c->key);
        cJSON_Delete(c->obj);
    }
    free(c);
}

void cache_view_note(struct strmap *map, const struct kube_resource *res, const char *ns,
                     const char *name, const char *why, cJSON *obj, double until)
{
    struct buf key = BUF_INIT;
    struct conflict *c = NULL;

    conflict_key(&key, res, ns, name);
    if (key.data)
        cache_view_note_free(strmap_remove(map, key.data));
    if (key.data && (why || obj) && (c = calloc(1, sizeof(*c) + (why ? strlen(why) : 0) + 1))) {
        c->until = until;
        c->key = buf_steal(&key);
        c->obj = obj;
        obj = NULL;
        strcpy(c->why, why ? why : "");
        if (strmap_put(map, c->key, c) < 0)
            cache_view_note_free(c);
    }
    cJSON_Delete(obj);
    buf_done(&key);
}

/* ---- the executor ---- */

static void job_free(struct job *j)
{
    plan_done(&j->plan);
    free(j->key);
    free(j->split);
    free(j);
}

static void job_unlink(struct job *j)
{
    struct controller *c = j->c;

    if (j->prev)
        j->prev->next_job = j->next_job;
    else
        c->jobs = j->next_job;
    if (j->next_job)
        j->next_job->prev = j->prev;
    c->active--;
}

static void record_events(struct job *j, size_t succeeded);
static void record_event(struct job *j, enum kube_event_type type, const char *reason,
                         const char *message);

/* Reports the key's outcome to the workqueue and to the metrics, and frees the job. */
static void job_finish(struct job *j, enum outcome outcome)
{
    struct controller *c = j->c;
    struct manager *m = c->m;
    struct workqueue_result result = WORKQUEUE_RESULT_ERROR_AFTER(j->retry_after);
    const char *name = c->def.name;

    if (outcome == OUTCOME_SUCCESS && j->plan.requeue_after > 0)
        outcome = OUTCOME_REQUEUE_AFTER;
    if (outcome == OUTCOME_SUCCESS || outcome == OUTCOME_REQUEUE_AFTER) {
        record_events(j, j->plan.n_actions);
        cache_view_note(&m->rejected, c->def.primary, j->ns, j->name, NULL, NULL, 0);
    }
    if (outcome == OUTCOME_SUCCESS)
        result = WORKQUEUE_RESULT_SUCCESS;
    else if (outcome == OUTCOME_REQUEUE_AFTER)
        result = WORKQUEUE_RESULT_REQUEUE_AFTER(j->plan.requeue_after);
    metric_add(m->mx.reconcile_total, (const char *[]){name, outcome_labels[outcome]}, 1);
    if (outcome == OUTCOME_ERROR)
        metric_add(m->mx.reconcile_errors, (const char *[]){name}, 1);
    metric_observe(m->mx.reconcile_time, (const char *[]){name}, time_mono() - j->started);
    job_unlink(j);
    workqueue_done(c->q, j->key, result);
    job_free(j);
}

static void job_next(struct job *j);

/* Whether a write failed for good: the API server (400, 403, 404, 422) or the manager's own
 * rules refused it, and retrying the same write cannot help. Not the status write itself,
 * which is what would show it. */
static bool write_rejected(const struct plan_action *a, int code)
{
    if (a->call || a->verb == KUBE_GET || (a->subresource && strcmp(a->subresource, "status") == 0))
        return false;
    return code == -EINVAL || code == -EPERM || (code == -ENOENT && a->verb != KUBE_DELETE);
}

/* The plan's write of the reconciled object's status after the current action, or 0. */
static size_t status_action_after(const struct job *j)
{
    for (size_t i = j->plan.n_actions; i-- > j->next + 1;) {
        const struct plan_action *s = &j->plan.actions[i];
        if (!s->call && s->resource == j->c->def.primary && s->subresource &&
            strcmp(s->subresource, "status") == 0 && s->name && strcmp(s->name, j->name) == 0)
            return i;
    }
    return 0;
}

/* A rejected write is shown where the user looks: a Warning Event WriteRejected now, and the
 * reconciled object's Ready condition through cache_view_rejected, whose status write (planned
 * after the rejected one) still runs. Returns true when that status write goes ahead. */
static bool show_rejection(struct job *j, const struct plan_action *a, const char *message)
{
    struct manager *m = j->c->m;
    char why[1024];
    size_t k;

    snprintf(why, sizeof(why), "%s of %s %s%s%s was rejected: %s", verb_name(a),
             a->resource->kind, a->namespace_ ? a->namespace_ : "", a->namespace_ ? "/" : "",
             a->name ? a->name : "", message && message[0] ? message : "no reason given");
    cache_view_note(&m->rejected, j->c->def.primary, j->ns, j->name, why, NULL,
                    time_wall() + 86400.0);
    record_event(j, KUBE_EVENT_WARNING, "WriteRejected", why);
    k = status_action_after(j);
    if (!k)
        return false;
    j->rejected = true;
    j->next = k;
    j->claimed = false;
    return true;
}

static void action_failed(struct job *j, const struct plan_action *a, int code, const char *message)
{
    struct controller *c = j->c;
    bool conflict = code == -EBUSY || (code == -EEXIST && a->verb == KUBE_CREATE);

    if (!j->rejected && write_rejected(a, code)) {
        log_warn("action rejected", "controller=%s key=%s verb=%s resource=%s object=%s%s%s "
                 "why=%s error=%s message=%s",
                 c->def.name, j->key, verb_name(a), a->resource->resource,
                 a->namespace_ ? a->namespace_ : "", a->namespace_ ? "/" : "",
                 a->name ? a->name : "", a->why, err_code_name(code), message ? message : "");
        if (show_rejection(j, a, message)) {
            job_next(j);
            return;
        }
    }

    if (code == -ECANCELED) {
        log_info("action cancelled", "controller=%s key=%s verb=%s why=%s", c->def.name, j->key,
                 verb_name(a), a->why);
    } else {
        log_warn(conflict ? "action conflicted, reconciling again" : "action failed",
                 "controller=%s key=%s verb=%s resource=%s object=%s%s%s why=%s error=%s "
                 "message=%s retry_in_s=%.3f",
                 c->def.name, j->key, verb_name(a), a->call ? "-" : a->resource->resource,
                 a->namespace_ ? a->namespace_ : "", a->namespace_ ? "/" : "",
                 a->name ? a->name : "", a->why, err_code_name(code), message ? message : "",
                 workqueue_retry_delay(c->q, j->key));
    }
    job_finish(j, conflict ? OUTCOME_CONFLICT : OUTCOME_ERROR);
}

/* Counts a request the plans made, by verb and HTTP status ("none": no response). */
static void count_request(struct manager *m, const char *verb, const struct kube_result *res)
{
    char code[24];

    if (res->http_status > 0)
        snprintf(code, sizeof(code), "%ld", res->http_status);
    else
        snprintf(code, sizeof(code), "none");
    metric_add(m->mx.api_requests, (const char *[]){verb, code}, 1);
}

/* Sends req for j through the send hook (tests) or the client. */
static int send_request(struct job *j, const struct kube_request *req, kube_done_fn done)
{
    struct manager *m = j->c->m;

    if (m->opts.send)
        return m->opts.send(m->opts.send_ctx, req, done, j);
    return kube_request_start(m->client, req, done, j, &j->call);
}

/* Reads the object the current action a writes; done gets the answer. */
static void get_object(struct job *j, const struct plan_action *a, kube_done_fn done)
{
    struct kube_request req = {
        .verb = KUBE_GET,
        .resource = a->resource,
        .namespace_ = a->namespace_,
        .name = a->name,
    };

    int r = send_request(j, &req, done);

    if (r < 0)
        action_failed(j, a, r, "the request could not be sent");
}

/* A plan_create_else_read found its object: kept for the next reconcile, which runs at once. */
static void read_done(void *userdata, const struct kube_result *res)
{
    struct job *j = userdata;
    struct manager *m = j->c->m;
    const struct plan_action *a = &j->plan.actions[j->next];

    j->call = NULL;
    count_request(m, "get", res);
    if (res->code != 0 || !res->body) {
        j->retry_after = res->retry_after;
        action_failed(j, a, res->code ? res->code : -EIO, res->message);
        return;
    }
    log_info("found an existing object the caches do not hold",
             "controller=%s key=%s resource=%s object=%s/%s", j->c->def.name, j->key,
             a->resource->resource, a->namespace_ ? a->namespace_ : "", a->name);
    cache_view_note(&m->found, a->resource, a->namespace_, a->name, NULL,
                    cJSON_Duplicate(res->body, true), time_wall() + CACHE_VIEW_CONFLICT_TTL);
    job_finish(j, OUTCOME_CONFLICT);
}

/* A write of one of nestcp's own objects (their caches select nothing out) goes into the cache
 * at once: the key's next reconcile, which may come before the watch event, then writes with
 * the current resourceVersion instead of meeting a 409. */
static void observe_write(struct manager *m, const struct plan_action *a,
                          const struct kube_result *res)
{
    struct cache *c;

    if ((a->verb != KUBE_UPDATE && a->verb != KUBE_PATCH) || !res->body ||
        !(c = cache_of(m, a->resource)) || c->spec->selector || !c->inf)
        return;
    if (kube_informer_observe_write(c->inf, res->body) < 0)
        log_warn("a written object could not be cached", "resource=%s object=%s/%s",
                 a->resource->resource, a->namespace_ ? a->namespace_ : "",
                 a->name ? a->name : "");
}

static void action_done(void *userdata, const struct kube_result *res)
{
    struct job *j = userdata;
    struct manager *m = j->c->m;
    const struct plan_action *a = &j->plan.actions[j->next];

    j->call = NULL;
    count_request(m, verb_name(a), res);
    /* A delete of something already gone has done its job. */
    if (res->code == 0 || (a->verb == KUBE_DELETE && res->code == -ENOENT)) {
        log_debug("action done", "controller=%s key=%s verb=%s why=%s status=%ld", j->c->def.name,
                  j->key, verb_name(a), a->why, res->http_status);
        if (res->code == 0)
            observe_write(m, a, res);
        if (j->rejected) { /* the status that shows the rejection is written; the key fails */
            job_finish(j, OUTCOME_ERROR);
            return;
        }
        j->next++;
        j->claimed = false;
        record_events(j, j->next);
        job_next(j);
        return;
    }
    if (res->code == -EEXIST && a->verb == KUBE_CREATE && a->read_if_exists) {
        get_object(j, a, read_done);
        return;
    }
    j->retry_after = res->retry_after;
    action_failed(j, a, res->code, res->message);
}

static void call_done(void *userdata, int code, const char *message)
{
    struct job *j = userdata;
    const struct plan_action *a = &j->plan.actions[j->next];

    j->call_handle = NULL;
    if (code == 0) {
        log_debug("call done", "controller=%s key=%s call=%s why=%s", j->c->def.name, j->key,
                  a->call->name, a->why);
        j->next++;
        j->claimed = false;
        record_events(j, j->next);
        job_next(j);
        return;
    }
    action_failed(j, a, code, message);
}

static void call_start(struct job *j, const struct plan_action *a)
{
    int r;

    log_debug("call", "controller=%s key=%s step=%zu/%zu call=%s why=%s", j->c->def.name, j->key,
              j->next + 1, j->plan.n_actions, a->call->name, a->why);
    r = a->call->start(a->call_arg, j->c->m->loop, call_done, j, &j->call_handle);
    if (r < 0)
        action_failed(j, a, r, "the call could not be started");
}


/* The live object an action with a claim_uid would write: absent or controlled by claim_uid,
 * the action goes ahead; controlled by anyone else (or nobody), it is left untouched. */
static void claim_done(void *userdata, const struct kube_result *res)
{
    struct job *j = userdata;
    struct manager *m = j->c->m;
    const struct plan_action *a = &j->plan.actions[j->next];
    const cJSON *ref;
    char why[512];

    j->call = NULL;
    count_request(m, "get", res);
    if (res->code == 0 && res->body) {
        ref = kube_obj_controller_ref(res->body);
        const cJSON *uid = cJSON_GetObjectItemCaseSensitive(ref, "uid");
        if (cJSON_IsString(uid) && strcmp(uid->valuestring, a->claim_uid) == 0)
            goto claimed;
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(ref, "kind");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(ref, "name");
        if (cJSON_IsString(kind) && cJSON_IsString(name))
            snprintf(why, sizeof(why),
                     "%s %s/%s exists and is controlled by %s %s; nestcp leaves it as it is "
                     "(delete or rename it to let nestcp create its own)",
                     a->resource->kind, a->namespace_, a->name, kind->valuestring,
                     name->valuestring);
        else
            snprintf(why, sizeof(why),
                     "%s %s/%s exists and nestcp does not own it; nestcp leaves it as it is "
                     "(delete or rename it to let nestcp create its own)",
                     a->resource->kind, a->namespace_, a->name);
        cache_view_note(&m->conflicts, a->resource, a->namespace_, a->name, why, NULL,
                        time_wall() + CACHE_VIEW_CONFLICT_TTL);
        record_event(j, KUBE_EVENT_WARNING, "ObjectConflict", why);
        action_failed(j, a, -EEXIST, why);
        return;
    }
    if (res->code != -ENOENT) {
        j->retry_after = res->retry_after;
        action_failed(j, a, res->code, res->message);
        return;
    }
claimed:
    cache_view_note(&m->conflicts, a->resource, a->namespace_, a->name, NULL, NULL, 0);
    j->claimed = true;
    job_next(j);
}

/* Sends the next action, or finishes the job when none is left. */
static void job_next(struct job *j)
{
    const struct plan_action *a;
    struct kube_request req;
    int r;

    if (j->next >= j->plan.n_actions) {
        job_finish(j, OUTCOME_SUCCESS);
        return;
    }
    a = &j->plan.actions[j->next];
    if (a->call) {
        call_start(j, a);
        return;
    }
    /* The last line of defence of tenant isolation: a reconcile of a namespaced object writes
     * only in that object's namespace (lib/render's gate keeps patches there in the first
     * place). */
    if (j->ns && (!a->namespace_ || strcmp(a->namespace_, j->ns) != 0)) {
        action_failed(j, a, -EPERM, "refused: a write outside the reconciled object's namespace");
        return;
    }
    /* What config/rbac does not grant would be answered 403: say so before sending it. */
    if (!access_allows_action(a)) {
        action_failed(j, a, -EPERM,
                      "refused: not in the manager's access table (controllers/access.c), which "
                      "config/rbac grants");
        return;
    }
    if (a->claim_uid && !j->claimed) {
        log_debug("claim check", "controller=%s key=%s resource=%s object=%s/%s",
                  j->c->def.name, j->key, a->resource->resource,
                  a->namespace_ ? a->namespace_ : "", a->name);
        get_object(j, a, claim_done);
        return;
    }
    req = (struct kube_request){
        .verb = a->verb,
        .resource = a->resource,
        .namespace_ = a->namespace_,
        .name = a->verb == KUBE_CREATE ? NULL : a->name,
        .subresource = a->subresource,
        .body = a->body,
        .patch_type = a->patch_type,
        .force = a->force,
        .precondition_uid = a->precondition_uid,
    };
    if (a->verb == KUBE_CREATE || a->verb == KUBE_UPDATE ||
        (a->verb == KUBE_PATCH && a->patch_type == KUBE_PATCH_APPLY))
        req.field_manager = PLAN_FIELD_MANAGER;
    if (a->verb == KUBE_DELETE)
        req.propagation_policy = a->propagation ? a->propagation : "Background";
    log_debug("action",
              "controller=%s key=%s step=%zu/%zu verb=%s resource=%s object=%s%s%s why=%s",
              j->c->def.name, j->key, j->next + 1, j->plan.n_actions, verb_name(a),
              a->resource->resource, a->namespace_ ? a->namespace_ : "", a->namespace_ ? "/" : "",
              a->name ? a->name : "", a->why);
    r = send_request(j, &req, action_done);
    if (r < 0)
        action_failed(j, a, r, "the request could not be sent");
}

/* The reconciled object, as Events refer to it. */
static struct kube_event_ref job_ref(const struct job *j)
{
    struct controller *c = j->c;
    struct manager *m = c->m;
    struct cache *cache = cache_of(m, c->def.primary);
    const cJSON *obj = cache ? kube_store_get(cache_store(m, cache), j->ns, j->name) : NULL;
    struct kube_event_ref ref = {.resource = c->def.primary, .namespace_ = j->ns, .name = j->name};

    if (obj)
        ref = kube_event_ref_of(c->def.primary, obj);
    return ref;
}

static void record_event(struct job *j, enum kube_event_type type, const char *reason,
                         const char *message)
{
    struct kube_event_ref ref = job_ref(j);

    kube_recorder_event(j->c->m->recorder, &ref, type, reason, "%s", message);
}

/* An Event says a thing happened only once it has: records the plan's Events whose preceding
 * actions (the first `succeeded`) all succeeded. Those after a failed action are dropped with
 * the plan; the next reconcile plans them again if they still hold. */
static void record_events(struct job *j, size_t succeeded)
{
    struct kube_event_ref ref;

    if (j->events_done >= j->plan.n_events || j->plan.events[j->events_done].after > succeeded)
        return;
    ref = job_ref(j);
    while (j->events_done < j->plan.n_events &&
           j->plan.events[j->events_done].after <= succeeded) {
        const struct plan_event *ev = &j->plan.events[j->events_done++];
        kube_recorder_event(j->c->m->recorder, &ref, ev->type, ev->reason, "%s", ev->message);
    }
}

/* The workqueue hands out a key: reconcile it and start on the plan. */
static void process_key(void *userdata, const char *key)
{
    struct controller *c = userdata;
    struct manager *m = c->m;
    struct job *j = calloc(1, sizeof(*j));
    struct cache_view view;
    struct err e;
    char *slash;
    int r;

    if (!j || !(j->key = strdup(key)) || !(j->split = strdup(key))) {
        log_error("out of memory", "controller=%s key=%s", c->def.name, key);
        if (j)
            free(j->key);
        free(j);
        workqueue_done(c->q, key, WORKQUEUE_RESULT_ERROR);
        return;
    }
    j->c = c;
    slash = strchr(j->split, '/');
    if (slash) {
        *slash = '\0';
        j->ns = j->split;
        j->name = slash + 1;
    } else {
        j->name = j->split;
    }
    plan_init(&j->plan);
    j->started = time_mono();
    j->next_job = c->jobs;
    if (c->jobs)
        c->jobs->prev = j;
    c->jobs = j;
    c->active++;

    manager_view(m, &view);
    err_clear(&e);
    r = c->def.reconcile(c->def.ctx, &view, j->ns, j->name, &j->plan, &e);
    if (r < 0) {
        log_warn("reconcile failed", "controller=%s key=%s error=%s retry_in_s=%.3f", c->def.name,
                 j->key, e.msg[0] ? e.msg : err_code_name(r), workqueue_retry_delay(c->q, j->key));
        plan_done(&j->plan);
        job_finish(j, OUTCOME_ERROR);
        return;
    }
    log_debug("reconciled", "controller=%s key=%s actions=%zu events=%zu requeue_after_s=%g",
              c->def.name, j->key, j->plan.n_actions, j->plan.n_events, j->plan.requeue_after);
    record_events(j, 0);
    job_next(j);
}

/* ---- mapping cache events to keys ---- */

static void controller_enqueue(void *q, const char *ns, const char *name)
{
    struct controller *c = q;
    struct buf key = BUF_INIT;

    if (!c->q || c->q_shut || !name)
        return;
    if ((ns && ns[0] ? buf_printf(&key, "%s/%s", ns, name) : buf_puts(&key, name)) < 0 ||
        workqueue_add(c->q, key.data) == -ENOMEM)
        log_error("out of memory: key dropped", "controller=%s name=%s", c->def.name, name);
    buf_done(&key);
}

/* Whether apiVersion ("group/version", or "version" for the core group) is in group. */
static bool api_version_in_group(const char *api_version, const char *group)
{
    const char *slash = api_version ? strchr(api_version, '/') : NULL;
    size_t n = strlen(group);

    if (!api_version)
        return false;
    if (!slash)
        return n == 0;
    return (size_t)(slash - api_version) == n && strncmp(api_version, group, n) == 0;
}

/* Without a map: the primary's own changes enqueue it; other objects enqueue their
 * controller owner when it is of the primary kind. */
static void default_map(struct controller *c, const struct kube_resource *res, const cJSON *obj)
{
    const struct kube_resource *p = c->def.primary;
    const cJSON *ref, *kind, *api_version, *name;

    if (same_resource(res, p)) {
        controller_enqueue(c, kube_obj_namespace(obj), kube_obj_name(obj));
        return;
    }
    ref = kube_obj_controller_ref(obj);
    kind = cJSON_GetObjectItemCaseSensitive(ref, "kind");
    api_version = cJSON_GetObjectItemCaseSensitive(ref, "apiVersion");
    name = cJSON_GetObjectItemCaseSensitive(ref, "name");
    if (cJSON_IsString(kind) && cJSON_IsString(api_version) && cJSON_IsString(name) &&
        strcmp(kind->valuestring, p->kind) == 0 &&
        api_version_in_group(api_version->valuestring, p->group))
        controller_enqueue(c, kube_obj_namespace(obj), name->valuestring);
}

static void dispatch(struct cache *cache, const cJSON *obj)
{
    struct manager *m = cache->m;
    struct cache_view view;

    if (!m->processing || !obj)
        return;
    manager_view(m, &view);
    for (size_t i = 0; i < m->n_controllers; i++) {
        struct controller *c = m->controllers[i];
        if (c->def.map)
            c->def.map(c->def.ctx, &view, cache->spec->res, obj, controller_enqueue, c);
        else
            default_map(c, cache->spec->res, obj);
    }
}

static void on_add(void *userdata, const cJSON *obj)
{
    dispatch(userdata, obj);
}

static void on_update(void *userdata, const cJSON *old_obj, const cJSON *new_obj)
{
    dispatch(userdata, old_obj);
    dispatch(userdata, new_obj);
}

static void on_delete(void *userdata, const cJSON *obj, bool final_state_unknown)
{
    dispatch(userdata, obj);
}

/* ---- caches ---- */

static void check_synced(struct manager *m)
{
    if (m->synced)
        return;
    for (int i = 0; i < CACHE_COUNT; i++)
        if (!m->caches[i].synced)
            return;
    m->synced = true;
    ev_timer_stop(m->loop, &m->sync_timer);
    log_info("caches synced", "caches=%d", CACHE_COUNT);
    maybe_start_processing(m);
}

static void on_synced(void *userdata)
{
    struct cache *cache = userdata;

    cache->synced = true;
    check_synced(cache->m);
}

static int cache_start_informer(struct cache *cache)
{
    struct manager *m = cache->m;
    static const struct kube_informer_handlers handlers = {
        .on_add = on_add, .on_update = on_update, .on_delete = on_delete, .on_synced = on_synced};
    struct kube_informer_opts o = {
        .resource = cache->spec->res,
        .namespace_ = m->namespace_,
        .label_selector = cache->spec->selector,
        .transform = cachekeep_transform(cache->spec->res->kind),
    };
    int r = kube_informer_new(m->client, &o, &handlers, cache, &cache->inf);

    if (r == 0)
        r = kube_informer_start(cache->inf);
    return r;
}

static void probe_start(struct cache *cache);

static void probe_done(void *userdata, const struct kube_result *res)
{
    struct cache *cache = userdata;
    struct manager *m = cache->m;
    const struct kube_resource *rs = cache->spec->res;
    double delay;

    cache->probe = NULL;
    if (res->code == -ECANCELED)
        return;
    if (res->code == -ENOENT) {
        if (!cache->absent)
            log_info("resource not served, its cache stays empty", "resource=%s.%s retry_s=%g",
                     rs->resource, rs->group, m->opts.cluster_crd_retry);
        cache->absent = true;
        cache->synced = true;
        ev_timer_set(&cache->probe_timer, m->opts.cluster_crd_retry, 0);
        ev_timer_start(m->loop, &cache->probe_timer);
        check_synced(m);
        return;
    }
    if (res->code < 0) {
        cache->probe_failures++;
        delay = kube_informer_backoff(cache->probe_failures, 1.0);
        log_warn("cannot list resource", "resource=%s.%s error=%s message=%s retry_s=%.1f",
                 rs->resource, rs->group, err_code_name(res->code), res->message, delay);
        ev_timer_set(&cache->probe_timer, delay, 0);
        ev_timer_start(m->loop, &cache->probe_timer);
        return;
    }
    if (cache->absent)
        log_info("resource now served, starting its cache", "resource=%s.%s", rs->resource,
                 rs->group);
    cache->absent = false;
    if (cache_start_informer(cache) < 0) {
        log_error("cannot start cache", "resource=%s.%s", rs->resource, rs->group);
        kube_informer_free(cache->inf);
        cache->inf = NULL;
        ev_timer_set(&cache->probe_timer, m->opts.cluster_crd_retry, 0);
        ev_timer_start(m->loop, &cache->probe_timer);
    }
}

static void probe_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    probe_start(w->data);
}

/* An optional resource (its CRD may not be installed): list one object to see whether the
 * server serves it before starting an informer. */
static void probe_start(struct cache *cache)
{
    struct manager *m = cache->m;
    struct kube_request req = {
        .verb = KUBE_LIST, .resource = cache->spec->res, .namespace_ = m->namespace_, .limit = 1};

    if (m->phase != PHASE_RUNNING)
        return;
    if (kube_request_start(m->client, &req, probe_done, cache, &cache->probe) < 0) {
        cache->probe = NULL;
        ev_timer_set(&cache->probe_timer, m->opts.cluster_crd_retry, 0);
        ev_timer_start(m->loop, &cache->probe_timer);
    }
}

static void sync_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct manager *m = w->data;

    for (int i = 0; i < CACHE_COUNT; i++) {
        const struct cache *cache = &m->caches[i];
        struct kube_informer_stats st = {0};
        if (cache->synced)
            continue;
        if (cache->inf)
            kube_informer_get_stats(cache->inf, &st);
        log_warn("cache not synced yet", "resource=%s.%s list_failures=%lu",
                 cache->spec->res->resource, cache->spec->res->group, st.list_failures);
    }
}

/* ---- processing ---- */

static bool enqueue_each(void *userdata, const cJSON *obj)
{
    controller_enqueue(userdata, kube_obj_namespace(obj), kube_obj_name(obj));
    return true;
}

/* Every primary object of every controller, into its queue. */
static void enqueue_all(struct manager *m)
{
    for (size_t i = 0; i < m->n_controllers; i++) {
        struct controller *c = m->controllers[i];
        struct cache *cache = cache_of(m, c->def.primary);
        if (c->q && c->def.seed)
            c->def.seed(c->def.ctx, controller_enqueue, c);
        else if (c->q && cache)
            kube_store_foreach(cache_store(m, cache), enqueue_each, c);
    }
}

static void resync_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct manager *m = w->data;

    (void)loop;
    (void)revents;
    if (!m->processing)
        return;
    log_info("periodic resync", "period_s=%g", m->opts.sync_period);
    enqueue_all(m);
}

static void maybe_start_processing(struct manager *m)
{
    struct workqueue_opts wo = {0};

    if (m->processing || m->phase != PHASE_RUNNING || !m->synced || !manager_leading(m))
        return;
    for (size_t i = 0; i < m->n_controllers; i++) {
        struct controller *c = m->controllers[i];
        wo.concurrency = c->concurrency;
        if (!c->q && workqueue_new(m->loop, &wo, process_key, c, &c->q) < 0) {
            log_error("cannot create workqueue", "controller=%s", c->def.name);
            c->q = NULL;
        }
    }
    m->processing = true;
    log_info("controllers started", "controllers=%zu", m->n_controllers);
    /* Every primary object once: the starting point of level-based reconciling; then again
     * every sync period, so that nothing waits on an event that never comes. */
    enqueue_all(m);
    ev_timer_set(&m->resync_timer, m->opts.sync_period, m->opts.sync_period);
    ev_timer_start(m->loop, &m->resync_timer);
}

/* Stops handing out keys; drained (may be NULL) runs for each queue once it is idle. */
static int stop_queues(struct manager *m, void (*drained)(void *userdata))
{
    int n = 0;

    m->processing = false;
    ev_timer_stop(m->loop, &m->resync_timer);
    for (size_t i = 0; i < m->n_controllers; i++) {
        struct controller *c = m->controllers[i];
        if (!c->q || c->q_shut)
            continue;
        c->q_shut = true;
        n++;
        workqueue_shutdown(c->q, drained, c);
    }
    return n;
}

bool manager_synced(const struct manager *m)
{
    return m->synced;
}

bool manager_leading(const struct manager *m)
{
    return !m->opts.leader_elect || m->leading;
}

bool manager_processing(const struct manager *m)
{
    return m->processing;
}

int manager_enqueue(struct manager *m, const char *controller, const char *ns, const char *name)
{
    struct buf key = BUF_INIT;
    int r = -ENOENT;

    for (size_t i = 0; i < m->n_controllers; i++) {
        struct controller *c = m->controllers[i];
        if (strcmp(c->def.name, controller) != 0)
            continue;
        if (!c->q || c->q_shut)
            return -EAGAIN;
        r = ns && ns[0] ? buf_printf(&key, "%s/%s", ns, name) : buf_puts(&key, name);
        if (r == 0)
            r = workqueue_add(c->q, key.data);
        buf_done(&key);
        return r;
    }
    return r;
}

/* ---- leader election ---- */

static void on_started_leading(void *userdata)
{
    struct manager *m = userdata;

    m->leading = true;
    log_info("became leader", "lease=%s/%s identity=%s", m->lease_ns, m->opts.leader_election_id,
             kube_leader_identity(m->leader));
    maybe_start_processing(m);
}

static void on_stopped_leading(void *userdata, int code)
{
    struct manager *m = userdata;

    m->leading = false;
    stop_queues(m, NULL);
    log_error("leader election lost, stopping", "lease=%s/%s identity=%s error=%s", m->lease_ns,
              m->opts.leader_election_id, kube_leader_identity(m->leader), err_code_name(code));
    if (m->opts.on_lost_leadership)
        m->opts.on_lost_leadership(m->opts.userdata, code);
}

static void on_new_leader(void *userdata, const char *identity)
{
    struct manager *m = userdata;

    log_info("leader changed", "lease=%s/%s leader=%s", m->lease_ns, m->opts.leader_election_id,
             identity[0] ? identity : "(released)");
}

static int elector_start(struct manager *m, const char *ns)
{
    struct kube_leader_opts lo = {
        .namespace_ = ns,
        .name = m->opts.leader_election_id,
        .lease_duration = m->opts.lease_duration,
        .renew_deadline = m->opts.renew_deadline,
        .retry_period = m->opts.retry_period,
        .on_started_leading = on_started_leading,
        .on_stopped_leading = on_stopped_leading,
        .on_new_leader = on_new_leader,
        .userdata = m,
    };
    struct err e;
    int r;

    err_clear(&e);
    if (!(m->lease_ns = strdup(ns)))
        return -ENOMEM;
    r = kube_leader_new(m->client, &lo, &m->leader, &e);
    if (r < 0) {
        log_error("cannot set up leader election", "error=%s", e.msg);
        return r;
    }
    log_info("waiting for leadership", "lease=%s/%s identity=%s", ns, lo.name,
             kube_leader_identity(m->leader));
    return kube_leader_start(m->leader);
}

static void ns_probe_done(void *userdata, const struct kube_result *res)
{
    struct manager *m = userdata;
    const char *ns = "nestcp-system";

    m->ns_probe = NULL;
    if (res->code == -ECANCELED)
        return;
    if (res->code == -ENOENT) {
        ns = "default";
    } else if (res->code < 0 && res->code != -EPERM) {
        log_warn("cannot look up the leader election namespace", "namespace=%s error=%s retry_s=%g",
                 ns, err_code_name(res->code), m->opts.retry_period);
        ev_timer_set(&m->lease_timer, m->opts.retry_period, 0);
        ev_timer_start(m->loop, &m->lease_timer);
        return;
    }
    if (elector_start(m, ns) < 0)
        log_error("leader election did not start", "namespace=%s", ns);
}

static void ns_probe_start(struct manager *m)
{
    struct kube_request req = {
        .verb = KUBE_GET, .resource = &KUBE_NAMESPACES, .name = "nestcp-system"};

    if (m->phase != PHASE_RUNNING)
        return;
    if (kube_request_start(m->client, &req, ns_probe_done, m, &m->ns_probe) < 0) {
        m->ns_probe = NULL;
        ev_timer_set(&m->lease_timer, m->opts.retry_period, 0);
        ev_timer_start(m->loop, &m->lease_timer);
    }
}

static void lease_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    ns_probe_start(w->data);
}

/* The pod's namespace from its service account, into out; false when not in a pod. */
bool manager_pod_namespace(char *out, size_t size)
{
    int fd = open(SA_NAMESPACE_FILE, O_RDONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        return false;
    n = read(fd, out, size - 1);
    close(fd);
    if (n <= 0)
        return false;
    out[n] = '\0';
    out[strcspn(out, " \t\r\n")] = '\0';
    return out[0] != '\0';
}

static int leader_election_start(struct manager *m)
{
    char ns[256];

    if (m->opts.leader_election_namespace)
        return elector_start(m, m->opts.leader_election_namespace);
    if (manager_pod_namespace(ns, sizeof(ns)))
        return elector_start(m, ns);
    ns_probe_start(m);
    return 0;
}

const char *manager_lease_namespace(const struct manager *m)
{
    return m->leader ? m->lease_ns : NULL;
}

const char *manager_identity(const struct manager *m)
{
    return m->leader ? kube_leader_identity(m->leader) : NULL;
}

/* ---- graceful stop ---- */

static void stop_advance(struct manager *m);

static void queue_drained(void *userdata)
{
    struct controller *c = userdata;
    struct manager *m = c->m;

    if (m->phase == PHASE_DRAINING && --m->pending_drains == 0)
        stop_advance(m);
}

static void events_flushed(void *userdata)
{
    struct manager *m = userdata;

    if (m->phase == PHASE_FLUSHING)
        stop_advance(m);
}

static void lease_released(void *userdata, int code)
{
    struct manager *m = userdata;

    if (m->phase != PHASE_RELEASING)
        return;
    if (code < 0)
        log_warn("lease release failed", "error=%s", err_code_name(code));
    else
        log_info("lease released", "lease=%s/%s", m->lease_ns, m->opts.leader_election_id);
    stop_advance(m);
}

static void cancel_calls(struct manager *m)
{
    for (size_t i = 0; i < m->n_controllers; i++) {
        struct controller *c = m->controllers[i];
        struct job *j = c->jobs, *next;
        for (; j; j = next) {
            next = j->next_job;
            if (j->call)
                kube_call_cancel(j->call); /* finishes and frees j */
            else if (j->call_handle)
                j->plan.actions[j->next].call->cancel(j->call_handle); /* the same */
        }
    }
}

static void stop_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct manager *m = w->data;

    if (m->phase == PHASE_DRAINING) {
        unsigned n = 0;
        for (size_t i = 0; i < m->n_controllers; i++)
            n += m->controllers[i]->active;
        log_warn("shutdown timeout: cancelling plans in flight", "keys=%u timeout_s=%g", n,
                 m->opts.shutdown_timeout);
        cancel_calls(m);
    } else if (m->phase == PHASE_FLUSHING) {
        log_warn("shutdown: events still in flight are dropped", "timeout_s=%g", FLUSH_TIMEOUT);
    } else if (m->phase == PHASE_RELEASING) {
        log_warn("shutdown: lease release timed out", "timeout_s=%g", RELEASE_TIMEOUT);
    }
    stop_advance(m);
}

static void arm_stop_timer(struct manager *m, double seconds)
{
    ev_timer_stop(m->loop, &m->stop_timer);
    ev_timer_set(&m->stop_timer, seconds, 0);
    ev_timer_start(m->loop, &m->stop_timer);
}

/* Moves the stop to its next phase: draining -> flushing Events -> releasing the Lease. */
static void stop_advance(struct manager *m)
{
    ev_timer_stop(m->loop, &m->stop_timer);
    switch (m->phase) {
    case PHASE_DRAINING:
        m->phase = PHASE_FLUSHING;
        if (kube_recorder_stats(m->recorder)->in_flight > 0) {
            arm_stop_timer(m, FLUSH_TIMEOUT);
            kube_recorder_flush(m->recorder, events_flushed, m);
            return;
        }
        stop_advance(m);
        return;
    case PHASE_FLUSHING:
        m->phase = PHASE_RELEASING;
        if (m->leader) {
            arm_stop_timer(m, RELEASE_TIMEOUT);
            if (kube_leader_stop(m->leader, lease_released, m) == 0)
                return;
        }
        stop_advance(m);
        return;
    case PHASE_RELEASING:
        m->phase = PHASE_STOPPED;
        log_info("manager stopped", "%s", "");
        if (m->stop_done)
            m->stop_done(m->stop_userdata);
        return;
    case PHASE_RUNNING:
    case PHASE_STOPPED:
        return;
    }
}

int manager_stop(struct manager *m, void (*done)(void *userdata), void *userdata)
{
    unsigned in_flight = 0;

    if (m->phase != PHASE_RUNNING)
        return -EALREADY;
    m->phase = PHASE_DRAINING;
    m->stop_done = done;
    m->stop_userdata = userdata;
    ev_timer_stop(m->loop, &m->lease_timer);
    ev_timer_stop(m->loop, &m->sync_timer);
    if (m->ns_probe)
        kube_call_cancel(m->ns_probe);
    for (int i = 0; i < CACHE_COUNT; i++) {
        ev_timer_stop(m->loop, &m->caches[i].probe_timer);
        if (m->caches[i].probe)
            kube_call_cancel(m->caches[i].probe);
    }
    for (size_t i = 0; i < m->n_controllers; i++)
        in_flight += m->controllers[i]->active;
    log_info("stopping", "keys_in_flight=%u timeout_s=%g", in_flight, m->opts.shutdown_timeout);
    m->pending_drains = stop_queues(m, queue_drained);
    if (m->pending_drains == 0) {
        stop_advance(m);
        return 0;
    }
    arm_stop_timer(m, m->opts.shutdown_timeout);
    return 0;
}

/* ---- metrics ---- */

static int register_metrics(struct manager *m)
{
    static const char *const controller[] = {"controller", NULL};
    static const char *const controller_result[] = {"controller", "result", NULL};
    static const char *const queue[] = {"name", NULL};
    static const char *const resource[] = {"resource", NULL};
    static const char *const reason[] = {"resource", "reason", NULL};
    const struct {
        struct metric **m;
        enum metric_type type;
        const char *name, *help;
        const char *const *labels;
    } defs[] = {
        {&m->mx.reconcile_total, METRIC_COUNTER, "controller_runtime_reconcile_total",
         "Reconciles by controller and result (requeue: a conflict or AlreadyExists).",
         controller_result},
        {&m->mx.reconcile_errors, METRIC_COUNTER, "controller_runtime_reconcile_errors_total",
         "Reconciles that failed, in the reconcile function or in a plan action.", controller},
        {&m->mx.reconcile_time, METRIC_HISTOGRAM, "controller_runtime_reconcile_time_seconds",
         "Time from handing out a key to the end of its plan.", controller},
        {&m->mx.active_workers, METRIC_GAUGE, "controller_runtime_active_workers",
         "Keys being reconciled now.", controller},
        {&m->mx.max_concurrent, METRIC_GAUGE, "controller_runtime_max_concurrent_reconciles",
         "Keys a controller reconciles at once at most.", controller},
        {&m->mx.wq_depth, METRIC_GAUGE, "workqueue_depth", "Keys queued and ready.", queue},
        {&m->mx.wq_waiting, METRIC_GAUGE, "nestcp_workqueue_waiting",
         "Keys waiting for a delay (requeue after, or retry backoff).", queue},
        {&m->mx.wq_in_flight, METRIC_GAUGE, "nestcp_workqueue_in_flight", "Keys being processed.",
         queue},
        {&m->mx.wq_adds, METRIC_COUNTER, "workqueue_adds_total", "Keys queued.", queue},
        {&m->mx.wq_retries, METRIC_COUNTER, "workqueue_retries_total",
         "Keys re-queued after a failure, rate-limited.", queue},
        {&m->mx.wq_queue_duration, METRIC_SUMMARY, "workqueue_queue_duration_seconds",
         "Time keys spent queued before being handed out.", queue},
        {&m->mx.wq_work_duration, METRIC_SUMMARY, "workqueue_work_duration_seconds",
         "Time keys spent being processed.", queue},
        {&m->mx.api_requests, METRIC_COUNTER, "nestcp_api_requests_total",
         "Plan actions sent to the API server, by verb and HTTP status (none: no response).",
         (const char *const[]){"verb", "code", NULL}},
        {&m->mx.client_requests, METRIC_COUNTER, "nestcp_kube_client_requests_total",
         "HTTP requests the client sent (retries and list pages included).", NULL},
        {&m->mx.client_retries, METRIC_COUNTER, "nestcp_kube_client_retries_total",
         "Requests retried after 429 Too Many Requests.", NULL},
        {&m->mx.client_watches, METRIC_COUNTER, "nestcp_kube_client_watches_total",
         "Watch streams opened.", NULL},
        {&m->mx.client_in_flight, METRIC_GAUGE, "nestcp_kube_client_in_flight",
         "Requests and watches in flight.", NULL},
        {&m->mx.inf_lists, METRIC_COUNTER, "nestcp_informer_lists_total",
         "Complete lists applied to a cache (the first and every relist).", resource},
        {&m->mx.inf_relists, METRIC_COUNTER, "nestcp_informer_relists_total",
         "Lists after the first (a watch expired with 410 Gone).", resource},
        {&m->mx.inf_list_failures, METRIC_COUNTER, "nestcp_informer_list_failures_total",
         "Lists that failed.", resource},
        {&m->mx.inf_restarts, METRIC_COUNTER, "nestcp_informer_watch_restarts_total",
         "Watch streams that ended and were resumed, by reason (timeout, expired, error).", reason},
        {&m->mx.inf_missed_deletes, METRIC_COUNTER, "nestcp_informer_missed_deletes_total",
         "Deletions found by a relist.", resource},
        {&m->mx.inf_objects, METRIC_GAUGE, "nestcp_informer_objects", "Objects in a cache.",
         resource},
        {&m->mx.inf_bytes, METRIC_GAUGE, "nestcp_informer_bytes",
         "Heap bytes the objects of a cache take, as cached.",
         resource},
        {&m->mx.inf_synced, METRIC_GAUGE, "nestcp_informer_synced",
         "1 once a cache has synced (or its CRD is absent).", resource},
        {&m->mx.leader_status, METRIC_GAUGE, "leader_election_master_status",
         "1 while this replica leads (always 1 without leader election).",
         (const char *const[]){"name", NULL}},
        {&m->mx.events, METRIC_COUNTER, "nestcp_events_total",
         "Kubernetes Events by what became of them (created, patched, dropped, failed).",
         (const char *const[]){"result", NULL}},
    };

    for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++) {
        int r = metrics_register(m->metrics, defs[i].type, defs[i].name, defs[i].help,
                                 defs[i].labels, NULL, 0, defs[i].m);
        if (r < 0)
            return r;
    }
    return 0;
}

static void collect(void *userdata, struct metrics *r)
{
    struct manager *m = userdata;
    struct manager_metrics *x = &m->mx;

    for (size_t i = 0; i < m->n_controllers; i++) {
        const struct controller *c = m->controllers[i];
        const char *const l[] = {c->def.name};
        const struct workqueue_metrics *w = c->q ? workqueue_metrics(c->q) : NULL;
        const struct workqueue_metrics zero = {0};
        if (!w)
            w = &zero;
        /* The reconcile counters exist from the start, at 0, as controller-runtime's do: a
         * query of their increase then sees the first error too. */
        metric_add(x->reconcile_errors, l, 0);
        for (size_t o = 0; o < sizeof(outcome_labels) / sizeof(outcome_labels[0]); o++)
            metric_add(x->reconcile_total, (const char *[]){c->def.name, outcome_labels[o]}, 0);
        metric_set(x->active_workers, l, c->active);
        metric_set(x->max_concurrent, l, c->concurrency);
        metric_set(x->wq_depth, l, (double)w->depth);
        metric_set(x->wq_waiting, l, (double)w->waiting);
        metric_set(x->wq_in_flight, l, (double)w->in_flight);
        /* A queue is made afresh when processing starts, so these only grow. */
        metric_set(x->wq_adds, l, (double)w->adds);
        metric_set(x->wq_retries, l, (double)w->retries);
        metric_set_summary(x->wq_queue_duration, l, w->queue_duration_sum, w->queue_duration_count);
        metric_set_summary(x->wq_work_duration, l, w->work_duration_sum, w->work_duration_count);
    }
    for (int i = 0; i < CACHE_COUNT; i++) {
        const struct cache *cache = &m->caches[i];
        const char *const l[] = {cache->spec->res->resource};
        struct kube_informer_stats st = {0};
        if (cache->inf)
            kube_informer_get_stats(cache->inf, &st);
        metric_set(x->inf_lists, l, (double)st.lists);
        metric_set(x->inf_relists, l, st.lists > 0 ? (double)(st.lists - 1) : 0);
        metric_set(x->inf_list_failures, l, (double)st.list_failures);
        metric_set(x->inf_missed_deletes, l, (double)st.missed_deletes);
        metric_set(x->inf_restarts, (const char *[]){l[0], "timeout"}, (double)st.watch_timeouts);
        metric_set(x->inf_restarts, (const char *[]){l[0], "expired"}, (double)st.watch_expired);
        metric_set(x->inf_restarts, (const char *[]){l[0], "error"}, (double)st.watch_errors);
        metric_set(x->inf_objects, l, cache->inf ? (double)kube_informer_count(cache->inf) : 0);
        metric_set(x->inf_bytes, l, (double)kube_store_bytes(cache_store(m, cache)));
        metric_set(x->inf_synced, l, cache->synced ? 1 : 0);
    }
    if (m->client) {
        struct kube_client_stats cs;
        kube_client_get_stats(m->client, &cs);
        metric_set(x->client_requests, NULL, (double)cs.requests);
        metric_set(x->client_retries, NULL, (double)cs.retries);
        metric_set(x->client_watches, NULL, (double)cs.watches);
        metric_set(x->client_in_flight, NULL, (double)cs.pending);
    }
    metric_set(x->leader_status, (const char *[]){m->opts.leader_election_id},
               manager_leading(m) ? 1 : 0);
    if (m->recorder) {
        const struct kube_recorder_stats *es = kube_recorder_stats(m->recorder);
        metric_set(x->events, (const char *[]){"created"}, (double)es->created);
        metric_set(x->events, (const char *[]){"patched"}, (double)es->patched);
        metric_set(x->events, (const char *[]){"dropped"}, (double)es->dropped);
        metric_set(x->events, (const char *[]){"failed"}, (double)es->failed);
    }
}

struct metrics *manager_metrics(struct manager *m)
{
    return m->metrics;
}

struct kube_recorder *manager_recorder(struct manager *m)
{
    return m->recorder;
}

/* ---- lifecycle ---- */

static int dup_opt(const char *s, char **ret)
{
    *ret = NULL;
    if (s && !(*ret = strdup(s)))
        return -ENOMEM;
    return 0;
}

int manager_new(struct ev_loop *loop, struct kube_client *client, const struct manager_opts *opts,
                struct manager **ret_manager, struct err *e)
{
    struct manager_opts o = opts ? *opts : (struct manager_opts){0};
    struct kube_recorder_opts ro = {.component = "nestcp", .send = o.send, .send_ctx = o.send_ctx};
    struct manager *m = NULL;
    int r;

    if (!loop || (!client && !o.send))
        return err_set(e, -EINVAL, "manager: a loop and a client (or a send hook) are required");
    if (o.concurrency < 0 || o.lease_duration < 0 || o.renew_deadline < 0 || o.retry_period < 0 ||
        o.shutdown_timeout < 0 || o.cluster_crd_retry < 0 || o.sync_period < 0)
        return err_set(e, -EINVAL, "manager: negative concurrency or duration");
    if (o.leader_elect && !client)
        return err_set(e, -EINVAL, "manager: leader election needs a client");
    if (o.namespace_ && !o.namespace_[0])
        o.namespace_ = NULL;
    o.concurrency = o.concurrency ? o.concurrency : DEFAULT_CONCURRENCY;
    o.lease_duration = o.lease_duration > 0 ? o.lease_duration : 15;
    o.renew_deadline = o.renew_deadline > 0 ? o.renew_deadline : 10;
    o.retry_period = o.retry_period > 0 ? o.retry_period : 2;
    o.shutdown_timeout = o.shutdown_timeout > 0 ? o.shutdown_timeout : DEFAULT_SHUTDOWN_TIMEOUT;
    o.cluster_crd_retry = o.cluster_crd_retry > 0 ? o.cluster_crd_retry : DEFAULT_CRD_RETRY;
    o.sync_period = o.sync_period > 0 ? o.sync_period : DEFAULT_SYNC_PERIOD;
    if (!o.leader_election_id || !o.leader_election_id[0])
        o.leader_election_id = MANAGER_LEASE_NAME;

    r = -ENOMEM;
    m = calloc(1, sizeof(*m));
    if (!m)
        goto fail;
    m->loop = loop;
    m->client = client;
    kube_store_init(&m->empty);
    ev_timer_init(&m->sync_timer, sync_timer_cb, SYNC_WARN_INTERVAL, SYNC_WARN_INTERVAL);
    m->sync_timer.data = m;
    ev_init(&m->resync_timer, resync_timer_cb);
    m->resync_timer.data = m;
    ev_init(&m->lease_timer, lease_timer_cb);
    m->lease_timer.data = m;
    ev_init(&m->stop_timer, stop_timer_cb);
    m->stop_timer.data = m;
    for (int i = 0; i < CACHE_COUNT; i++) {
        m->caches[i].m = m;
        m->caches[i].spec = &cache_specs[i];
        ev_init(&m->caches[i].probe_timer, probe_timer_cb);
        m->caches[i].probe_timer.data = &m->caches[i];
    }
    if (dup_opt(o.namespace_, &m->namespace_) < 0 ||
        dup_opt(o.leader_election_namespace, &m->lease_ns_opt) < 0 ||
        dup_opt(o.leader_election_id, &m->lease_id) < 0)
        goto fail;
    o.namespace_ = m->namespace_;
    o.leader_election_namespace = m->lease_ns_opt;
    o.leader_election_id = m->lease_id;
    m->opts = o;
    if (metrics_new(&m->metrics) < 0 || register_metrics(m) < 0 ||
        metrics_add_collector(m->metrics, collect, m) < 0)
        goto fail;
    r = kube_recorder_new(loop, client, &ro, &m->recorder, e);
    if (r < 0)
        goto fail;
    *ret_manager = m;
    return 0;
fail:
    manager_free(m);
    return r == -ENOMEM ? err_set(e, r, "manager: out of memory") : r;
}

int manager_add_controller(struct manager *m, const struct controller_def *def, struct err *e)
{
    struct controller *c, **nc;

    if (m->started)
        return err_set(e, -EINVAL, "controller %s: the manager has started", def->name);
    if (!def->name || !def->name[0] || !def->primary || !def->reconcile)
        return err_set(e, -EINVAL, "controller: name, primary and reconcile are required");
    if (!cache_of(m, def->primary))
        return err_set(e, -EINVAL, "controller %s: primary %s.%s is not one of the caches",
                       def->name, def->primary->resource, def->primary->group);
    if (def->concurrency < 0)
        return err_set(e, -EINVAL, "controller %s: negative concurrency", def->name);
    for (size_t i = 0; i < m->n_controllers; i++)
        if (strcmp(m->controllers[i]->def.name, def->name) == 0)
            return err_set(e, -EINVAL, "controller %s: added twice", def->name);
    c = calloc(1, sizeof(*c));
    nc = c ? realloc(m->controllers, (m->n_controllers + 1) * sizeof(*nc)) : NULL;
    if (!nc) {
        free(c);
        return err_set(e, -ENOMEM, "controller %s: out of memory", def->name);
    }
    m->controllers = nc;
    c->m = m;
    c->def = *def;
    c->concurrency = def->concurrency ? def->concurrency : m->opts.concurrency;
    m->controllers[m->n_controllers++] = c;
    return 0;
}

int manager_start(struct manager *m, struct err *e)
{
    int r;

    if (m->started)
        return err_set(e, -EALREADY, "manager: started already");
    m->started = true;
    log_info("manager starting", "namespace=%s controllers=%zu concurrency=%d leader_elect=%s",
             m->namespace_ ? m->namespace_ : "(all)", m->n_controllers, m->opts.concurrency,
             m->opts.leader_elect ? "true" : "false");
    if (!m->client) {
        /* Tests with a send hook: no server, every cache is empty and synced. */
        for (int i = 0; i < CACHE_COUNT; i++)
            m->caches[i].synced = true;
    } else {
        for (int i = 0; i < CACHE_COUNT; i++) {
            struct cache *cache = &m->caches[i];
            if (cache->spec->optional) {
                probe_start(cache);
                continue;
            }
            r = cache_start_informer(cache);
            if (r < 0)
                return err_set(e, r, "cache of %s.%s: cannot start", cache->spec->res->resource,
                               cache->spec->res->group);
        }
        ev_timer_start(m->loop, &m->sync_timer);
    }
    if (m->opts.leader_elect && (r = leader_election_start(m)) < 0)
        return err_set(e, r, "leader election: cannot start (%s)", err_code_name(r));
    check_synced(m);
    return 0;
}

void manager_free(struct manager *m)
{
    if (!m)
        return;
    ev_timer_stop(m->loop, &m->sync_timer);
    ev_timer_stop(m->loop, &m->resync_timer);
    strmap_done(&m->conflicts, cache_view_note_free);
    strmap_done(&m->found, cache_view_note_free);
    strmap_done(&m->rejected, cache_view_note_free);
    ev_timer_stop(m->loop, &m->lease_timer);
    ev_timer_stop(m->loop, &m->stop_timer);
    if (m->ns_probe)
        kube_call_cancel(m->ns_probe);
    /* Plans in flight end now: cancelled requests finish their jobs; with a send hook the
     * jobs are dropped (the hook must have completed every request). */
    for (size_t i = 0; i < m->n_controllers; i++) {
        struct controller *c = m->controllers[i];
        while (c->jobs) {
            struct job *j = c->jobs;
            if (j->call) {
                kube_call_cancel(j->call);
            } else if (j->call_handle) {
                j->plan.actions[j->next].call->cancel(j->call_handle);
            } else {
                job_unlink(j);
                job_free(j);
            }
        }
        workqueue_free(c->q);
        free(c);
    }
    free(m->controllers);
    kube_leader_free(m->leader);
    for (int i = 0; i < CACHE_COUNT; i++) {
        ev_timer_stop(m->loop, &m->caches[i].probe_timer);
        if (m->caches[i].probe)
            kube_call_cancel(m->caches[i].probe);
        kube_informer_free(m->caches[i].inf);
    }
    kube_recorder_free(m->recorder);
    metrics_free(m->metrics);
    kube_store_done(&m->empty);
    free(m->lease_ns);
    free(m->namespace_);
    free(m->lease_ns_opt);
    free(m->lease_id);
    free(m);
}
