/* The component's rendered objects (controllers/comp.h): the kinds packages may render, a
 * server-side apply of what differs from the cache unless someone else's object holds the
 * name, the deletion of what is no longer rendered, and a failed roll held back at the last
 * good revision. */

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "controllers/comp.h"
#include "controllers/lookup.h"
#include "controllers/rollhealth.h"
#include "controllers/status.h"
#include "lib/kube/store.h"
#include "lib/render/transform.h"

/* What packages may render, in the order their objects are deleted with a control plane. */
static const struct kube_resource *const rendered[] = {&KUBE_STATEFULSETS, &KUBE_SERVICES,
                                                       &KUBE_CONFIGMAPS, &KUBE_NETWORKPOLICIES};

const struct kube_resource *nestedcomponent_rendered(size_t i)
{
    return i < sizeof(rendered) / sizeof(*rendered) ? rendered[i] : NULL;
}

const struct kube_resource *nestedcomponent_rendered_resource(const char *kind)
{
    for (size_t i = 0; kind && i < sizeof(rendered) / sizeof(*rendered); i++)
        if (strcmp(kind, rendered[i]->kind) == 0)
            return rendered[i];
    return NULL;
}

const struct kube_store *nestedcomponent_rendered_store(const struct cache_view *view,
                                                        const struct kube_resource *res)
{
    if (res == &KUBE_SERVICES)
        return view->services;
    if (res == &KUBE_STATEFULSETS)
        return view->statefulsets;
    if (res == &KUBE_CONFIGMAPS)
        return view->configmaps;
    if (res == &KUBE_NETWORKPOLICIES)
        return view->networkpolicies;
    return NULL;
}

static const struct kube_resource *resource_of(const cJSON *obj)
{
    return nestedcomponent_rendered_resource(str(obj, "kind"));
}

static const char *config_hash(const cJSON *obj)
{
    return kube_obj_annotation(obj, RENDER_CONFIG_HASH_ANNOTATION);
}

/* Whether a rendered object's name is taken by an object the component does not control:
 * one in the cache with another controller, or one the runtime found live
 * (cache_view_conflict). Says which in x->conflict. */
static bool find_conflict(struct comp *x, const cJSON *objs)
{
    const char *uid = kube_obj_uid(x->obj);
    const cJSON *o;

    cJSON_ArrayForEach(o, objs) {
        const struct kube_resource *res = resource_of(o);
        const struct kube_store *store = res ? nestedcomponent_rendered_store(x->view, res) : NULL;
        const char *name = kube_obj_name(o), *why;
        const cJSON *live = store ? kube_store_get(store, x->ns, name) : NULL;

        if (!res)
            continue;
        if (live && !lookup_controlled_by_uid(live, uid)) {
            const cJSON *ref = kube_obj_controller_ref(live);
            snprintf(x->conflict, sizeof(x->conflict),
                     "%s %s/%s exists and is controlled by %s %s, not by %s %s; nestcp leaves it "
                     "as it is (delete or rename it to let nestcp create its own)",
                     res->kind, x->ns, name, ref && str(ref, "kind") ? str(ref, "kind") : "no",
                     ref && str(ref, "name") ? str(ref, "name") : "owner", kind_name(x), x->name);
            return true;
        }
        if (!live && (why = cache_view_conflict(x->view, res, x->ns, name))) {
            snprintf(x->conflict, sizeof(x->conflict), "%s", why);
            return true;
        }
    }
    return false;
}

/* The cached object of the rendered object o, or NULL. */
static const cJSON *cached_of(const struct comp *x, const struct kube_resource *res, const cJSON *o)
{
    const struct kube_store *store = nestedcomponent_rendered_store(x->view, res);

    return store ? kube_store_get(store, x->ns, kube_obj_name(o)) : NULL;
}

/* Plans the claimed applies of the rendered objects the caches do not hold, other than the
 * StatefulSet (a Service, a ConfigMap, a NetworkPolicy: what its pods use), sent together;
 * they are taken out of objs. */
static int apply_missing_first(struct comp *x, cJSON *objs)
{
    size_t first = x->plan->n_actions;
    cJSON *o = objs ? objs->child : NULL, *next;

    for (; o; o = next) {
        const struct kube_resource *res = resource_of(o);
        next = o->next;
        if (!res || res == &KUBE_STATEFULSETS || cached_of(x, res, o))
            continue;
        cJSON_DetachItemViaPointer(objs, o);
        if (plan_apply_claimed(x->plan, res, o, kube_obj_uid(x->obj), "%s %s/%s: missing",
                               res->kind, x->ns, kube_obj_name(o)) < 0)
            return -ENOMEM;
    }
    plan_together(x->plan, first);
    return 0;
}

/* Plans a server-side apply of every rendered object that differs from the cache; one the
 * cache does not hold is applied only if it is absent or the component's (plan_apply_claimed).
 * The missing objects other than the StatefulSet go first, together; the StatefulSet, whose
 * pods use them, after them. Nothing at all when a name is taken (find_conflict). */
