#include "controllers/status.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/conditions.h"
#include "api/status.h"

#define PAUSED_ANNOTATION "cluster.x-k8s.io/paused"

static const char *jstr(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A copy of status without its conditions' messages, or NULL. */
static cJSON *without_messages(const cJSON *status)
{
    cJSON *copy = cJSON_Duplicate(status, true), *c;

    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(copy, "conditions"))
        cJSON_DeleteItemFromObjectCaseSensitive(c, "message");
    return copy;
}

/* Whether new_status differs from old_status in its conditions' messages only: progress a
 * user reads ("etcd 1/3 updated"), not a transition of a condition's status or reason. */
static bool progress_only(const cJSON *new_status, const cJSON *old_status)
{
    cJSON *a, *b;
    bool same;

    if (!old_status)
        return false;
    a = without_messages(new_status);
    b = without_messages(old_status);
    same = a && b && api_status_equal(a, b);
    cJSON_Delete(a);
    cJSON_Delete(b);
    return same;
}

int status_plan_write(struct plan *p, const struct kube_resource *res, const cJSON *obj,
                      cJSON *new_status, const cJSON *old_status)
{
    cJSON *body;
    bool progress;

    if (!new_status)
        return -ENOMEM;
    if (api_status_equal(new_status, old_status)) {
        cJSON_Delete(new_status);
        return 0;
    }
    progress = progress_only(new_status, old_status);
    body = cJSON_Duplicate(obj, true);
    if (!body) {
        cJSON_Delete(new_status);
        return -ENOMEM;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(body, "status");
    if (!cJSON_AddItemToObject(body, "status", new_status)) {
        cJSON_Delete(new_status);
        cJSON_Delete(body);
        return -ENOMEM;
    }
    if ((progress ? plan_update_status_progress(p, res, body, "%s %s/%s: progress", res->kind,
                                                kube_obj_namespace(obj), kube_obj_name(obj))
                  : plan_update_status(p, res, body, "%s %s/%s: status changed", res->kind,
                                       kube_obj_namespace(obj), kube_obj_name(obj))) < 0)
        return -ENOMEM;
    return 1;
}

int status_condition(struct api_conditions *cs, const char *type, const char *status,
                     const char *severity, const char *reason, int64_t generation, double now,
                     const char *fmt, ...)
{
    char msg[2048];
    struct api_condition *c;
    va_list ap;
    int r;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* No empty message: kube-apiserver 1.20 rejects "" in these CRDs' status as null. */
    r = api_conditions_set(cs, type, status, reason, msg[0] ? msg : NULL, generation, now);
    if (r < 0)
        return r;
    c = (struct api_condition *)api_conditions_get(cs, type);
    if (strcmp(status, API_CONDITION_FALSE) != 0)
        severity = NULL;
    if (!c || (!c->severity && !severity) ||
        (c->severity && severity && strcmp(c->severity, severity) == 0))
        return r;
    free(c->severity);
    c->severity = NULL;
    if (severity && !(c->severity = strdup(severity)))
        return -ENOMEM;
    return 1;
}

static bool has_paused_annotation(const cJSON *obj)
{
    return obj && kube_obj_annotation(obj, PAUSED_ANNOTATION) != NULL;
}

bool status_paused(const cJSON *obj, const cJSON *cl)
{
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(cl, "spec");

    return has_paused_annotation(obj) || has_paused_annotation(cl) ||
           cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(spec, "paused"));
}

static int num(const cJSON *o, const char *key, int dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

    return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 1e9 ? (int)v->valuedouble
                                                                            : dflt;
}

void status_statefulset(const cJSON *sts, const char *hash, struct status_sts *ret)
{
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(sts, "spec");
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(sts, "status");
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(sts, "metadata");
    const cJSON *tmpl = cJSON_GetObjectItemCaseSensitive(spec, "template");
    const char *cur = jstr(st, "currentRevision"), *upd = jstr(st, "updateRevision");
    const cJSON *ann, *vols, *v;
    int gen = num(meta, "generation", 0), observed = num(st, "observedGeneration", 0);

    memset(ret, 0, sizeof(*ret));
    if (!cJSON_IsObject(sts))
        return;
    ret->exists = true;
    ret->replicas = num(spec, "replicas", 1);
    ret->status_replicas = num(st, "replicas", 0);
    ret->ready = num(st, "readyReplicas", 0);
    ret->updated = num(st, "updatedReplicas", 0);
    ret->available = num(st, "availableReplicas", 0);
    ann = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(tmpl, "metadata"),
                                           "annotations");
    ret->template_hash = jstr(ann, "nestcp.x-k8s.io/config-hash");
    vols =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(tmpl, "spec"), "volumes");
    if (!cJSON_IsArray(vols))
        vols = NULL;
    cJSON_ArrayForEach(v, vols) {
        const char *n = jstr(v, "name");
        if (n && strcmp(n, "certs") == 0)
            ret->certs = jstr(cJSON_GetObjectItemCaseSensitive(v, "secret"), "secretName");
    }
    ret->complete = hash && ret->template_hash && strcmp(hash, ret->template_hash) == 0 &&
                    observed >= gen && ret->status_replicas == ret->replicas &&
                    ret->ready == ret->replicas && ret->updated == ret->replicas && cur && upd &&
                    strcmp(cur, upd) == 0;
}

bool status_deleting(const cJSON *obj)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(meta, "deletionTimestamp");

    return ts && !cJSON_IsNull(ts);
}

