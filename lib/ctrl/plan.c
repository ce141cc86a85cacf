#include "lib/ctrl/plan.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util/buf.h"

void plan_init(struct plan *p)
{
    memset(p, 0, sizeof(*p));
}

static void action_done(struct plan_action *a)
{
    free(a->namespace_);
    free(a->name);
    free(a->subresource);
    cJSON_Delete(a->body);
    free(a->precondition_uid);
    free(a->claim_uid);
    free(a->why);
    if (a->call && a->call->free)
        a->call->free(a->call_arg);
}

void plan_done(struct plan *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n_actions; i++)
        action_done(&p->actions[i]);
    free(p->actions);
    for (size_t i = 0; i < p->n_events; i++) {
        free(p->events[i].reason);
        free(p->events[i].message);
    }
    free(p->events);
    memset(p, 0, sizeof(*p));
}

static char *vformat(const char *fmt, va_list ap)
{
    struct buf b = BUF_INIT;

    if (buf_vprintf(&b, fmt, ap) < 0) {
        buf_done(&b);
        return NULL;
    }
    return buf_steal(&b);
}

static const char *meta_str(const cJSON *obj, const char *field)
{
    const cJSON *v =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"), field);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Appends an action; takes body; fills strings. */
static int push(struct plan *p, const struct plan_action *tmpl, const char *ns, const char *name,
                const char *sub, const char *uid, const char *fmt, va_list ap)
{
    struct plan_action a = *tmpl;

    a.namespace_ = ns ? strdup(ns) : NULL;
    a.name = name ? strdup(name) : NULL;
    a.subresource = sub ? strdup(sub) : NULL;
    a.precondition_uid = uid ? strdup(uid) : NULL;
    a.why = vformat(fmt, ap);
    if ((ns && !a.namespace_) || (name && !a.name) || (sub && !a.subresource) ||
        (uid && !a.precondition_uid) || !a.why)
        goto oom;
    if (p->n_actions == p->cap_actions) {
        size_t n = p->cap_actions ? p->cap_actions * 2 : 8;
        struct plan_action *na = realloc(p->actions, n * sizeof(*na));
        if (!na)
            goto oom;
        p->actions = na;
        p->cap_actions = n;
    }
    p->actions[p->n_actions++] = a;
    return 0;
oom:
    action_done(&a);
    return -ENOMEM;
}

int plan_create(struct plan *p, const struct kube_resource *res, cJSON *obj, const char *why, ...)
{
    struct plan_action a = {.verb = KUBE_CREATE, .resource = res, .body = obj};
    va_list ap;
    int r;

    va_start(ap, why);
    r = push(p, &a, meta_str(obj, "namespace"), meta_str(obj, "name"), NULL, NULL, why, ap);
    va_end(ap);
    return r;
}

int plan_apply(struct plan *p, const struct kube_resource *res, cJSON *obj, const char *why, ...)
{
    struct plan_action a = {.verb = KUBE_PATCH,
                            .patch_type = KUBE_PATCH_APPLY,
                            .force = true,
                            .resource = res,
                            .body = obj};
    va_list ap;
    int r;

    va_start(ap, why);
    r = push(p, &a, meta_str(obj, "namespace"), meta_str(obj, "name"), NULL, NULL, why, ap);
    va_end(ap);
    return r;
}

int plan_create_else_read(struct plan *p, const struct kube_resource *res, cJSON *obj,
                          const char *why, ...)
{
    struct plan_action a = {
        .verb = KUBE_CREATE, .resource = res, .body = obj, .read_if_exists = true};
    va_list ap;
    int r;

    va_start(ap, why);
    r = push(p, &a, meta_str(obj, "namespace"), meta_str(obj, "name"), NULL, NULL, why, ap);
    va_end(ap);
    return r;
}

int plan_apply_claimed(struct plan *p, const struct kube_resource *res, cJSON *obj,
                       const char *owner_uid, const char *why, ...)
{
    struct plan_action a = {.verb = KUBE_PATCH,
                            .patch_type = KUBE_PATCH_APPLY,
                            .force = true,
                            .resource = res,
                            .body = obj};
    char *uid = owner_uid ? strdup(owner_uid) : NULL;
    va_list ap;
    int r;

    if (owner_uid && !uid) {
        cJSON_Delete(obj);
        return -ENOMEM;
    }
    va_start(ap, why);
    r = push(p, &a, meta_str(obj, "namespace"), meta_str(obj, "name"), NULL, NULL, why, ap);
    va_end(ap);
    if (r < 0) {
        free(uid);
        return r;
    }
    p->actions[p->n_actions - 1].claim_uid = uid;
    return 0;
}

int plan_merge_patch(struct plan *p, const struct kube_resource *res, const char *ns,
                     const char *name, const char *subresource, cJSON *patch, const char *why, ...)
{
    struct plan_action a = {
        .verb = KUBE_PATCH, .patch_type = KUBE_PATCH_MERGE, .resource = res, .body = patch};
    va_list ap;
    int r;

    va_start(ap, why);
    r = push(p, &a, ns, name, subresource, NULL, why, ap);
    va_end(ap);
    return r;
}

int plan_update_status(struct plan *p, const struct kube_resource *res, cJSON *obj, const char *why,
                       ...)
{
    struct plan_action a = {.verb = KUBE_UPDATE, .resource = res, .body = obj};
    va_list ap;
    int r;

    va_start(ap, why);
    r = push(p, &a, meta_str(obj, "namespace"), meta_str(obj, "name"), "status", NULL, why, ap);
    va_end(ap);
    return r;
}

int plan_update_status_progress(struct plan *p, const struct kube_resource *res, cJSON *obj,
                                const char *why, ...)
{
    struct plan_action a = {.verb = KUBE_UPDATE, .resource = res, .body = obj, .progress = true};
    va_list ap;
    int r;

    va_start(ap, why);
    r = push(p, &a, meta_str(obj, "namespace"), meta_str(obj, "name"), "status", NULL, why, ap);
    va_end(ap);
    return r;
}

int plan_delete(struct plan *p, const struct kube_resource *res, const char *ns, const char *name,
                const char *uid, const char *why, ...)
{
    struct plan_action a = {.verb = KUBE_DELETE, .resource = res};
    va_list ap;
    int r;

    va_start(ap, why);
    r = push(p, &a, ns, name, NULL, uid, why, ap);
    va_end(ap);
    return r;
}

int plan_event(struct plan *p, enum kube_event_type type, const char *reason, const char *fmt, ...)
{
    struct plan_event ev = {.type = type, .after = p->n_actions};
    va_list ap;

    va_start(ap, fmt);
    ev.message = vformat(fmt, ap);
    va_end(ap);
    ev.reason = strdup(reason);
    if (!ev.message || !ev.reason)
        goto oom;
    if (p->n_events == p->cap_events) {
        size_t n = p->cap_events ? p->cap_events * 2 : 4;
        struct plan_event *ne = realloc(p->events, n * sizeof(*ne));
        if (!ne)
            goto oom;
        p->events = ne;
        p->cap_events = n;
    }
    p->events[p->n_events++] = ev;
    return 0;
oom:
    free(ev.message);
    free(ev.reason);
    return -ENOMEM;
}

int plan_event_count(struct plan *p, size_t first, enum kube_event_type type, const char *reason,
                     const char *what)
{
    int r;

    /* The runtime counts every action of the range it got past as made: a progress write it
     * left out would be counted. */
    for (size_t i = first; i < p->n_actions; i++)
        if (p->actions[i].progress)
            return -EINVAL;
    r = plan_event(p, type, reason, "%s", what);

    if (r == 0) {
        p->events[p->n_events - 1].counted = true;
        p->events[p->n_events - 1].counts_from = first < p->n_actions ? first : p->n_actions;
    }
    return r;
}

void plan_events_after_all(struct plan *p, size_t first, size_t end)
{
    for (size_t i = first; i < end && i < p->n_events; i++)
        p->events[i].after = p->n_actions;
}

void plan_events_drop(struct plan *p, size_t first, size_t end)
{
    if (end > p->n_events)
        end = p->n_events;
    if (first >= end)
        return;
    for (size_t i = first; i < end; i++) {
        free(p->events[i].reason);
        free(p->events[i].message);
    }
    memmove(&p->events[first], &p->events[end], (p->n_events - end) * sizeof(p->events[0]));
    p->n_events -= end - first;
}

void plan_requeue_after(struct plan *p, double seconds)
{
    if (seconds <= 0)
        return;
    if (p->requeue_after <= 0 || seconds < p->requeue_after)
        p->requeue_after = seconds;
}

int plan_call(struct plan *p, const struct plan_call_ops *ops, void *arg, const char *why, ...)
{
    struct plan_action a = {.call = ops, .call_arg = arg};
    va_list ap;
    int r;

    va_start(ap, why);
    r = push(p, &a, NULL, NULL, NULL, NULL, why, ap);
    va_end(ap);
    return r;
}

void plan_together(struct plan *p, size_t first)
{
    for (size_t i = first; i + 1 < p->n_actions; i++)
        p->actions[i].with_next = true;
}

int plan_append(struct plan *dst, struct plan *src)
{
    size_t need = dst->n_actions + src->n_actions;

    if (src->n_actions == 0)
        return 0;
    if (need > dst->cap_actions) {
        struct plan_action *na = realloc(dst->actions, need * sizeof(*na));
        if (!na)
            return -ENOMEM;
        dst->actions = na;
        dst->cap_actions = need;
    }
    memcpy(dst->actions + dst->n_actions, src->actions, src->n_actions * sizeof(*src->actions));
    dst->n_actions = need;
    src->n_actions = 0;
    return 0;
}

int plan_delete_orphan(struct plan *p, const struct kube_resource *res, const char *ns,
                       const char *name, const char *uid, const char *why, ...)
{
    struct plan_action a = {.verb = KUBE_DELETE, .resource = res, .propagation = "Orphan"};
    va_list ap;
    int r;

    va_start(ap, why);
    r = push(p, &a, ns, name, NULL, uid, why, ap);
    va_end(ap);
    return r;
}