int comp_apply_changed(struct comp *x, cJSON *objs)
{
    cJSON *o;

    if (find_conflict(x, objs))
        return 0;
    if (apply_missing_first(x, objs) < 0)
        return -ENOMEM;
    while ((o = cJSON_DetachItemFromArray(objs, 0))) {
        const struct kube_resource *res = resource_of(o);
        const cJSON *live;
        const char *want = config_hash(o), *have;

        if (!res) {
            cJSON_Delete(o);
            return -EINVAL;
        }
        live = cached_of(x, res, o);
        have = live ? config_hash(live) : NULL;
        if (live && want && have && strcmp(want, have) == 0) {
            cJSON_Delete(o);
            continue;
        }
        /* Moving etcd's members to claims: volumeClaimTemplates cannot change in place, so
         * the StatefulSet is replaced by one with claims, which adopts the running pods.
         * Deleted orphaning them once every member votes; created when it is gone. */
        if (live && res == &KUBE_STATEFULSETS && x->moving_to_claims &&
            cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(live, "spec"), "volumeClaimTemplates")) == 0) {
            int r = 0;
            if (x->members_settled && !status_deleting(live))
                r = plan_delete_orphan(x->plan, res, x->ns, kube_obj_name(live), kube_obj_uid(live),
                                       "StatefulSet %s/%s: replaced by one with a claim per "
                                       "member; its pods stay and are adopted",
                                       x->ns, kube_obj_name(live));
            cJSON_Delete(o);
            if (r < 0)
                return -ENOMEM;
            continue;
        }
        if ((live ? plan_apply(x->plan, res, o, "%s %s/%s: rendered configuration changed",
                               res->kind, x->ns, kube_obj_name(o))
                  : plan_apply_claimed(x->plan, res, o, kube_obj_uid(x->obj), "%s %s/%s: missing",
                                       res->kind, x->ns, kube_obj_name(o))) < 0)
            return -ENOMEM;
    }
    return 0;
}

/* What the component controls of a rendered kind but renders no more (a NetworkPolicy once
 * spec.networkPolicy.enabled is false) is deleted. */
struct unrendered {
    struct comp *x;
    const struct kube_resource *res;
    const cJSON *objs; /* what is rendered now */
    int r;
};

static bool delete_unrendered(void *userdata, const cJSON *live)
{
    struct unrendered *u = userdata;
    const char *name = kube_obj_name(live);
    const cJSON *o;

    if (!name || status_deleting(live))
        return true;
    cJSON_ArrayForEach(o, u->objs) {
        if (resource_of(o) == u->res && strcmp(kube_obj_name(o), name) == 0)
            return true;
    }
    if (plan_delete(u->x->plan, u->res, u->x->ns, name, kube_obj_uid(live),
                    "%s %s/%s: no longer rendered", u->res->kind, u->x->ns, name) < 0) {
        u->r = -ENOMEM;
        return false;
    }
    return true;
}

int comp_delete_unrendered(struct comp *x, const cJSON *objs)
{
    const char *uid = kube_obj_uid(x->obj);
    const struct kube_resource *res;

    for (size_t i = 0; uid && (res = nestedcomponent_rendered(i)); i++) {
        const struct kube_store *store = nestedcomponent_rendered_store(x->view, res);
        struct unrendered u = {x, res, objs, 0};
        if (store)
            kube_store_foreach_owned(store, uid, delete_unrendered, &u);
        if (u.r < 0)
            return u.r;
    }
    return 0;
}

/* ---- a failed roll, held back ---- */

struct rollback {
    struct comp *x;
    const char *current; /* the StatefulSet's currentRevision: the last good one */
    int r;
};

static bool delete_failed_pod(void *userdata, const cJSON *pod)
{
    struct rollback *rb = userdata;
    struct comp *x = rb->x;
    const char *name = kube_obj_name(pod);

    if (status_deleting(pod))
        return true;
    if (plan_delete(x->plan, &KUBE_PODS, x->ns, name, kube_obj_uid(pod),
                    "Pod %s/%s: it runs a failed revision", x->ns, name) < 0 ||
        plan_event(x->plan, KUBE_EVENT_NORMAL, "RolledBack",
                   "Pod %s deleted: it ran the revision of a failed roll (%s); the StatefulSet "
                   "recreates it at revision %s",
                   name, x->rolled_back, rb->current) < 0) {
        rb->r = -ENOMEM;
        return false;
    }
    return true;
}

/* A roll to the target failed (the control plane's status.rollout says how): the StatefulSet
 * keeps the failed template but its partition, at its replicas, holds the update back, and
 * once the cache shows that partition, the pods of the failed revision are deleted; the
 * StatefulSet controller recreates them at currentRevision, the last good one. */
int comp_hold_back(struct comp *x, cJSON *objs, const char *stsname)
{
    const cJSON *sts = kube_store_get(x->view->statefulsets, x->ns, stsname), *o;
    struct rollback rb = {x, NULL, 0};
    int replicas = 1;
    struct err e;
    int r;

    cJSON_ArrayForEach(o, objs) {
        const cJSON *kind = get(o, "kind"), *n = get(get(o, "spec"), "replicas");
        if (cJSON_IsString(kind) && strcmp(kind->valuestring, "StatefulSet") == 0 &&
            cJSON_IsNumber(n))
            replicas = n->valueint;
    }
    err_clear(&e);
    if ((r = render_transform_statefulset_scale(objs, -1, replicas, &e)) < 0)
        return r;
    if (!sts || rollhealth_partition(sts) < replicas)
        return 0;
    rb.current = str(get(sts, "status"), "currentRevision");
    if (!rb.current)
        return 0;
    rollhealth_foreach_updated(sts, x->view->pods, delete_failed_pod, &rb);
    return rb.r;
}
