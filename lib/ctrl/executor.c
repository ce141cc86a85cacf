#include "lib/ctrl/manager_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/kube/object.h"
#include "lib/kube/status.h"
#include "lib/util/log.h"
#include "lib/util/strutil.h"

/*
 * The executor: the workqueue hands out a key, the controller's reconcile turns it into a plan,
 * and the plan's actions are sent one after another, on the loop, until one fails or none is
 * left (lib/ctrl/plan.h says what each outcome does to the key). Actions the plan marked as
 * independent (plan_together) are sent at once, as one step: the plan goes on once all of them
 * have succeeded, and when any failed it ends as if the first of them in the plan's order had
 * failed alone, after the others have had their answers.
 */

struct job;

/* One action of the step in flight. */
struct slot {
    struct job *j;
    size_t idx; /* in j->plan.actions */
    struct kube_call *call;
    bool claimed; /* its claim_uid was checked against the live object */
    bool ok;      /* it succeeded */
};

/* The first failure of a step, in the plan's order. */
enum failure { FAIL_NONE, FAIL_ACTION, FAIL_FOUND };

/* One key in flight: its plan and the step being carried out. */
struct job {
    struct controller *c;
    char *key; /* "ns/name"; ns and name point into a second copy */
    char *ns, *name, *split;
    struct plan plan;
    size_t next; /* the first action of the step in flight, or the next step's */
    double started;
    struct slot *slots; /* the step's actions [next, next + n_slots) */
    size_t n_slots, pending;
    enum failure failed; /* of the step in flight, at fail_idx */
    size_t fail_idx;
    int fail_code;
    char *fail_message;
    void *call_handle;     /* a plan call in flight (struct plan_call_ops) */
    double retry_after;    /* the server's Retry-After on the failed action: the least requeue */
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
    free(j->slots);
    free(j->fail_message);
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
static void record_counts(struct job *j);
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

/* The plan's write of the reconciled object's status after action i, or 0. */
static size_t status_action_after(const struct job *j, size_t i)
{
    for (size_t k = j->plan.n_actions; k-- > i + 1;) {
        const struct plan_action *s = &j->plan.actions[k];
        if (!s->call && s->resource == j->c->def.primary && s->subresource &&
            strcmp(s->subresource, "status") == 0 && s->name && strcmp(s->name, j->name) == 0)
            return k;
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
    k = status_action_after(j, (size_t)(a - j->plan.actions));
    if (!k)
        return false;
    j->rejected = true;
    j->next = k;
    return true;
}

/* Ends the job for the failed action a (the first that failed, the plan's actions before it
 * having succeeded), or goes on to the status write that shows a rejection. */
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

/* Every action of the step has its answer: the plan goes on after it, or ends with its first
 * failure in the plan's order. */
static void step_done(struct job *j)
{
    size_t idx = j->fail_idx;

    if (j->failed == FAIL_NONE) {
        if (j->rejected) { /* the status that shows the rejection is written; the key fails */
            job_finish(j, OUTCOME_ERROR);
            return;
        }
        j->next += j->n_slots;
        record_events(j, j->next);
        job_next(j);
        return;
    }
    /* The actions before the failed one succeeded: their Events go out, and so do the counts
     * of writes the step made beside it. */
    record_events(j, idx);
    record_counts(j);
    j->next = idx;
    if (j->failed == FAIL_FOUND) {
        job_finish(j, OUTCOME_CONFLICT);
        return;
    }
    action_failed(j, &j->plan.actions[idx], j->fail_code, j->fail_message);
}

/* Slot s has its answer: failure FAIL_NONE (it succeeded) or what failed, with the server's
 * Retry-After. The step is done once every slot is. */
static void slot_finished(struct slot *s, enum failure failure, int code, const char *message,
                          double retry_after)
{
    struct job *j = s->j;

    s->call = NULL;
    s->ok = failure == FAIL_NONE;
    if (failure != FAIL_NONE && (j->failed == FAIL_NONE || s->idx < j->fail_idx)) {
        free(j->fail_message);
        j->failed = failure;
        j->fail_idx = s->idx;
        j->fail_code = code;
        j->fail_message = message ? strdup(message) : NULL;
        j->retry_after = retry_after;
    }
    if (--j->pending > 0)
        return;
    step_done(j);
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

/* Sends req for slot s through the send hook (tests) or the client. */
static int send_request(struct slot *s, const struct kube_request *req, kube_done_fn done)
{
    struct manager *m = s->j->c->m;

    if (m->opts.send)
        return m->opts.send(m->opts.send_ctx, req, done, s);
    return kube_request_start(m->client, req, done, s, &s->call);
}

/* Reads the object the action of slot s writes; done gets the answer. */
static void get_object(struct slot *s, const struct plan_action *a, kube_done_fn done)
{
    struct kube_request req = {
        .verb = KUBE_GET,
        .resource = a->resource,
        .namespace_ = a->namespace_,
        .name = a->name,
    };

    int r = send_request(s, &req, done);

    if (r < 0)
        slot_finished(s, FAIL_ACTION, r, "the request could not be sent", 0);
}

/* A plan_create_else_read found its object: kept for the next reconcile, which runs at once. */
static void read_done(void *userdata, const struct kube_result *res)
{
    struct slot *s = userdata;
    struct job *j = s->j;
    struct manager *m = j->c->m;
    const struct plan_action *a = &j->plan.actions[s->idx];

    s->call = NULL;
    count_request(m, "get", res);
    if (res->code != 0 || !res->body) {
        slot_finished(s, FAIL_ACTION, res->code ? res->code : -EIO, res->message, res->retry_after);
        return;
    }
    log_info("found an existing object the caches do not hold",
             "controller=%s key=%s resource=%s object=%s/%s", j->c->def.name, j->key,
             a->resource->resource, a->namespace_ ? a->namespace_ : "", a->name);
    ctrl_note_put(&m->found, a->resource, a->namespace_, a->name, NULL,
                  cJSON_Duplicate(res->body, true), time_wall() + CTRL_NOTE_TTL);
    slot_finished(s, FAIL_FOUND, -EEXIST, NULL, 0);
}

/* A write of an object its cache selects (every object of the caller's own kinds; those of
 * other kinds whose labels the cache's selector matches) goes into the cache at once: the
 * key's next reconcile, which may come before the watch event, then writes with the current
 * resourceVersion instead of meeting a 409, and does not make the same write again. An
 * object the write took out of the selection is left to the watch. */
static void observe_write(struct manager *m, const struct plan_action *a,
                          const struct kube_result *res)
{
    struct cache *c;

    if ((a->verb != KUBE_UPDATE && a->verb != KUBE_PATCH) || !res->body ||
        !(c = ctrl_cache_of(m, a->resource)) || !c->inf ||
        kube_obj_selected(res->body, c->spec->selector) != 1)
        return;
    if (kube_informer_observe_write(c->inf, res->body) < 0)
        log_warn("a written object could not be cached", "resource=%s object=%s/%s",
                 a->resource->resource, a->namespace_ ? a->namespace_ : "", a->name ? a->name : "");
}

static void claim_done(void *userdata, const struct kube_result *res);
static void send_action(struct slot *s);

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
    struct slot *s = userdata;
    struct job *j = s->j;
    struct manager *m = j->c->m;
    const struct plan_action *a = &j->plan.actions[s->idx];

    s->call = NULL;
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
        slot_finished(s, FAIL_NONE, 0, NULL, 0);
        return;
    }
    if (res->code == -EEXIST && a->verb == KUBE_CREATE && a->read_if_exists) {
        get_object(s, a, read_done);
        return;
    }
    if (res->code == -EBUSY && a->claim_uid && !s->claimed) {
        log_debug("claim check", "controller=%s key=%s resource=%s object=%s/%s", j->c->def.name,
                  j->key, a->resource->resource, a->namespace_ ? a->namespace_ : "", a->name);
        get_object(s, a, claim_done);
        return;
    }
    slot_finished(s, FAIL_ACTION, res->code, res->message, res->retry_after);
}

static void call_done(void *userdata, int code, const char *message)
{
    struct slot *s = userdata;
    struct job *j = s->j;
    const struct plan_action *a = &j->plan.actions[s->idx];

    j->call_handle = NULL;
    if (code == 0)
        log_debug("call done", "controller=%s key=%s call=%s why=%s", j->c->def.name, j->key,
                  a->call->name, a->why);
    slot_finished(s, code == 0 ? FAIL_NONE : FAIL_ACTION, code, message, 0);
}

static void call_start(struct slot *s, const struct plan_action *a)
{
    struct job *j = s->j;
    int r;

    log_debug("call", "controller=%s key=%s step=%zu/%zu call=%s why=%s", j->c->def.name, j->key,
              s->idx + 1, j->plan.n_actions, a->call->name, a->why);
    r = a->call->start(a->call_arg, j->c->m->loop, call_done, s, &j->call_handle);
    if (r < 0)
        slot_finished(s, FAIL_ACTION, r, "the call could not be started", 0);
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
    struct slot *s = userdata;
    struct job *j = s->j;
    struct manager *m = j->c->m;
    const struct plan_action *a = &j->plan.actions[s->idx];
    const cJSON *ref;
    char why[512];

    s->call = NULL;
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
        slot_finished(s, FAIL_ACTION, -EEXIST, why, 0);
        return;
    }
    if (res->code != -ENOENT) {
        slot_finished(s, FAIL_ACTION, res->code, res->message, res->retry_after);
        return;
    }
claimed:
    ctrl_note_put(&m->conflicts, a->resource, a->namespace_, a->name, NULL, NULL, 0);
    s->claimed = true;
    send_action(s);
}

