#include "lib/ctrl/manager_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/kube/status.h"
#include "lib/util/log.h"
#include "lib/util/strutil.h"

/*
 * The executor: the workqueue hands out a key, the controller's reconcile turns it into a plan,
 * and the plan's actions are sent one after another, on the loop, until one fails or none is
 * left (lib/ctrl/plan.h says what each outcome does to the key).
 */

/* One key in flight: its plan and the action being carried out. */
struct job {
    struct controller *c;
    char *key; /* "ns/name"; ns and name point into a second copy */
    char *ns, *name, *split;
    struct plan plan;
    size_t next;
    double started;
    struct kube_call *call;
    void *call_handle;     /* a plan call in flight (struct plan_call_ops) */
    double retry_after;    /* the server's Retry-After on the failed action: the least requeue */
    bool claimed;          /* the current action's claim_uid was checked against the live object */
    bool rejected;         /* a write was rejected: only the status write still runs */
    size_t events_done;    /* the plan's Events recorded so far */
    struct list_node link; /* in its controller's jobs */
};

const char *const ctrl_outcome_labels[OUTCOME_COUNT] = {"success", "requeue_after", "requeue",
                                                        "error"};

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

static void job_free(struct job *j)
{
    plan_done(&j->plan);
    free(j->key);
    free(j->split);
    free(j);
}

static void job_unlink(struct job *j)
{
    list_remove(&j->link);
    j->c->active--;
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
        ctrl_note_put(&m->rejected, c->def.primary, j->ns, j->name, NULL, NULL, 0);
    }
    if (outcome == OUTCOME_SUCCESS)
        result = WORKQUEUE_RESULT_SUCCESS;
    else if (outcome == OUTCOME_REQUEUE_AFTER)
        result = WORKQUEUE_RESULT_REQUEUE_AFTER(j->plan.requeue_after);
    metric_add(m->mx.reconcile_total, (const char *[]){name, ctrl_outcome_labels[outcome]}, 1);
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
 * reconciled object's status through view->rejected (its Ready condition, say), whose status
 * write (planned after the rejected one) still runs. Returns true when that status write goes
 * ahead. */