bool status_pod_ready(const cJSON *pod)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(
                              cJSON_GetObjectItemCaseSensitive(pod, "status"), "conditions")) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(c, "type");
        const cJSON *status = cJSON_GetObjectItemCaseSensitive(c, "status");
        if (cJSON_IsString(type) && cJSON_IsString(status) &&
            strcmp(type->valuestring, "Ready") == 0)
            return strcmp(status->valuestring, "True") == 0;
    }
    return false;
}

/* ---- objects that do not parse ---- */

static int conditions_from_json(const cJSON *arr, struct api_conditions *ret)
{
    const cJSON *c;
    struct api_condition *items;
    int n = cJSON_GetArraySize(arr), i = 0;

    memset(ret, 0, sizeof(*ret));
    if (!cJSON_IsArray(arr) || n == 0)
        return 0;
    items = calloc((size_t)n, sizeof(*items));
    if (!items)
        return -ENOMEM;
    ret->items = items;
    cJSON_ArrayForEach(c, arr) {
        const cJSON *g = cJSON_GetObjectItemCaseSensitive(c, "observedGeneration");
        struct api_condition *d = &items[i];
        const char *f[6] = {jstr(c, "type"),   jstr(c, "status"),  jstr(c, "severity"),
                            jstr(c, "reason"), jstr(c, "message"), jstr(c, "lastTransitionTime")};
        char **t[6] = {&d->type,   &d->status,  &d->severity,
                       &d->reason, &d->message, &d->last_transition_time};

        if (!f[0] || !f[1])
            continue;
        for (int k = 0; k < 6; k++)
            if (f[k] && !(*t[k] = strdup(f[k])))
                goto oom;
        d->observed_generation = cJSON_IsNumber(g) ? (int64_t)g->valuedouble : 0;
        ret->n = (size_t)++i;
    }
    return 0;
oom:
    ret->n = (size_t)i + 1;
    api_conditions_done(ret);
    return -ENOMEM;
}

static cJSON *conditions_to_json(const struct api_conditions *cs)
{
    cJSON *arr = cJSON_CreateArray();

    for (size_t i = 0; arr && i < cs->n; i++) {
        const struct api_condition *c = &cs->items[i];
        const char *keys[6] = {"type",   "status",  "severity",
                               "reason", "message", "lastTransitionTime"};
        const char *vals[6] = {c->type,   c->status,  c->severity,
                               c->reason, c->message, c->last_transition_time};
        cJSON *j = cJSON_CreateObject();

        if (!j || !cJSON_AddItemToArray(arr, j)) {
            cJSON_Delete(j);
            goto oom;
        }
        for (int k = 0; k < 6; k++)
            if (vals[k] && !cJSON_AddStringToObject(j, keys[k], vals[k]))
                goto oom;
        if (c->observed_generation &&
            !cJSON_AddNumberToObject(j, "observedGeneration", (double)c->observed_generation))
            goto oom;
    }
    return arr;
oom:
    cJSON_Delete(arr);
    return NULL;
}

int status_plan_invalid(struct plan *p, const struct kube_resource *res, const cJSON *obj,
                        const char *reason, const char *message, const char *phase, double now)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(meta, "generation");
    const cJSON *old = cJSON_GetObjectItemCaseSensitive(obj, "status");
    int64_t gen = cJSON_IsNumber(g) ? (int64_t)g->valuedouble : 0;
    struct api_conditions cs;
    cJSON *st = NULL, *arr;
    int r;

    r = conditions_from_json(cJSON_GetObjectItemCaseSensitive(old, "conditions"), &cs);
    if (r < 0)
        return r;
    r = status_condition(&cs, "Ready", API_CONDITION_FALSE, STATUS_SEVERITY_ERROR, reason, gen, now,
                         "%s", message);
    if (r < 0)
        goto out;
    r = -ENOMEM;
    st = cJSON_IsObject(old) ? cJSON_Duplicate(old, true) : cJSON_CreateObject();
    arr = conditions_to_json(&cs);
    if (!st || !arr) {
        cJSON_Delete(arr);
        goto out;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(st, "conditions");
    cJSON_DeleteItemFromObjectCaseSensitive(st, "observedGeneration");
    if (!cJSON_AddItemToObject(st, "conditions", arr)) {
        cJSON_Delete(arr);
        goto out;
    }
    if (!cJSON_AddNumberToObject(st, "observedGeneration", (double)gen))
        goto out;
    if (phase) {
        cJSON_DeleteItemFromObjectCaseSensitive(st, "phase");
        if (!cJSON_AddStringToObject(st, "phase", phase))
            goto out;
    }
    r = status_plan_write(p, res, obj, st, cJSON_IsObject(old) ? old : NULL);
    st = NULL;
    if (r > 0)
        r = plan_event(p, KUBE_EVENT_WARNING, reason, "%s", message) < 0 ? -ENOMEM : 1;
out:
    cJSON_Delete(st);
    api_conditions_done(&cs);
    return r;
}

bool status_condition_current(const cJSON *obj, const char *type)
{
    const cJSON *gen = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "generation");
    const cJSON *c;

    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(
                              cJSON_GetObjectItemCaseSensitive(obj, "status"), "conditions")) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(c, "type");
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(c, "status");
        const cJSON *og = cJSON_GetObjectItemCaseSensitive(c, "observedGeneration");
        if (!cJSON_IsString(t) || strcmp(t->valuestring, type) != 0)
            continue;
        if (!cJSON_IsString(s) || strcmp(s->valuestring, "True") != 0)
            return false;
        return !cJSON_IsNumber(gen) || !cJSON_IsNumber(og) || og->valuedouble == gen->valuedouble;
    }
    return false;
}