/* Sends the request of slot s's action (a request, not a call). */
static void send_action(struct slot *s)
{
    struct job *j = s->j;
    const struct manager_opts *o = &j->c->m->opts;
    struct plan_action *a = &j->plan.actions[s->idx];
    struct kube_request req;
    int r;

    if (a->claim_uid && (r = claim_precondition(a, s->claimed)) < 0) {
        slot_finished(s, FAIL_ACTION, r,
                      r == -EINVAL ? "the claimed object has no metadata" : "out of memory", 0);
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
              j->c->def.name, j->key, s->idx + 1, j->plan.n_actions, verb_name(a),
              a->resource->resource, a->namespace_ ? a->namespace_ : "", a->namespace_ ? "/" : "",
              a->name ? a->name : "", a->why);
    r = send_request(s, &req, action_done);
    if (r < 0)
        slot_finished(s, FAIL_ACTION, r, "the request could not be sent", 0);
}

/* Why the manager does not send action a of j, or NULL: the last line of defence of tenant
 * isolation (a reconcile of a namespaced object writes only in that object's namespace; what
 * renders the objects keeps them there in the first place), and what the manager's RBAC does
 * not grant, which would be answered 403. */
static const char *refusal(const struct job *j, const struct plan_action *a)
{
    const struct manager_opts *o = &j->c->m->opts;

    if (a->call)
        return NULL;
    if (j->ns && (!a->namespace_ || strcmp(a->namespace_, j->ns) != 0))
        return "refused: a write outside the reconciled object's namespace";
    return o->refuse ? o->refuse(a) : NULL;
}