static bool show_rejection(struct job *j, const struct plan_action *a, const char *message)
{
    struct manager *m = j->c->m;
    char why[1024];
    size_t k;

    snprintf(why, sizeof(why), "%s of %s %s%s%s was rejected: %s", verb_name(a), a->resource->kind,
             a->namespace_ ? a->namespace_ : "", a->namespace_ ? "/" : "", a->name ? a->name : "",
             message && message[0] ? message : "no reason given");
    ctrl_note_put(&m->rejected, j->c->def.primary, j->ns, j->name, why, NULL,
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
        log_warn("action rejected",
                 "controller=%s key=%s verb=%s resource=%s object=%s%s%s "
                 "why=%s error=%s message=%s",
                 c->def.name, j->key, verb_name(a), a->resource->resource,
                 a->namespace_ ? a->namespace_ : "", a->namespace_ ? "/" : "",
                 a->name ? a->name : "", a->why, kube_code_name(code), message ? message : "");
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
                 a->name ? a->name : "", a->why, kube_code_name(code), message ? message : "",
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
    ctrl_note_put(&m->found, a->resource, a->namespace_, a->name, NULL,
                  cJSON_Duplicate(res->body, true), time_wall() + CTRL_NOTE_TTL);
    job_finish(j, OUTCOME_CONFLICT);
}

/* A write of an object whose cache selects nothing out (the caller's own kinds) goes into the cache
 * at once: the key's next reconcile, which may come before the watch event, then writes with
 * the current resourceVersion instead of meeting a 409. */
static void observe_write(struct manager *m, const struct plan_action *a,
                          const struct kube_result *res)
{
    struct cache *c;

    if ((a->verb != KUBE_UPDATE && a->verb != KUBE_PATCH) || !res->body ||
        !(c = ctrl_cache_of(m, a->resource)) || c->spec->selector || !c->inf)
        return;
    if (kube_informer_observe_write(c->inf, res->body) < 0)
        log_warn("a written object could not be cached", "resource=%s object=%s/%s",
                 a->resource->resource, a->namespace_ ? a->namespace_ : "", a->name ? a->name : "");
}

static void claim_done(void *userdata, const struct kube_result *res);

static bool is_status_write(const struct plan_action *a)
{
    return !a->call && a->verb == KUBE_UPDATE && a->subresource &&
           strcmp(a->subresource, "status") == 0;
}

/* A write of progress only waits while the object's status was written within the last
 * opts.progress_interval: left out, and the key reconciled again when the interval ends.
 * Returns true when a is left out. A plan whose write was rejected sends its status. */
static bool progress_waits(struct job *j, const struct plan_action *a)
{
    struct manager *m = j->c->m;
    double now = time_wall(), until;

    if (!a->progress || j->rejected ||
        !(until = ctrl_note_until(&m->status_written, now, a->resource, a->namespace_, a->name)))
        return false;
    log_debug("progress waits", "controller=%s key=%s resource=%s object=%s/%s wait_s=%.3f",
              j->c->def.name, j->key, a->resource->resource, a->namespace_ ? a->namespace_ : "",
              a->name ? a->name : "", until - now);
    plan_requeue_after(&j->plan, until - now);
    return true;
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
        if (res->code == 0 && is_status_write(a))
            ctrl_note_put(&m->status_written, a->resource, a->namespace_, a->name, "written", NULL,
                          time_wall() + m->opts.progress_interval);
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
    if (res->code == -EBUSY && a->claim_uid && !j->claimed) {
        log_debug("claim check", "controller=%s key=%s resource=%s object=%s/%s", j->c->def.name,
                  j->key, a->resource->resource, a->namespace_ ? a->namespace_ : "", a->name);
        get_object(j, a, claim_done);
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

/* An apply with a claim_uid is first sent with a resourceVersion no object can have
 * (absent_rv): the API server creates an absent object from it, with the apply's field
 * ownership, and refuses to write an existing one (409), whatever it is. Only then is the
 * object read (claim_done), and applied without the precondition if it is claim_uid's. So the
 * claim costs no request for a new object, and leaves no moment between a read that found
 * nothing and the write for someone else's object to appear in. */
static const char absent_rv[] = "18446744073709551615";

/* Sets the precondition of a claimed apply before it is claimed, and takes it away after.
 * Returns 0, -EINVAL (the object has no metadata) or -ENOMEM. */
static int claim_precondition(struct plan_action *a, bool claimed)
{
    cJSON *meta = cJSON_GetObjectItemCaseSensitive(a->body, "metadata");

    if (!cJSON_IsObject(meta))
        return -EINVAL;
    cJSON_DeleteItemFromObjectCaseSensitive(meta, "resourceVersion");
    if (!claimed && !cJSON_AddStringToObject(meta, "resourceVersion", absent_rv))
        return -ENOMEM;
    return 0;
}

/* The live object an action with a claim_uid would write, read after the API server refused
 * to create it: absent or controlled by claim_uid, the action goes ahead; controlled by anyone
 * else (or nobody), it is left untouched. */
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
                     "%s %s/%s exists and is controlled by %s %s; %s leaves it as it is "
                     "(delete or rename it to let %s create its own)",
                     a->resource->kind, a->namespace_, a->name, kind->valuestring,
                     name->valuestring, m->opts.component, m->opts.component);
        else
            snprintf(why, sizeof(why),
                     "%s %s/%s exists and %s does not own it; %s leaves it as it is "
                     "(delete or rename it to let %s create its own)",
                     a->resource->kind, a->namespace_, a->name, m->opts.component,
                     m->opts.component, m->opts.component);
        ctrl_note_put(&m->conflicts, a->resource, a->namespace_, a->name, why, NULL,
                      time_wall() + CTRL_NOTE_TTL);
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
    ctrl_note_put(&m->conflicts, a->resource, a->namespace_, a->name, NULL, NULL, 0);
    j->claimed = true;
    job_next(j);
}

/* Sends the next action, or finishes the job when none is left. */
static void job_next(struct job *j)
{
    const struct manager_opts *o = &j->c->m->opts;
    const struct plan_action *a;
    const char *refused;
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
     * only in that object's namespace (what renders the objects keeps them there in the first
     * place). */
    if (j->ns && (!a->namespace_ || strcmp(a->namespace_, j->ns) != 0)) {
        action_failed(j, a, -EPERM, "refused: a write outside the reconciled object's namespace");
        return;
    }
    /* What the manager's RBAC does not grant would be answered 403: say so before sending
     * it. */
    if (o->refuse && (refused = o->refuse(a))) {
        action_failed(j, a, -EPERM, refused);
        return;
    }
    if (progress_waits(j, a)) {
        j->next++;
        record_events(j, j->next);
        job_next(j);
        return;
    }
    if (a->claim_uid && (r = claim_precondition(&j->plan.actions[j->next], j->claimed)) < 0) {
        action_failed(j, a, r,
                      r == -EINVAL ? "the claimed object has no metadata" : "out of memory");
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
        req.field_manager = o->field_manager;
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
    struct cache *cache = ctrl_cache_of(m, c->def.primary);
    const cJSON *obj = cache ? kube_store_get(ctrl_cache_store(m, cache), j->ns, j->name) : NULL;
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
    while (j->events_done < j->plan.n_events && j->plan.events[j->events_done].after <= succeeded) {
        const struct plan_event *ev = &j->plan.events[j->events_done++];
        kube_recorder_event(j->c->m->recorder, &ref, ev->type, ev->reason, "%s", ev->message);
    }
}

void ctrl_executor_process(void *userdata, const char *key)
{
    struct controller *c = userdata;
    struct manager *m = c->m;
    struct job *j = calloc(1, sizeof(*j));
    struct ctrl_view view;
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
    list_add_head(&c->jobs, &j->link);
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

void ctrl_executor_cancel(struct controller *c)
{
    struct list_node *n, *tmp;

    list_foreach_safe(n, tmp, &c->jobs) {
        struct job *j = list_entry(n, struct job, link);
        if (j->call)
            kube_call_cancel(j->call); /* finishes and frees j */
        else if (j->call_handle)
            j->plan.actions[j->next].call->cancel(j->call_handle); /* the same */
    }
}

void ctrl_executor_abort(struct controller *c)
{
    /* Cancelled requests finish their jobs; with a send hook the jobs are dropped (the hook
     * must have completed every request). */
    while (!list_empty(&c->jobs)) {
        struct job *j = list_entry(list_first(&c->jobs), struct job, link);
        if (j->call) {
            kube_call_cancel(j->call);
        } else if (j->call_handle) {
            j->plan.actions[j->next].call->cancel(j->call_handle);
        } else {
            job_unlink(j);
            job_free(j);
        }
    }
}