/* Whether action i+1 goes in the same step as action i: the plan marked i as sent together
 * with the next (plan_together), and neither is a call or a write of progress. */
static bool together(const struct plan *p, size_t i)
{
    const struct plan_action *a = &p->actions[i], *b = &p->actions[i + 1];

    return i + 1 < p->n_actions && a->with_next && !a->call && !b->call && !b->progress;
}

/* Starts the next step (an action, or actions the plan marked to go together), or finishes
 * the job when none is left. */
static void job_next(struct job *j)
{
    const struct plan_action *a;
    const char *refused;
    struct slot *slots;
    size_t end, n;

    if (j->next >= j->plan.n_actions) {
        job_finish(j, OUTCOME_SUCCESS);
        return;
    }
    a = &j->plan.actions[j->next];
    if ((refused = refusal(j, a))) {
        action_failed(j, a, -EPERM, refused);
        return;
    }
    if (progress_waits(j, a)) {
        j->next++;
        record_events(j, j->next);
        job_next(j);
        return;
    }
    end = j->next + 1;
    while (!j->rejected && end < j->plan.n_actions && together(&j->plan, end - 1) &&
           !refusal(j, &j->plan.actions[end]))
        end++;
    n = end - j->next;
    slots = realloc(j->slots, n * sizeof(*slots));
    if (!slots) {
        action_failed(j, a, -ENOMEM, "out of memory");
        return;
    }
    j->slots = slots;
    j->n_slots = j->pending = n;
    j->failed = FAIL_NONE;
    free(j->fail_message);
    j->fail_message = NULL;
    for (size_t i = 0; i < n; i++)
        slots[i] = (struct slot){.j = j, .idx = j->next + i};
    if (a->call) {
        call_start(&slots[0], a);
        return;
    }
    /* The last slot's answer may end the step, and the job, before this returns. */
    for (size_t i = 0; i < n; i++)
        send_action(&slots[i]);
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
        if (ev->recorded)
            continue;
        if (ev->counted)
            kube_recorder_event(j->c->m->recorder, &ref, ev->type, ev->reason, "%zu %s",
                                ev->after - ev->counts_from, ev->message);
        else
            kube_recorder_event(j->c->m->recorder, &ref, ev->type, ev->reason, "%s", ev->message);
    }
}

/* The step in flight [next, next + n_slots) failed: the counted Events it ends (plan_event_count)
 * are recorded with the number of their writes that succeeded, when there are any. The actions
 * counted before the step all succeeded. */
static void record_counts(struct job *j)
{
    size_t end = j->next + j->n_slots;

    for (size_t i = j->events_done; i < j->plan.n_events; i++) {
        struct plan_event *ev = &j->plan.events[i];
        size_t n = 0;

        if (!ev->counted || ev->recorded || ev->after <= j->next || ev->after > end)
            continue;
        n = ev->counts_from < j->next ? j->next - ev->counts_from : 0;
        for (size_t k = 0; k < j->n_slots; k++)
            if (j->slots[k].ok && j->slots[k].idx >= ev->counts_from && j->slots[k].idx < ev->after)
                n++;
        ev->recorded = true;
        if (n > 0) {
            struct kube_event_ref ref = job_ref(j);
            kube_recorder_event(j->c->m->recorder, &ref, ev->type, ev->reason, "%zu %s", n,
                                ev->message);
        }
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
    /* The plan owns what it sends: nothing read from the caches is in use any more. */
    manager_trim_caches(m);
}

/* Cancels what j has in flight: each cancelled request or call ends its slot at once, and the
 * last one ends the job (and frees it). Returns false when nothing was in flight. */
static bool job_cancel(struct job *j)
{
    struct slot *slots = j->slots;
    size_t n = j->n_slots, left = j->pending;
    bool cancelled = false;

    if (j->call_handle) {
        j->plan.actions[j->next].call->cancel(j->call_handle); /* finishes and frees j */
        return true;
    }
    for (size_t i = 0; i < n && left; i++)
        if (slots[i].call) {
            cancelled = true;
            left--;
            kube_call_cancel(slots[i].call);
        }
    return cancelled;
}

void ctrl_executor_cancel(struct controller *c)
{
    struct list_node *n, *tmp;

    list_foreach_safe(n, tmp, &c->jobs) {
        job_cancel(list_entry(n, struct job, link));
    }
}

void ctrl_executor_abort(struct controller *c)
{
    /* Cancelled requests finish their jobs; with a send hook the jobs are dropped (the hook
     * must have completed every request). */
    while (!list_empty(&c->jobs)) {
        struct job *j = list_entry(list_first(&c->jobs), struct job, link);
        if (job_cancel(j))
            continue;
        job_unlink(j);
        job_free(j);
    }
}
