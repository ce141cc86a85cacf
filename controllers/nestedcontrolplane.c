/*
 * NestedControlPlane: the control-plane side of the Cluster API contract.
 *
 *   finalizer, the block-move annotation and spec.controlPlaneEndpoint (one merge patch,
 *   carrying resourceVersion)
 *   -> render_cluster_resolve: invalid input stops here with a condition and an event
 *   -> the CA Secrets <c>-ca, <c>-etcd, <c>-proxy, <c>-sa: created (never overwritten) when
 *      missing, checked and used as they are when present
 *   -> adopt the three components (controller ownerReference, merge patch with
 *      resourceVersion)
 *   -> the admin kubeconfig <c>-kubeconfig, renewed before it expires
 *   -> each component's desired {version, config hash}, rollout_step, the targets in
 *      status.rollout (the only place targets change)
 *   -> status: ready, initialized, version, replicas, conditions, phase
 *   -> the service-account key rotation (controllers/sakeyrotation.h): one write of <c>-sa
 *      or of the status per step, condition CertificatesRotating
 *
 * On deletion it creates nothing, deletes its components and the objects they own, waits
 * until they are gone and then removes its finalizer; the CA and kubeconfig Secrets it owns
 * go with it through garbage collection.
 */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "api/conditions.h"
#include "api/status.h"
#include "api/types.h"
#include "api/version.h"
#include "controllers/brake.h"
#include "controllers/etcdmembership.h"
#include "controllers/keypool.h"
#include "controllers/lookup.h"
#include "controllers/nested.h"
#include "controllers/rollhealth.h"
#include "controllers/rollout.h"
#include "controllers/sakeyrotation.h"
#include "controllers/snapshot.h"
#include "controllers/status.h"
#include "lib/kube/store.h"
#include "lib/pki/base64.h"
#include "lib/pki/key.h"
#include "lib/pki/secret.h"
#include "lib/util/strutil.h"

/* How often a deletion that waits for children looks again, seconds. */
#define DELETE_POLL 2.0

/* One reconcile in progress. */
struct cp {
    struct nested_ctx *ctx;
    const struct cache_view *view;
    struct render_source src;
    struct plan *plan;
    const char *ns, *name;
    const char *cluster; /* the cluster name its objects are named after, once resolved */
    const cJSON *obj;
    struct api_control_plane *ncp;
    struct api_control_plane_status *st;
    int64_t gen;
    bool spec_patched; /* the object changes under this plan: skip the status write */
    size_t step_events, step_events_end; /* the RolloutStep Events: recorded after the status */
};

static const cJSON *get(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

static int cond(struct cp *x, const char *type, const char *status, const char *severity,
                const char *reason, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Sets a condition; a Warning event goes with an Error or Warning one that changed. */
static int cond(struct cp *x, const char *type, const char *status, const char *severity,
                const char *reason, const char *fmt, ...)
{
    char msg[ERR_MSG_MAX + 512];
    va_list ap;
    int r;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    r = status_condition(&x->st->conditions, type, status, severity, reason, x->gen,
                         x->view->now, "%s", msg);
    if (r > 0 && severity && strcmp(severity, STATUS_SEVERITY_INFO) != 0 &&
        plan_event(x->plan, KUBE_EVENT_WARNING, reason, "%s", msg) < 0)
        return -ENOMEM;
    return r < 0 ? r : 0;
}

static bool has_finalizer(const struct api_control_plane *ncp)
{
    for (size_t i = 0; i < ncp->meta.finalizers.n; i++)
        if (strcmp(ncp->meta.finalizers.items[i], NESTED_FINALIZER) == 0)
            return true;
    return false;
}

static bool has_block_move(const struct api_control_plane *ncp)
{
    return api_strmap_get(&ncp->meta.annotations, NESTED_BLOCK_MOVE) != NULL;
}

/* A merge patch of the control plane's metadata.finalizers (with or without ours), with ours
 * the block-move annotation too, and, when endpoint is given, spec.controlPlaneEndpoint;
 * resourceVersion makes it conditional. */
static int patch_self(struct cp *x, bool with_finalizer, const struct api_endpoint *endpoint)
{
    cJSON *patch = cJSON_CreateObject(), *meta, *fins, *ep, *ann;
    const struct api_strlist *f = &x->ncp->meta.finalizers;

    meta = cJSON_AddObjectToObject(patch, "metadata");
    fins = cJSON_AddArrayToObject(meta, "finalizers");
    if (!fins || !cJSON_AddStringToObject(meta, "resourceVersion", x->ncp->meta.resource_version
                                                                       ? x->ncp->meta.resource_version
                                                                       : ""))
        goto oom;
    if (with_finalizer && !has_block_move(x->ncp)) {
        ann = cJSON_AddObjectToObject(meta, "annotations");
        if (!ann || !cJSON_AddStringToObject(ann, NESTED_BLOCK_MOVE, ""))
            goto oom;
    }
    for (size_t i = 0; i < f->n; i++)
        if (strcmp(f->items[i], NESTED_FINALIZER) != 0 &&
            !cJSON_AddItemToArray(fins, cJSON_CreateString(f->items[i])))
            goto oom;
    if (with_finalizer && !cJSON_AddItemToArray(fins, cJSON_CreateString(NESTED_FINALIZER)))
        goto oom;
    if (endpoint) {
        ep = cJSON_AddObjectToObject(cJSON_AddObjectToObject(patch, "spec"),
                                     "controlPlaneEndpoint");
        if (!ep || !cJSON_AddStringToObject(ep, "host", endpoint->host) ||
            !cJSON_AddNumberToObject(ep, "port", endpoint->port))
            goto oom;
    }
    x->spec_patched = true;
    return plan_merge_patch(x->plan, &NESTCP_CONTROL_PLANES, x->ns, x->name, NULL, patch,
                            "NestedControlPlane %s/%s: %s%s", x->ns, x->name,
                            !with_finalizer         ? "finalizer removed"
                            : has_block_move(x->ncp) ? "finalizer"
                                                     : "finalizer, block-move annotation",
                            endpoint ? " and controlPlaneEndpoint" : "");
oom:
    cJSON_Delete(patch);
    return -ENOMEM;
}

/* ---- deletion ---- */

struct children {
    const char *uids[RENDER_PART__COUNT];
    struct cp *x;
    int left;
    int r;
};

/* Deletes an object one of the components controls, and counts it. */
static bool delete_child(struct children *c, const struct kube_resource *res, const cJSON *obj)
{
    for (int i = 0; i < RENDER_PART__COUNT; i++) {
        if (!c->uids[i] || !lookup_controlled_by_uid(obj, c->uids[i]))
            continue;
        c->left++;
        if (!status_deleting(obj) &&
            plan_delete(c->x->plan, res, c->x->ns, kube_obj_name(obj), kube_obj_uid(obj),
                        "%s %s/%s: the control plane is being deleted", res->kind, c->x->ns,
                        kube_obj_name(obj)) < 0) {
            c->r = -ENOMEM;
            return false;
        }
    }
    return true;
}

static bool each_secret(void *ud, const cJSON *o)
{
    return delete_child(ud, &KUBE_SECRETS, o);
}

struct rendered_children {
    struct children *c;
    const struct kube_resource *res;
};

static bool each_rendered(void *ud, const cJSON *o)
{
    struct rendered_children *rc = ud;

    return delete_child(rc->c, rc->res, o);
}

static int reconcile_delete(struct cp *x)
{
    struct children c = {.x = x};
    int r;

    if (!has_finalizer(x->ncp))
        return 0;
    for (int i = 0; i < RENDER_PART__COUNT; i++) {
        const cJSON *comp = lookup_component(x->view, x->obj, (enum render_part)i);
        if (!comp || !lookup_controlled_by_uid(comp, x->ncp->meta.uid))
            continue;
        c.uids[i] = kube_obj_uid(comp);
        c.left++;
        if (!status_deleting(comp) &&
            plan_delete(x->plan, nested_part_resource((enum render_part)i), x->ns, kube_obj_name(comp),
                        kube_obj_uid(comp), "%s %s/%s: the control plane is being deleted",
                        nested_part_resource((enum render_part)i)->kind, x->ns, kube_obj_name(comp)) < 0)
            return -ENOMEM;
    }
    /* What the components own goes now too, so nothing runs on without them. */
    for (int i = 0; i < RENDER_PART__COUNT && c.r == 0; i++) {
        if (!c.uids[i])
            continue;
        const struct kube_resource *res;
        for (size_t k = 0; (res = nestedcomponent_rendered(k)) && c.r == 0; k++) {
            const struct kube_store *store = nestedcomponent_rendered_store(x->view, res);
            struct rendered_children rc = {&c, res};
            if (store)
                kube_store_foreach_owned(store, c.uids[i], each_rendered, &rc);
        }
        kube_store_foreach_owned(x->view->secrets, c.uids[i], each_secret, &c);
    }
    if (c.r < 0)
        return c.r;
    free(x->st->phase);
    if (!(x->st->phase = strdup("Deleting")))
        return -ENOMEM;
    if (c.left > 0) {
        plan_requeue_after(x->plan, DELETE_POLL);
        r = cond(x, "Ready", API_CONDITION_FALSE, STATUS_SEVERITY_INFO, "Deleting",
                 "waiting for %d components and the objects they own to be deleted", c.left);
        return r;
    }
    /* Everything is gone: let the control plane go. */
    return patch_self(x, false, NULL);
}

/* ---- adoption ---- */

static int adopt(struct cp *x, enum render_part part, const cJSON *comp)
{
    const cJSON *refs = get(get(comp, "metadata"), "ownerReferences"), *ref;
    cJSON *patch = cJSON_CreateObject(), *meta, *arr, *mine;
    const char *av = cJSON_IsString(get(x->obj, "apiVersion"))
                         ? get(x->obj, "apiVersion")->valuestring
                         : API_GROUP_CONTROLPLANE "/" API_VERSION_STORAGE;

    meta = cJSON_AddObjectToObject(patch, "metadata");
    arr = cJSON_AddArrayToObject(meta, "ownerReferences");
    if (!arr || !cJSON_AddStringToObject(meta, "resourceVersion",
                                         kube_obj_resource_version(comp)
                                             ? kube_obj_resource_version(comp)
                                             : ""))
        goto oom;
    cJSON_ArrayForEach(ref, refs)
    {
        if (!cJSON_AddItemToArray(arr, cJSON_Duplicate(ref, true)))
            goto oom;
    }
    mine = cJSON_CreateObject();
    if (!mine || !cJSON_AddItemToArray(arr, mine) ||
        !cJSON_AddStringToObject(mine, "apiVersion", av) ||
        !cJSON_AddStringToObject(mine, "kind", "NestedControlPlane") ||
        !cJSON_AddStringToObject(mine, "name", x->name) ||
        !cJSON_AddStringToObject(mine, "uid", x->ncp->meta.uid) ||
        !cJSON_AddTrueToObject(mine, "controller") ||
        !cJSON_AddTrueToObject(mine, "blockOwnerDeletion"))
        goto oom;
    return plan_merge_patch(x->plan, nested_part_resource(part), x->ns, kube_obj_name(comp), NULL,
                            patch, "%s %s/%s: adopted by NestedControlPlane %s",
                            nested_part_resource(part)->kind, x->ns, kube_obj_name(comp), x->name);
oom:
    cJSON_Delete(patch);
    return -ENOMEM;
}

/* Adopts the components that have no controller; returns -EPERM (with a condition) when one
 * is controlled by another owner. */
static int adopt_components(struct cp *x)
{
    for (int i = 0; i < RENDER_PART__COUNT; i++) {
        const cJSON *comp = lookup_component(x->view, x->obj, (enum render_part)i);
        const cJSON *ref;
        int r;

        if (!comp || lookup_controlled_by_uid(comp, x->ncp->meta.uid) || status_deleting(comp))
            continue;
        ref = kube_obj_controller_ref(comp);
        if (ref) {
            const cJSON *k = get(ref, "kind"), *n = get(ref, "name");
            r = cond(x, "Ready", API_CONDITION_FALSE, STATUS_SEVERITY_ERROR,
                     "ComponentControlledElsewhere", "%s %s is controlled by %s %s, not by this "
                     "control plane",
                     nested_part_resource((enum render_part)i)->kind, kube_obj_name(comp),
                     cJSON_IsString(k) ? k->valuestring : "?",
                     cJSON_IsString(n) ? n->valuestring : "?");
            return r < 0 ? r : -EPERM;
        }
        if ((r = adopt(x, (enum render_part)i, comp)) < 0)
            return r;
    }
    return 0;
}

/* ---- the rollout ---- */

static struct api_rollout_target *target_of(struct api_rollout *ro, int i)
{
    return i == ROLLOUT_ETCD ? &ro->etcd
                             : i == ROLLOUT_APISERVER ? &ro->apiserver : &ro->controller_manager;
}

static int set_str(char **dst, const char *src)
{
    char *d;

    if ((!*dst && !src) || (*dst && src && strcmp(*dst, src) == 0))
        return 0;
    d = src ? strdup(src) : NULL;
    if (src && !d)
        return -ENOMEM;
    free(*dst);
    *dst = d;
    return 0;
}

/* The service CIDRs the control plane would run with, joined by ",". */
static void service_cidrs(const struct render_cluster *rc, char *out, size_t size)
{
    const struct api_strlist *l = &render_cluster_control_plane(rc)->spec.cluster_network.services;
    size_t n = 0;

    out[0] = '\0';
    for (size_t i = 0; i < l->n && n < size; i++)
        n += (size_t)snprintf(out + n, size - n, "%s%s", i ? "," : "", l->items[i]);
}

struct desired_all {
    struct render_cluster_desired d[RENDER_PART__COUNT];
    struct status_sts ss[RENDER_PART__COUNT];
    const cJSON *sts[RENDER_PART__COUNT]; /* the cached StatefulSets, or NULL */
};

static int compute_desired(struct cp *x, const struct render_cluster *rc,
                           const struct render_cluster_pki *pki, struct desired_all *da)
{
    struct api_rollout *ro = &x->st->rollout;
    char name[RENDER_CLUSTER_NAME_MAX];
    struct err e;

    for (int i = 0; i < RENDER_PART__COUNT; i++) {
        const cJSON *sts;
        int r;

        snprintf(name, sizeof(name), "%s-%s", render_cluster_name(rc),
                 render_part_short((enum render_part)i));
        sts = kube_store_get(x->view->statefulsets, x->ns, name);
        da->sts[i] = sts;
        status_statefulset(sts, target_of(ro, i)->config_hash, &da->ss[i]);
        /* etcd is complete once its membership is, too: the API servers roll to a new member
         * list only when every member in it votes. */
        if (i == RENDER_PART_ETCD && da->ss[i].complete)
            da->ss[i].complete = status_condition_current(
                lookup_component(x->view, x->obj, RENDER_PART_ETCD), ETCD_MEMBERSHIP_CONDITION);
        err_clear(&e);
        r = render_cluster_desired(x->ctx->cat, rc, pki, &x->src, (enum render_part)i,
                                   da->ss[i].certs, &da->d[i], &e);
        if (r == -EINVAL || r == -ENOENT) {
            r = cond(x, "Ready", API_CONDITION_FALSE, STATUS_SEVERITY_ERROR, "InvalidSpec", "%s",
                     e.msg);
            return r < 0 ? r : -EINVAL;
        }
        if (r < 0)
            return r;
    }
    return 0;
}

/* The learners a NestedEtcd's status lists. */
static int etcd_learners(const cJSON *etcd)
{
    const cJSON *m;
    int n = 0;

    cJSON_ArrayForEach(m, get(get(etcd, "status"), "members"))
        n += cJSON_IsTrue(get(m, "learner"));
    return n;
}


/* ---- the brake (controllers/brake.h) ---- */

/* The Upgrading condition of a cached control plane: status, reason, lastTransitionTime. */
static void upgrading_of(const cJSON *ncp, const char **ret_status, const char **ret_reason,
                         const char **ret_since)
{
    const cJSON *c;

    *ret_status = *ret_reason = *ret_since = NULL;
    cJSON_ArrayForEach(c, get(get(ncp, "status"), "conditions"))
    {
        const cJSON *t = get(c, "type");
        if (!cJSON_IsString(t) || strcmp(t->valuestring, "Upgrading") != 0)
            continue;
        *ret_status = cJSON_IsString(get(c, "status")) ? get(c, "status")->valuestring : NULL;
        *ret_reason = cJSON_IsString(get(c, "reason")) ? get(c, "reason")->valuestring : NULL;
        *ret_since = cJSON_IsString(get(c, "lastTransitionTime"))
                         ? get(c, "lastTransitionTime")->valuestring
                         : NULL;
        return;
    }
}

static bool str_is(const char *a, const char *b)
{
    return a && strcmp(a, b) == 0;
}

/* What the brake reads of one cached control plane: rolling (Upgrading True, RollingOut, or
 * let start by this process and not yet shown by the cache), waiting (Upgrading True,
 * RolloutQueued, neither paused nor being deleted) and since when. */
static void peer_of(const struct nested_ctx *ctx, const struct cache_view *view,
                    const cJSON *ncp, struct brake_peer *ret)
{
    const char *status, *reason, *since;
    char key[2 * RENDER_CLUSTER_NAME_MAX + 2];
    const struct nested_admitted *a;
    const char *rv = kube_obj_resource_version(ncp);
    double t = view->now;

    *ret = (struct brake_peer){kube_obj_namespace(ncp), kube_obj_name(ncp), false, false, 0};
    if (status_deleting(ncp))
        return;
    upgrading_of(ncp, &status, &reason, &since);
    ret->rolling = str_is(status, API_CONDITION_TRUE) && str_is(reason, BRAKE_REASON_ROLLING);
    snprintf(key, sizeof(key), "%s/%s", ret->ns ? ret->ns : "", ret->name ? ret->name : "");
    a = strmap_get(&ctx->admitted, key);
    if (a && a->until > view->now && rv && strcmp(a->resource_version, rv) == 0)
        ret->rolling = true;
    if (ret->rolling || !str_is(status, API_CONDITION_TRUE) ||
        !str_is(reason, BRAKE_REASON_QUEUED) ||
        status_paused(ncp, lookup_capi_cluster(view, ncp, API_KIND_NESTED_CONTROL_PLANE, NULL)))
        return;
    ret->queued = true;
    if (since && time_parse_rfc3339(since, &t) == 0)
        ret->queued_since = t;
    else
        ret->queued_since = view->now;
}

struct peers {
    const struct nested_ctx *ctx;
    const struct cache_view *view;
    const char *ns, *name; /* the one to leave out, or NULL */
    struct brake_peer *items;
    size_t n, cap;
    int r;
};

static bool collect_peer(void *userdata, const cJSON *ncp)
{
    struct peers *p = userdata;
    const char *ns = kube_obj_namespace(ncp), *name = kube_obj_name(ncp);

    if (p->name && ns && name && strcmp(ns, p->ns) == 0 && strcmp(name, p->name) == 0)
        return true;
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 64;
        struct brake_peer *items = realloc(p->items, cap * sizeof(*items));
        if (!items) {
            p->r = -ENOMEM;
            return false;
        }
        p->items = items;
        p->cap = cap;
    }
    peer_of(p->ctx, p->view, ncp, &p->items[p->n++]);
    return true;
}

/* Whether the roll renews, for a component it moves, the certificates of a Secret the running
 * StatefulSet mounts that expire within BRAKE_URGENT_SECONDS (or cannot be read). */
static bool renews_urgently(const struct cp *x, const struct desired_all *da,
                            const struct rollout_output *out)
{
    for (int i = 0; i < ROLLOUT__COUNT; i++) {
        const char *mounted = da->ss[i].certs;
        const cJSON *secret;
        int64_t not_after;

        if (!out->target_changed[i] || !mounted || !da->d[i].known ||
            strcmp(mounted, da->d[i].certs_name) == 0)
            continue;
        secret = kube_store_get(x->view->secrets, x->ns, mounted);
        if (!secret || nested_secret_not_after(secret, &not_after) < 0 ||
            (double)not_after - x->view->now < BRAKE_URGENT_SECONDS)
            return true;
    }
    return false;
}

/* Notes a roll let start, so that it counts until the cache shows it. */
static int note_admitted(struct cp *x)
{
    const char *rv = kube_obj_resource_version(x->obj);
    struct nested_admitted *a = calloc(1, sizeof(*a));

    if (!a)
        return -ENOMEM;
    snprintf(a->key, sizeof(a->key), "%s/%s", x->ns, x->name);
    snprintf(a->resource_version, sizeof(a->resource_version), "%s", rv ? rv : "");
    a->until = x->view->now + NESTED_ADMITTED_TTL;
    free(strmap_remove(&x->ctx->admitted, a->key));
    if (strmap_put(&x->ctx->admitted, a->key, a) < 0) {
        free(a);
        return -ENOMEM;
    }
    return 0;
}

/* Holds a roll the state machine would start while the fleet has no slot for it: no target
 * moves, and the control plane says that it waits (ROLLOUT_PHASE_QUEUED). */
static int apply_brake(struct cp *x, const struct rollout_input *in, const struct desired_all *da,
                       struct rollout_output *out)
{
    struct peers p = {x->ctx, x->view, x->ns, x->name, NULL, 0, 0, 0};
    struct brake_input bi = {.ns = x->ns, .name = x->name, .queued_since = x->view->now};
    struct brake_output bo;
    const char *status, *reason, *since;
    bool starts = false;

    for (int i = 0; i < ROLLOUT__COUNT; i++)
        starts = starts || out->target_changed[i];
    /* Creation is not a roll. */
    if (!starts || !in->initialized || x->ctx->max_rollouts.value <= 0)
        return 0;
    upgrading_of(x->obj, &status, &reason, &since);
    bi.rolling = str_is(status, API_CONDITION_TRUE) && str_is(reason, BRAKE_REASON_ROLLING);
    if (str_is(status, API_CONDITION_TRUE) && str_is(reason, BRAKE_REASON_QUEUED) && since)
        time_parse_rfc3339(since, &bi.queued_since);
    bi.urgent = !bi.rolling && renews_urgently(x, da, out);
    kube_store_foreach(x->view->control_planes, collect_peer, &p);
    if (p.r < 0) {
        free(p.items);
        return p.r;
    }
    bi.peers = p.items;
    bi.n_peers = p.n;
    bi.limit = brake_limit_resolve(&x->ctx->max_rollouts, kube_store_count(x->view->control_planes));
    brake_decide(&bi, &bo);
    free(p.items);
    if (bo.go)
        return bi.rolling ? 0 : note_admitted(x);
    for (int i = 0; i < ROLLOUT__COUNT; i++) {
        out->target[i] = in->c[i].target;
        out->target_changed[i] = false;
    }
    out->phase = ROLLOUT_PHASE_QUEUED;
    out->reason = BRAKE_REASON_QUEUED;
    snprintf(out->message, sizeof(out->message), "%s", bo.message);
    plan_requeue_after(x->plan, NESTED_QUEUED_RECHECK);
    return 0;
}

/* A roll of the API servers or controller managers to their target whose pods fail
 * (controllers/rollhealth.h) is held back: status.rollout records what failed, the component
 * rolls its pods back, and the rollout stops until the desired state changes. etcd is never
 * rolled back this way: its data format may have moved on. */
static int check_roll_health(struct cp *x, const struct desired_all *da, int i)
{
    struct api_rollout_target *t = target_of(&x->st->rollout, i);
    char msg[512];
    double recheck;

    if (i == ROLLOUT_ETCD || !x->st->initialized || t->rolled_back || !t->config_hash ||
        da->ss[i].complete || !da->ss[i].template_hash ||
        strcmp(da->ss[i].template_hash, t->config_hash) != 0)
        return 0;
    if (!rollhealth_failed(da->sts[i], x->view->pods, x->view->now, msg, sizeof(msg), &recheck)) {
        if (recheck > 0)
            plan_requeue_after(x->plan, recheck);
        return 0;
    }
    return set_str(&t->rolled_back, msg);
}

static long long generation_of(const cJSON *obj)
{
    const cJSON *g = get(get(obj, "metadata"), "generation");

    return cJSON_IsNumber(g) ? (long long)g->valuedouble : 0;
}

static const char *text_of(const cJSON *obj, const char *key)
{
    const cJSON *v = get(obj, key);

    return cJSON_IsString(v) ? v->valuestring : "";
}

/* After etcd was restored from a snapshot (controllers/etcdrestore.h), every API server and
 * controller-manager pod that started before is deleted, and its StatefulSet starts it again:
 * no process keeps a watch cache or an informer of the history the restore discarded. */
static int restart_after_restore(struct cp *x, const struct desired_all *da)
{
    const cJSON *etcd = lookup_component(x->view, x->obj, RENDER_PART_ETCD);
    const cJSON *at = get(get(get(etcd, "status"), "restore"), "restoredAt");
    double restored, created;

    if (!cJSON_IsString(at) || time_parse_rfc3339(at->valuestring, &restored) < 0)
        return 0;
    for (int i = RENDER_PART_APISERVER; i <= RENDER_PART_CONTROLLER_MANAGER; i++) {
        const cJSON *sts = da->sts[i], *replicas = get(get(sts, "spec"), "replicas");
        int n = cJSON_IsNumber(replicas) ? replicas->valueint : 0;

        for (int k = 0; sts && k < n; k++) {
            char name[RENDER_CLUSTER_NAME_MAX + 48];
            const cJSON *pod, *ts;

            snprintf(name, sizeof(name), "%s-%d", kube_obj_name(sts), k);
            pod = kube_store_get(x->view->pods, x->ns, name);
            ts = get(get(pod, "metadata"), "creationTimestamp");
            if (!pod || status_deleting(pod) || !cJSON_IsString(ts) ||
                time_parse_rfc3339(ts->valuestring, &created) < 0 || created >= restored)
                continue;
            if (plan_delete(x->plan, &KUBE_PODS, x->ns, name, kube_obj_uid(pod),
                            "Pod %s/%s: it started before etcd was restored", x->ns,
                            name) < 0 ||
                plan_event(x->plan, KUBE_EVENT_NORMAL, "RestartedAfterRestore",
                           "Pod %s deleted: it started before etcd was restored from a "
                           "snapshot at %s, and restarts with none of the discarded history",
                           name, at->valuestring) < 0)
                return -ENOMEM;
        }
    }
    return 0;
}

/* Keeps every target where it is: the roll waits, and says why in message. */
static void hold_targets(const struct rollout_input *in, struct rollout_output *out,
                         enum rollout_phase phase, const char *reason)
{
    for (int i = 0; i < ROLLOUT__COUNT; i++) {
        out->target[i] = in->c[i].target;
        out->target_changed[i] = false;
    }
    out->phase = phase;
    out->reason = reason;
}

static bool version_moves(const char *from, const char *to)
{
    return from && to && !api_version_equal(from, to);
}

/* When moving the targets starts an etcd or API server version change: the whole change
 * still to come, as "etcd 3.5.36 -> 3.6.17, kube-apiserver 1.36.3 -> 1.37.2" (the API
 * servers' part moves later, once etcd is done); "" when the targets start none. */
static void version_changes(const struct rollout_input *in, const struct rollout_output *out,
                            char *buf, size_t size)
{
    static const enum rollout_component parts[] = {ROLLOUT_ETCD, ROLLOUT_APISERVER};
    size_t len = 0;
    bool starts = false;

    buf[0] = '\0';
    for (size_t k = 0; k < sizeof(parts) / sizeof(parts[0]); k++)
        starts = starts || (out->target_changed[parts[k]] &&
                            version_moves(in->c[parts[k]].target.version,
                                          out->target[parts[k]].version));
    for (size_t k = 0; starts && k < sizeof(parts) / sizeof(parts[0]); k++) {
        const char *from = in->c[parts[k]].target.version, *to = in->c[parts[k]].desired.version;
        int n;

        if (!version_moves(from, to))
            continue;
        n = snprintf(buf + len, size - len, "%s%s %s -> %s", len ? ", " : "",
                     rollout_component_name(parts[k]), from, to);
        if (n < 0 || (size_t)n >= size - len)
            return;
        len += (size_t)n;
    }
}

static int record_snapshot(struct api_rollout_snapshot *s, const char *name, const char *claim,
                           const char *taken_at, const char *before, const char *message)
{
    int r;

    if ((r = set_str(&s->name, name)) < 0 || (r = set_str(&s->claim_name, claim)) < 0 ||
        (r = set_str(&s->taken_at, taken_at)) < 0 || (r = set_str(&s->before, before)) < 0)
        return r;
    return set_str(&s->message, message);
}

/* Before the targets move to another etcd or API server version of a control plane that was
 * complete once, etcd is snapshotted to the claim its NestedEtcd names (controllers/snapshot.h):
 * nothing moves until the snapshot Job has completed; a failed one stops the roll. Where no
 * claim is named the roll goes on, and status.rollout.snapshot says no snapshot was taken. */
static int snapshot_gate(struct cp *x, const struct rollout_input *in,
                         const struct desired_all *da, struct rollout_output *out)
{
    struct api_rollout_snapshot *sn = &x->st->rollout.snapshot;
    const cJSON *etcd = lookup_component(x->view, x->obj, RENDER_PART_ETCD), *job;
    const cJSON *claim_v = get(get(get(get(etcd, "spec"), "snapshots"), "persistentVolumeClaim"),
                               "claimName");
    const char *claim = cJSON_IsString(claim_v) && claim_v->valuestring[0] ? claim_v->valuestring
                                                                           : NULL;
    const char *done_at, *host, *image;
    char before[256], key[512], name[SNAPSHOT_NAME_MAX], why[512], msg[1024];
    int r;

    if (!in->initialized)
        return 0;
    version_changes(in, out, before, sizeof(before));
    if (!before[0])
        return 0;
    if (!claim) {
        if (sn->name && str_is(sn->before, before))
            return 0;
        str_printf(msg, sizeof(msg),
                 "no etcd snapshot was taken before %s: NestedEtcd %s/%s names no "
                 "spec.snapshots.persistentVolumeClaim",
                 before, x->ns, kube_obj_name(etcd));
        return record_snapshot(sn, NULL, NULL, NULL, before, msg);
    }
    /* One snapshot per requested change: the versions it goes to and the generations that
     * asked for them (a change asked again later is snapshotted again). */
    str_printf(key, sizeof(key), "%s/%s etcd=%s apiserver=%s gen=%lld,%lld,%lld", x->ns, x->name,
             in->c[ROLLOUT_ETCD].desired.version ? in->c[ROLLOUT_ETCD].desired.version : "",
             in->c[ROLLOUT_APISERVER].desired.version ? in->c[ROLLOUT_APISERVER].desired.version
                                                      : "",
             (long long)x->gen, generation_of(etcd),
             generation_of(lookup_component(x->view, x->obj, RENDER_PART_APISERVER)));
    snapshot_name(x->cluster, key, name);
    if (str_is(sn->name, name) && str_is(sn->claim_name, claim) && sn->taken_at)
        return 0;
    job = kube_store_get(x->view->jobs, x->ns, name);
    if (!job) {
        struct snapshot_job_input ji = {
            .ns = x->ns, .cluster = x->cluster, .owner_name = x->name,
            .owner_api_version = text_of(x->obj, "apiVersion"), .owner_uid = kube_obj_uid(x->obj),
            .name = name, .claim = claim, .certs_secret = da->ss[ROLLOUT_ETCD].certs};
        cJSON *obj;

        hold_targets(in, out, ROLLOUT_PHASE_UPGRADING, BRAKE_REASON_ROLLING);
        if (!ji.certs_secret ||
            snapshot_source(x->view->pods, da->sts[ROLLOUT_ETCD], etcd, &host, &image) < 0) {
            str_printf(out->message, sizeof(out->message),
                     "waiting for a ready etcd member to snapshot before %s", before);
            return 0;
        }
        ji.endpoint_host = host;
        ji.image = image;
        str_printf(out->message, sizeof(out->message),
                 "taking etcd snapshot %s.db on claim %s before %s (Job %s)", name, claim,
                 before, name);
        if (!(obj = snapshot_job(&ji)) ||
            plan_create(x->plan, &KUBE_JOBS, obj, "Job %s/%s: etcd snapshot before %s", x->ns,
                        name, before) < 0 ||
            plan_event(x->plan, KUBE_EVENT_NORMAL, "TakingSnapshot",
                       "Job %s writes etcd snapshot %s.db from %s to claim %s before %s", name,
                       name, host, claim, before) < 0)
            return -ENOMEM;
        return 0;
    }
    switch (snapshot_job_state(job, why, sizeof(why), &done_at)) {
    case SNAPSHOT_RUNNING:
        hold_targets(in, out, ROLLOUT_PHASE_UPGRADING, BRAKE_REASON_ROLLING);
        str_printf(out->message, sizeof(out->message),
                 "taking etcd snapshot %s.db on claim %s before %s (Job %s)", name, claim,
                 before, name);
        return 0;
    case SNAPSHOT_FAILED:
        hold_targets(in, out, ROLLOUT_PHASE_STALLED, "SnapshotFailed");
        str_printf(out->message, sizeof(out->message),
                 "etcd snapshot Job %s failed (%s); %s waits. Delete the Job to take the "
                 "snapshot again, or remove spec.snapshots from NestedEtcd %s to go on without "
                 "one",
                 name, why, before, kube_obj_name(etcd));
        return 0;
    case SNAPSHOT_COMPLETE:
        break;
    }
    if ((r = record_snapshot(sn, name, claim, done_at ? done_at : "", before, NULL)) < 0)
        return r;
    if (plan_event(x->plan, KUBE_EVENT_NORMAL, "SnapshotTaken",
                   "etcd snapshot %s.db is on claim %s; %s starts", name, claim, before) < 0)
        return -ENOMEM;
    return 0;
}

/* Runs the state machine, with the brake, and writes the targets into status.rollout; returns
 * its output. */
static int step_rollout(struct cp *x, const struct desired_all *da, bool frozen,
                        struct rollout_output *out)
{
    struct api_rollout *ro = &x->st->rollout;
    struct rollout_input in = {.initialized = x->st->initialized};
    int r, active = -1;

    for (int i = 0; i < ROLLOUT__COUNT; i++) {
        struct rollout_component_state *c = &in.c[i];
        const struct api_rollout_target *t = target_of(ro, i);
        c->desired.version = da->d[i].version[0] ? da->d[i].version : NULL;
        c->desired.hash = da->d[i].known ? da->d[i].config_hash : NULL;
        c->target.version = t->version;
        c->target.hash = t->config_hash;
        c->complete = da->ss[i].complete;
        c->replicas = da->ss[i].exists ? da->ss[i].replicas : 0;
        c->ready_replicas = da->ss[i].ready;
        if (i == ROLLOUT_ETCD) {
            /* A learner being added does not vote: quorum is counted over the others. */
            int learners = etcd_learners(lookup_component(x->view, x->obj, RENDER_PART_ETCD));
            c->replicas = c->replicas > learners ? c->replicas - learners : c->replicas;
            c->ready_replicas =
                c->ready_replicas > learners ? c->ready_replicas - learners : c->ready_replicas;
        }
        c->updated_replicas = da->ss[i].updated;
        if ((r = check_roll_health(x, da, i)) < 0)
            return r;
        c->held = t->rolled_back;
    }
    rollout_step(&in, out);
    if (frozen || out->phase == ROLLOUT_PHASE_REFUSED)
        return 0;
    if ((r = apply_brake(x, &in, da, out)) < 0 || (r = snapshot_gate(x, &in, da, out)) < 0)
        return r;
    x->step_events = x->plan->n_events;
    for (int i = 0; i < ROLLOUT__COUNT; i++) {
        struct api_rollout_target *t = target_of(ro, i);
        if (!out->target_changed[i])
            continue;
        if ((r = set_str(&t->version, out->target[i].version)) < 0 ||
            (r = set_str(&t->config_hash, out->target[i].hash)) < 0 ||
            (r = set_str(&t->rolled_back, NULL)) < 0)
            return r;
        if (plan_event(x->plan, KUBE_EVENT_NORMAL, "RolloutStep", "%s: target %s (config %.12s)",
                       rollout_component_name((enum rollout_component)i),
                       out->target[i].version ? out->target[i].version : "-",
                       out->target[i].hash) < 0)
            return -ENOMEM;
    }
    x->step_events_end = x->plan->n_events;
    /* The component the rollout waits on: the first not complete at its desired state. */
    for (int i = 0; i < ROLLOUT__COUNT && active < 0 && out->phase != ROLLOUT_PHASE_READY; i++) {
        const char *want = in.c[i].desired.hash, *target = target_of(ro, i)->config_hash;
        if (!want || !target || strcmp(want, target) != 0 || out->target_changed[i] ||
            !in.c[i].complete)
            active = i;
    }
    if ((r = set_str(&ro->step, active >= 0 ? render_part_field((enum render_part)active) : NULL)) < 0)
        return r;
    return set_str(&ro->target_version, in.c[ROLLOUT_APISERVER].desired.version);
}

/* nestcp renews leaves, never a CA: one in its last year keeps CertificatesAvailable True
 * with reason CertificateAuthorityExpiring naming it, and a Warning Event when that starts;
 * otherwise the control plane comes back when the first CA enters its last year. */
static int ca_expiry(struct cp *x, const struct render_cluster_pki *pki)
{
    const int64_t year = (int64_t)365 * 24 * 3600;
    const char *which = NULL;
    char name[RENDER_CLUSTER_NAME_MAX + 32], when[32];
    int64_t not_after = 0, now = (int64_t)x->view->now;
    bool told = false; /* the condition said so already: no second Event */
    int r;

    for (size_t i = 0; i < x->st->conditions.n; i++) {
        const struct api_condition *c = &x->st->conditions.items[i];
        told = told || (c->type && strcmp(c->type, "CertificatesAvailable") == 0 && c->reason &&
                        strcmp(c->reason, "CertificateAuthorityExpiring") == 0);
    }

    if (render_cluster_pki_earliest_ca(pki, name, sizeof(name), &which, &not_after) < 0 ||
        not_after - year > now) {
        if (which)
            plan_requeue_after(x->plan, (double)(not_after - year - now));
        return cond(x, "CertificatesAvailable", API_CONDITION_TRUE, NULL, "Available",
                    "the CA Secrets are present and valid");
    }
    time_format_rfc3339((double)not_after, when);
    r = cond(x, "CertificatesAvailable", API_CONDITION_TRUE, NULL, "CertificateAuthorityExpiring",
             "Secret %s/%s: the %s CA expires at %s, in %lld days; nestcp renews leaf "
             "certificates, never a CA: replace it before then (docs/certificates.md)",
             x->ns, name, which, when, (long long)((not_after - now) / (24 * 3600)));
    if (r == 0 && !told &&
        plan_event(x->plan, KUBE_EVENT_WARNING, "CertificateAuthorityExpiring",
                   "Secret %s/%s: the %s CA expires at %s", x->ns, name, which, when) < 0)
        return -ENOMEM;
    return r;
}

/* ---- the service-account key rotation ---- */

static const cJSON *data_of(const cJSON *secret, const char *key)
{
    const cJSON *v = get(get(secret, "data"), key);

    return cJSON_IsString(v) ? v : NULL;
}

static const char *annotation_of(const cJSON *obj, const char *key)
{
    const cJSON *v = get(get(get(obj, "metadata"), "annotations"), key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A merge patch of <c>-sa, conditional on the resourceVersion the decision read: data and
 * annotations as given (null removes a key). Takes data and annotations. */
static int patch_sa(struct cp *x, const cJSON *sa, cJSON *data, cJSON *annotations,
                    const char *why)
{
    const cJSON *rv = get(get(sa, "metadata"), "resourceVersion");
    cJSON *patch = cJSON_CreateObject(), *md = cJSON_CreateObject();

    if (!patch || !md || !cJSON_AddItemToObject(patch, "metadata", md)) {
        cJSON_Delete(patch);
        cJSON_Delete(md);
        cJSON_Delete(data);
        cJSON_Delete(annotations);
        return -ENOMEM;
    }
    if (!cJSON_AddItemToObject(md, "annotations", annotations)) {
        cJSON_Delete(annotations);
        annotations = NULL;
    }
    if (!cJSON_AddItemToObject(patch, "data", data)) {
        cJSON_Delete(data);
        data = NULL;
    }
    if (!annotations || !data ||
        !cJSON_AddStringToObject(md, "resourceVersion", cJSON_IsString(rv) ? rv->valuestring : "")) {
        cJSON_Delete(patch);
        return -ENOMEM;
    }
    return plan_merge_patch(x->plan, &KUBE_SECRETS, x->ns, kube_obj_name(sa), NULL, patch,
                            "Secret %s/%s: %s", x->ns, kube_obj_name(sa), why);
}

/* START: a new key pair into next.pub/next.key. Returns 0, 1 (a key is on its way: try
 * again shortly), -ENOMEM or another code of key generation. */
static int plan_sa_start(struct cp *x, const struct render_cluster *rc, const cJSON *sa,
                         const char *request)
{
    char *key = NULL, *pub = NULL, *bkey = NULL, *bpub = NULL, now[32];
    cJSON *data = NULL, *ann = NULL;
    struct err e;
    int r;

    err_clear(&e);
    r = x->ctx->keys ? keypool_take(x->ctx->keys, render_cluster_key_alg(rc), &key, &e)
                     : pki_key_generate(render_cluster_key_alg(rc), &key, &e);
    if (r == -EAGAIN) {
        plan_requeue_after(x->plan, NESTED_KEY_WAIT);
        return 1;
    }
    if (r < 0)
        return r;
    time_format_rfc3339(x->view->now, now);
    r = -ENOMEM;
    if (pki_key_public_pem(key, &pub, &e) < 0 || pki_base64_encode(key, strlen(key), &bkey) < 0 ||
        pki_base64_encode(pub, strlen(pub), &bpub) < 0 || !(data = cJSON_CreateObject()) ||
        !(ann = cJSON_CreateObject()) ||
        !cJSON_AddStringToObject(data, PKI_SECRET_SA_NEXT_PUB, bpub) ||
        !cJSON_AddStringToObject(data, PKI_SECRET_SA_NEXT_KEY, bkey) ||
        !cJSON_AddStringToObject(ann, PKI_SA_NEXT_KEY_CREATED_ANNOTATION, now) ||
        !cJSON_AddStringToObject(ann, PKI_SA_ROTATION_ANNOTATION, request))
        goto out;
    r = patch_sa(x, sa, data, ann, "a new service-account key, trusted before it signs");
    data = ann = NULL;
out:
    cJSON_Delete(data);
    cJSON_Delete(ann);
    if (key)
        OPENSSL_cleanse(key, strlen(key));
    if (bkey)
        OPENSSL_cleanse(bkey, strlen(bkey));
    free(key);
    free(bkey);
    free(pub);
    free(bpub);
    return r;
}

/* SWITCH: the next pair signs, the old public key stays as previous.pub; the values are
 * moved as they are (base64), nothing is decoded. */
static int plan_sa_switch(struct cp *x, const cJSON *sa)
{
    const cJSON *np = data_of(sa, PKI_SECRET_SA_NEXT_PUB), *nk = data_of(sa, PKI_SECRET_SA_NEXT_KEY);
    const cJSON *old = data_of(sa, PKI_SECRET_TLS_CRT);
    const char *made = annotation_of(sa, PKI_SA_NEXT_KEY_CREATED_ANNOTATION);
    cJSON *data = cJSON_CreateObject(), *ann = cJSON_CreateObject();

    if (!np || !nk || !old) {
        cJSON_Delete(data);
        cJSON_Delete(ann);
        return -EINVAL;
    }
    if (!data || !ann || !cJSON_AddStringToObject(data, PKI_SECRET_TLS_CRT, np->valuestring) ||
        !cJSON_AddStringToObject(data, PKI_SECRET_TLS_KEY, nk->valuestring) ||
        !cJSON_AddStringToObject(data, PKI_SECRET_SA_PREVIOUS_PUB, old->valuestring) ||
        !cJSON_AddNullToObject(data, PKI_SECRET_SA_NEXT_PUB) ||
        !cJSON_AddNullToObject(data, PKI_SECRET_SA_NEXT_KEY) ||
        !(made ? cJSON_AddStringToObject(ann, PKI_SA_KEY_CREATED_ANNOTATION, made)
               : cJSON_AddNullToObject(ann, PKI_SA_KEY_CREATED_ANNOTATION)) ||
        !cJSON_AddNullToObject(ann, PKI_SA_NEXT_KEY_CREATED_ANNOTATION)) {
        cJSON_Delete(data);
        cJSON_Delete(ann);
        return -ENOMEM;
    }
    return patch_sa(x, sa, data, ann, "the new service-account key signs, the old one verifies");
}

static int plan_sa_drop(struct cp *x, const cJSON *sa)
{
    cJSON *data = cJSON_CreateObject(), *ann = cJSON_CreateObject();

    if (!data || !ann || !cJSON_AddNullToObject(data, PKI_SECRET_SA_PREVIOUS_PUB)) {
        cJSON_Delete(data);
        cJSON_Delete(ann);
        return -ENOMEM;
    }
    return patch_sa(x, sa, data, ann, "the old service-account public key dropped");
}

/* Runs the rotation's state machine after the rollout's (rolled: every component runs what
 * the Secrets imply; upgrading: a version change rolls out or is held back). */
static int rotate_sa_key(struct cp *x, const struct render_cluster *rc, bool rolled,
                         bool upgrading)
{
    struct api_sa_key_status *ks = &x->st->sa_key;
    const struct api_certificates *cs = &render_cluster_control_plane(rc)->spec.certificates;
    char name[RENDER_CLUSTER_NAME_MAX], when[32];
    struct sakey_input in = {0};
    struct sakey_output out;
    const cJSON *sa;
    double since = 0;
    int r = 0;

    if (pki_secret_name(render_cluster_name(rc), PKI_PURPOSE_SA, name, sizeof(name)) < 0 ||
        !(sa = kube_store_get(x->view->secrets, x->ns, name)))
        return 0;
    in.requested = cs->rotate_sa_key;
    /* The request a running rotation was started for is kept with its keys. */
    in.taken = annotation_of(sa, PKI_SA_ROTATION_ANNOTATION);
    if (!in.taken)
        in.taken = ks->rotation;
    in.phase = ks->phase;
    if (ks->signing_since && time_parse_rfc3339(ks->signing_since, &since) == 0)
        in.signing_since = (int64_t)since;
    in.has_next = data_of(sa, PKI_SECRET_SA_NEXT_PUB) != NULL;
    in.has_previous = data_of(sa, PKI_SECRET_SA_PREVIOUS_PUB) != NULL;
    in.owned = lookup_controlled_by_uid(sa, x->ncp->meta.uid);
    in.initialized = x->st->initialized;
    in.rolled = rolled;
    in.upgrading = upgrading;
    in.overlap = cs->sa_rotation_overlap;
    in.now = (int64_t)x->view->now;
    sakey_rotation_step(&in, &out);

    switch (out.action) {
    case SAKEY_START:
        r = plan_sa_start(x, rc, sa, in.requested);
        if (r != 0)
            return r > 0 ? 0 : r;
        break;
    case SAKEY_SWITCH:
        r = plan_sa_switch(x, sa);
        break;
    case SAKEY_DROP:
        r = plan_sa_drop(x, sa);
        break;
    default:
        break;
    }
    if (r < 0)
        return r;
    if (out.action == SAKEY_TAKE || out.action == SAKEY_START)
        r = set_str(&ks->rotation, in.requested);
    else if (in.taken && !ks->rotation)
        r = set_str(&ks->rotation, in.taken);
    if (r == 0 && out.phase)
        r = set_str(&ks->phase, out.phase);
    if (r == 0 && out.action == SAKEY_START)
        r = set_str(&ks->signing_since, NULL) < 0 ? -ENOMEM : set_str(&ks->drop_after, NULL);
    if (r == 0 && out.action == SAKEY_SIGNED) {
        time_format_rfc3339(x->view->now, when);
        r = set_str(&ks->signing_since, when);
    }
    if (r == 0 && out.drop_after && out.action != SAKEY_START) {
        time_format_rfc3339((double)out.drop_after, when);
        r = set_str(&ks->drop_after, when);
    }
    if (r < 0)
        return r;
    if (out.requeue_after > 0)
        plan_requeue_after(x->plan, out.requeue_after);
    if (out.event_reason &&
        plan_event(x->plan, KUBE_EVENT_NORMAL, out.event_reason, "%s", out.event_message) < 0)
        return -ENOMEM;
    if (!out.reason)
        return 0;
    return cond(x, SAKEY_CONDITION, out.rotating ? API_CONDITION_TRUE : API_CONDITION_FALSE,
                out.refusal ? STATUS_SEVERITY_WARNING : NULL, out.reason, "%s", out.message);
}

/* ---- status ---- */

/* Whether a component from first to last is to run another version than it reports running
 * (its status.version): each may run its own override of the control plane's. */
static bool versions_changing(const struct cp *x, const struct desired_all *da, int first,
                              int last)
{
    for (int i = first; i <= last; i++) {
        const cJSON *comp = lookup_component(x->view, x->obj, (enum render_part)i);
        const cJSON *running = get(get(comp, "status"), "version");
        if (cJSON_IsString(running) && da->d[i].version[0] &&
            !api_version_equal(running->valuestring, da->d[i].version))
            return true;
    }
    return false;
}

/* Whether an API server or controller manager is. */
static bool version_changing(const struct cp *x, const struct desired_all *da)
{
    return versions_changing(x, da, RENDER_PART_APISERVER, RENDER_PART_CONTROLLER_MANAGER);
}

static const char *phase_of(const struct cp *x, const struct rollout_output *out,
                            const struct desired_all *da)
{
    switch (out->phase) {
    case ROLLOUT_PHASE_READY:
        return "Ready";
    case ROLLOUT_PHASE_UPGRADING: {
        const char *running = x->st->version ? x->st->version + (x->st->version[0] == 'v') : NULL;
        return (running && strcmp(running, da->d[RENDER_PART_APISERVER].version) != 0) ||
                       version_changing(x, da)
                   ? "Upgrading"
                   : "Reconfiguring";
    }
    default:
        return out->initialized ? "Ready" : "Provisioning";
    }
}

static int copy_etcd_addresses(struct cp *x)
{
    const cJSON *etcd = lookup_component(x->view, x->obj, RENDER_PART_ETCD), *a;
    const cJSON *arr = get(get(etcd, "status"), "addresses");
    struct api_control_plane_status *st = x->st;
    int n = cJSON_GetArraySize(arr), i = 0;

    for (size_t k = 0; k < st->n_etcd_addresses; k++) {
        free(st->etcd_addresses[k].ip);
        free(st->etcd_addresses[k].hostname);
    }
    free(st->etcd_addresses);
    st->etcd_addresses = NULL;
    st->n_etcd_addresses = 0;
    if (!cJSON_IsArray(arr) || n <= 0)
        return 0;
    if (!(st->etcd_addresses = calloc((size_t)n, sizeof(*st->etcd_addresses))))
        return -ENOMEM;
    cJSON_ArrayForEach(a, arr)
    {
        const cJSON *ip = get(a, "ip"), *host = get(a, "hostname"), *port = get(a, "port");
        struct api_etcd_address *d = &st->etcd_addresses[i];
        d->ip = cJSON_IsString(ip) ? strdup(ip->valuestring) : NULL;
        d->hostname = cJSON_IsString(host) ? strdup(host->valuestring) : NULL;
        d->port = cJSON_IsNumber(port) ? port->valueint : 0;
        st->n_etcd_addresses = (size_t)++i;
        if ((cJSON_IsString(ip) && !d->ip) || (cJSON_IsString(host) && !d->hostname))
            return -ENOMEM;
    }
    return 0;
}

static int aggregate(struct cp *x, const struct rollout_output *out, const struct desired_all *da,
                     const char *refusal_reason, const char *refusal_message)
{
    struct api_control_plane_status *st = x->st;
    const struct status_sts *as = &da->ss[RENDER_PART_APISERVER];
    const struct api_rollout_target *at = &st->rollout.apiserver;
    char version[RENDER_VERSION_MAX + 2];
    int r;

    st->initialized = st->initialized || out->initialized;
    st->control_plane_initialized = st->initialized;
    st->external_managed = true;
    st->ready = st->initialized && out->serving;
    st->replicas = as->exists ? as->status_replicas : 0;
    st->ready_replicas = as->ready;
    st->updated_replicas = as->updated;
    /* The v1beta2 contract's names: available as the StatefulSet counts it (ready for
     * minReadySeconds), up to date as updatedReplicas. */
    st->available_replicas = as->available;
    st->up_to_date_replicas = as->updated;
    if (as->complete && at->version) {
        snprintf(version, sizeof(version), "v%s", at->version);
        if ((r = set_str(&st->version, version)) < 0)
            return r;
    }
    if ((r = set_str(&st->phase, phase_of(x, out, da))) < 0 || (r = copy_etcd_addresses(x)) < 0)
        return r;
    if (st->ready && out->phase == ROLLOUT_PHASE_STALLED)
        r = cond(x, "Ready", API_CONDITION_TRUE, NULL, "Ready",
                 "serving the configuration it ran before; a roll is held back (Upgrading: %s)",
                 out->reason);
    else if (st->ready && refusal_reason)
        /* Nothing rolls while a change is refused: say so, not that a rollout runs. */
        r = cond(x, "Ready", API_CONDITION_TRUE, NULL, "Ready",
                 "serving the configuration it runs; a change was refused and nothing rolls "
                 "(Upgrading: %s)",
                 refusal_reason);
    else if (st->ready)
        r = cond(x, "Ready", API_CONDITION_TRUE, NULL, "Ready", "%s",
                 out->phase == ROLLOUT_PHASE_READY    ? "every component is ready"
                 : out->phase == ROLLOUT_PHASE_QUEUED ? "serving; a rollout waits for a slot "
                                                        "(Upgrading: RolloutQueued)"
                                                      : "serving while a rollout runs");
    else
        r = cond(x, "Ready", API_CONDITION_FALSE, STATUS_SEVERITY_INFO, out->reason, "%s",
                 out->message);
    if (r < 0)
        return r;
    if ((r = cond(x, "Available", out->serving ? API_CONDITION_TRUE : API_CONDITION_FALSE,
                  out->serving ? NULL : STATUS_SEVERITY_INFO,
                  out->serving ? "Available" : "NotServing", "%s",
                  out->serving ? "etcd has quorum and the API servers and controller managers "
                                 "have ready replicas"
                               : "not every component has ready replicas")) < 0)
        return r;
    if (refusal_reason)
        return cond(x, "Upgrading", API_CONDITION_FALSE, STATUS_SEVERITY_WARNING, refusal_reason,
                    "%s", refusal_message);
    if (out->phase == ROLLOUT_PHASE_UPGRADING && st->rollout.snapshot.message &&
        versions_changing(x, da, RENDER_PART_ETCD, RENDER_PART_APISERVER))
        /* An upgrade says, while it runs, that it runs without a snapshot. */
        return cond(x, "Upgrading", API_CONDITION_TRUE, NULL, out->reason, "%s; %s",
                    out->message, st->rollout.snapshot.message);
    if (out->phase == ROLLOUT_PHASE_UPGRADING || out->phase == ROLLOUT_PHASE_QUEUED)
        return cond(x, "Upgrading", API_CONDITION_TRUE, NULL, out->reason, "%s", out->message);
    if (out->phase == ROLLOUT_PHASE_STALLED)
        return cond(x, "Upgrading", API_CONDITION_FALSE, STATUS_SEVERITY_WARNING, out->reason,
                    "%s", out->message);
    if (!st->initialized)
        return api_conditions_remove(&st->conditions, "Upgrading") >= 0 ? 0 : -ENOMEM;
    return cond(x, "Upgrading", API_CONDITION_FALSE, NULL, "UpToDate", "%s",
                "every component runs its desired configuration");
}

/* ---- the normal path ---- */

struct name_claim {
    const struct cp *x;
    const char *cluster;
    const char *owner; /* the other control plane that holds the name, or NULL */
};

/* The cluster name another control plane in the namespace resolves to, the way
 * render_cluster_resolve names it: its Cluster's (ownerReference), else its label, else its
 * name. */
static const char *claimed_name(const cJSON *ncp)
{
    const cJSON *ref;
    const char *label = kube_obj_label(ncp, "cluster.x-k8s.io/cluster-name");

    cJSON_ArrayForEach(ref, get(get(ncp, "metadata"), "ownerReferences"))
    {
        const cJSON *k = get(ref, "kind"), *n = get(ref, "name");
        if (cJSON_IsString(k) && strcmp(k->valuestring, "Cluster") == 0 && cJSON_IsString(n))
            return n->valuestring;
    }
    return label ? label : kube_obj_name(ncp);
}

/* Whether a is older than b: creationTimestamp (RFC 3339 compares as text), then name. */
static bool older(const cJSON *a, const cJSON *b)
{
    const cJSON *ta = get(get(a, "metadata"), "creationTimestamp"),
                *tb = get(get(b, "metadata"), "creationTimestamp");
    int c = cJSON_IsString(ta) && cJSON_IsString(tb) ? strcmp(ta->valuestring, tb->valuestring) : 0;

    return c < 0 || (c == 0 && strcmp(kube_obj_name(a), kube_obj_name(b)) < 0);
}

static bool check_claim(void *userdata, const cJSON *other)
{
    struct name_claim *c = userdata;
    const char *name = kube_obj_name(other);

    if (!name || strcmp(name, c->x->name) == 0 || status_deleting(other) ||
        strcmp(claimed_name(other), c->cluster) != 0 || !older(other, c->x->obj))
        return true;
    c->owner = name;
    return false;
}

/* The name of the control plane that holds rc's cluster name, when it is not this one: the
 * controller of the cluster's CA Secret, or an older control plane of the same name. */
static bool cluster_name_owner(const struct cp *x, const struct render_cluster *rc, char *out,
                               size_t size)
{
    struct name_claim c = {x, render_cluster_name(rc), NULL};
    char ca[RENDER_CLUSTER_NAME_MAX + 8];
    const char *ca_owner;
    const cJSON *secret;

    snprintf(ca, sizeof(ca), "%s-ca", c.cluster);
    secret = kube_store_get(x->view->secrets, x->ns, ca);
    if (secret && lookup_controlled_by_kind(secret, API_KIND_NESTED_CONTROL_PLANE, &ca_owner) &&
        !lookup_controlled_by_uid(secret, kube_obj_uid(x->obj))) {
        snprintf(out, size, "%s", ca_owner);
        return true;
    }
    kube_store_foreach_in_namespace(x->view->control_planes, x->ns, check_claim, &c);
    if (!c.owner)
        return false;
    snprintf(out, size, "%s", c.owner);
    return true;
}


static int take_key(void *ctx, enum pki_key_alg alg, char **ret_key_pem, struct err *e)
{
    return keypool_take(ctx, alg, ret_key_pem, e);
}

static int plan_created_cas(struct cp *x, const struct render_cluster_pki *pki)
{
    const cJSON *ca;
    int n = 0;

    cJSON_ArrayForEach(ca, render_cluster_pki_created(pki))
    {
        cJSON *copy = cJSON_Duplicate(ca, true);
        if (!copy || plan_create_else_read(x->plan, &KUBE_SECRETS, copy, "Secret %s/%s: new CA",
                                           x->ns, kube_obj_name(ca)) < 0)
            return -ENOMEM;
        n++;
    }
    if (n > 0 && plan_event(x->plan, KUBE_EVENT_NORMAL, "CreatedCertificateAuthorities",
                            "%d CA Secrets created", n) < 0)
        return -ENOMEM;
    return n;
}

/* A CA Secret the user made without the cluster-name label (kubectl create secret tls) was
 * read live when creating ours found it (cache_view_found) and is good, since the CAs loaded:
 * labelled, so that the cache holds it from now on. Returns the number labelled, or -ENOMEM. */
static int label_found_cas(struct cp *x, const struct render_cluster *rc)
{
    static const char *const purposes[] = {PKI_PURPOSE_CA, PKI_PURPOSE_ETCD, PKI_PURPOSE_PROXY,
                                           PKI_PURPOSE_SA};
    char name[RENDER_CLUSTER_NAME_MAX];
    int n = 0;

    for (size_t i = 0; i < sizeof(purposes) / sizeof(purposes[0]); i++) {
        cJSON *patch, *labels;
        if (pki_secret_name(render_cluster_name(rc), purposes[i], name, sizeof(name)) < 0 ||
            kube_store_get(x->view->secrets, x->ns, name) ||
            !cache_view_found(x->view, &KUBE_SECRETS, x->ns, name))
            continue;
        patch = cJSON_CreateObject();
        labels = cJSON_AddObjectToObject(cJSON_AddObjectToObject(patch, "metadata"), "labels");
        if (!labels || !cJSON_AddStringToObject(labels, "cluster.x-k8s.io/cluster-name",
                                                render_cluster_name(rc))) {
            cJSON_Delete(patch);
            return -ENOMEM;
        }
        if (plan_merge_patch(x->plan, &KUBE_SECRETS, x->ns, name, NULL, patch,
                             "Secret %s/%s: a CA supplied without the cluster-name label, "
                             "labelled so that the cache holds it",
                             x->ns, name) < 0 ||
            plan_event(x->plan, KUBE_EVENT_NORMAL, "LabelledCertificateAuthority",
                       "Secret %s: used as the cluster's %s CA and labelled "
                       "cluster.x-k8s.io/cluster-name=%s",
                       name, purposes[i], render_cluster_name(rc)) < 0)
            return -ENOMEM;
        n++;
    }
    return n;
}

static int plan_kubeconfig(struct cp *x, const struct render_cluster *rc,
                           const struct render_cluster_pki *pki)
{
    char name[RENDER_CLUSTER_NAME_MAX];
    const cJSON *live;
    cJSON *secret = NULL;
    int64_t renew_at = 0;
    struct err e;
    int r;

    if (pki_secret_name(render_cluster_name(rc), PKI_PURPOSE_KUBECONFIG, name, sizeof(name)) < 0)
        return 0;
    live = kube_store_get(x->view->secrets, x->ns, name);
    /* A kubeconfig Secret someone else made is theirs. */
    if (live && !lookup_controlled_by_uid(live, x->ncp->meta.uid))
        return 0;
    err_clear(&e);
    r = render_cluster_kubeconfig(rc, pki, &x->src, &secret, &renew_at, &e);
    if (r == -EAGAIN) {
        plan_requeue_after(x->plan, NESTED_KEY_WAIT);
        return 0;
    }
    if (r < 0)
        return r == -ENOMEM ? r : cond(x, "Ready", API_CONDITION_FALSE, STATUS_SEVERITY_ERROR,
                                      "KubeconfigFailed", "%s", e.msg);
    if (!secret) {
        nested_requeue_for_renewal(x->plan, x->view->now, renew_at);
        return 0;
    }
    if (live)
        return plan_apply(x->plan, &KUBE_SECRETS, secret, "Secret %s/%s: kubeconfig renewed",
                          x->ns, name);
    return plan_create(x->plan, &KUBE_SECRETS, secret, "Secret %s/%s: admin kubeconfig", x->ns,
                       name);
}

/* Ready False for something the user must fix: phase Failed, as docs/api.md promises, until a
 * later pass finds it fixed (aggregate() then sets the phase of the rollout). */
static int invalid(struct cp *x, const char *reason, const char *message)
{
    int r = set_str(&x->st->phase, "Failed");

    return r < 0 ? r
                 : cond(x, "Ready", API_CONDITION_FALSE, STATUS_SEVERITY_ERROR, reason, "%s",
                        message);
}

/* Waiting for objects the user has yet to create: Provisioning, unless the rollout has set a
 * phase of its own. */
static int waiting_phase(struct cp *x)
{
    if (x->st->phase && strcmp(x->st->phase, "Failed") != 0)
        return 0;
    return set_str(&x->st->phase, "Provisioning");
}

static int reconcile_normal(struct cp *x)
{
    struct nested_ctx *ctx = x->ctx;
    struct api_errors errs = API_ERRORS_INIT;
    struct render_cluster *rc = NULL;
    struct render_cluster_pki *pki = NULL;
    struct desired_all *da = NULL;
    struct rollout_output out;
    const char *refusal = NULL;
    char cidrs[512], refusal_msg[1024];
    struct err e;
    int r;

    err_clear(&e);
    r = render_cluster_resolve(ctx->cat, &x->src, x->ns, x->name, &rc, &errs);
    if (r == -EINVAL) {
        api_errors_to_err(&errs, NULL, &e);
        r = invalid(x, api_errors_reason(&errs), e.msg);
        goto out;
    }
    if (r == -ENOENT) {
        api_errors_to_err(&errs, NULL, &e);
        if ((r = waiting_phase(x)) == 0)
            r = cond(x, "Ready", API_CONDITION_FALSE, STATUS_SEVERITY_ERROR, "MissingObjects",
                     "%s", e.msg);
        goto out;
    }
    if (r < 0)
        goto out;
    /* Nothing is created before every component exists and renders: what fails without any
     * key stops everything. */
    for (int i = 0; i < RENDER_PART__COUNT; i++) {
        const char *missing = render_cluster_missing(rc, (enum render_part)i);
        if (missing) {
            if ((r = waiting_phase(x)) == 0)
                r = cond(x, "Ready", API_CONDITION_FALSE, STATUS_SEVERITY_INFO,
                         "WaitingForComponents", "%s", missing);
            goto out;
        }
    }
    /* One cluster name, one owner: nothing is touched for a name another control plane
     * holds. */
    {
        char owner[RENDER_CLUSTER_NAME_MAX];
        if (cluster_name_owner(x, rc, owner, sizeof(owner))) {
            char msg[1024];
            snprintf(msg, sizeof(msg),
                     "cluster name %s is in use by NestedControlPlane %s/%s; this control plane "
                     "touches nothing of it (rename it, or set its %s label to a name of its "
                     "own)",
                     render_cluster_name(rc), x->ns, owner, "cluster.x-k8s.io/cluster-name");
            r = invalid(x, "ClusterNameInUse", msg);
            goto out;
        }
    }
    x->cluster = render_cluster_name(rc);
    r = nested_check_render(ctx->cat, rc, RENDER_PART__COUNT, &e);
    if (r == -EINVAL) {
        r = invalid(x, "InvalidSpec", e.msg);
        goto out;
    }
    if (r < 0)
        goto out;
    if (ctx->keys)
        render_cluster_set_key_source(rc, take_key, ctx->keys);
    nested_cert_policy(ctx, rc);
    render_cluster_set_allow_privileged(rc, ctx->allow_privileged);
    render_cluster_set_manager_namespace(rc, ctx->manager_namespace);
    render_cluster_set_check_memo(rc, &ctx->memo);

    /* The finalizer and the endpoint, before anything is created; the patch makes the
     * control plane reconcile again. */
    {
        const struct api_endpoint *ep = &render_cluster_control_plane(rc)->spec.control_plane_endpoint;
        bool need_ep = !x->ncp->spec.control_plane_endpoint.host && ep->host;
        if (!has_finalizer(x->ncp) || !has_block_move(x->ncp) || need_ep) {
            r = patch_self(x, true, need_ep ? ep : NULL);
            goto out;
        }
    }
    r = cond(x, "MoveBlocked", API_CONDITION_TRUE, NULL, "TenantDataNotMovable", "%s",
             "clusterctl move would copy the Cluster API objects but not the tenant's "
             "StatefulSets and etcd data, which this cluster would then delete; the annotation "
             NESTED_BLOCK_MOVE " makes it wait");
    if (r < 0)
        goto out;

    /* CAs first: when one is created, the rest waits for it to be read back. */
    if (ctx->keys)
        keypool_reserve(ctx->keys, render_cluster_key_alg(rc), 5);
    r = render_cluster_pki_load(rc, &x->src, (int64_t)x->view->now, true, &pki, &errs);
    if (r == -EAGAIN) {
        plan_requeue_after(x->plan, NESTED_KEY_WAIT);
        r = cond(x, "CertificatesAvailable", API_CONDITION_FALSE, STATUS_SEVERITY_INFO,
                 "GeneratingKeys", "waiting for private keys");
        goto out;
    }
    if (r == -EINVAL) {
        api_errors_to_err(&errs, NULL, &e);
        r = cond(x, "CertificatesAvailable", API_CONDITION_FALSE, STATUS_SEVERITY_ERROR,
                 "InvalidCertificateAuthority", "%s", e.msg);
        if (r == 0)
            r = cond(x, "Ready", API_CONDITION_FALSE, STATUS_SEVERITY_INFO,
                     "InvalidCertificateAuthority", "%s", e.msg);
        /* A CA Secret without the label changes without the cache seeing it: read it again. */
        plan_requeue_after(x->plan, CACHE_VIEW_CONFLICT_TTL);
        goto out;
    }
    if (r < 0)
        goto out;
    if ((r = plan_created_cas(x, pki)) != 0) {
        if (r > 0)
            r = cond(x, "CertificatesAvailable", API_CONDITION_FALSE, STATUS_SEVERITY_INFO,
                     "Creating", "the CA Secrets are being created");
        if (r == 0)
            r = cond(x, "Ready", API_CONDITION_FALSE, STATUS_SEVERITY_INFO, "Creating",
                     "the CA Secrets are being created");
        goto out;
    }
    if ((r = label_found_cas(x, rc)) != 0) {
        if (r > 0)
            r = cond(x, "CertificatesAvailable", API_CONDITION_FALSE, STATUS_SEVERITY_INFO,
                     "Labelling", "CA Secrets supplied without the cluster-name label are "
                                  "being labelled");
        goto out;
    }
    if ((r = ca_expiry(x, pki)) < 0)
        goto out;

    r = adopt_components(x);
    if (r == -EPERM) {
        r = 0;
        goto out;
    }
    if (r < 0 || (r = plan_kubeconfig(x, rc, pki)) < 0)
        goto out;

    if (!(da = calloc(1, sizeof(*da)))) {
        r = -ENOMEM;
        goto out;
    }
    if ((r = compute_desired(x, rc, pki, da)) < 0) {
        if (r == -EINVAL)
            r = 0;
        goto out;
    }
    if ((r = restart_after_restore(x, da)) < 0)
        goto out;
    /* The service CIDR is fixed once the cluster has been set up with it. */
    service_cidrs(rc, cidrs, sizeof(cidrs));
    if (x->st->service_cidr && strcmp(x->st->service_cidr, cidrs) != 0) {
        refusal = "ServiceCIDRChangeRefused";
        snprintf(refusal_msg, sizeof(refusal_msg),
                 "spec.clusterNetwork.services.cidrBlocks: %s differs from %s, the service "
                 "range the cluster was set up with; it cannot change (kubeadm treats it as "
                 "immutable)",
                 cidrs, x->st->service_cidr);
    }
    /* Nothing rolls etcd in a way that loses the tenant's data (controllers/etcdsafety.h). */
    if (!refusal) {
        struct etcd_safety es;
        nested_etcd_safety(x->view, &x->src, rc,
                           da->d[RENDER_PART_ETCD].known ? da->d[RENDER_PART_ETCD].config_hash
                                                         : NULL,
                           &es);
        if (es.refusal) {
            refusal = es.refusal;
            snprintf(refusal_msg, sizeof(refusal_msg), "%s", es.message);
        }
    }
    r = step_rollout(x, da, refusal != NULL, &out);
    if (r < 0)
        goto out;
    if (!refusal && out.phase == ROLLOUT_PHASE_REFUSED) {
        refusal = out.reason;
        snprintf(refusal_msg, sizeof(refusal_msg), "%s", out.message);
    }
    if (!refusal && !x->st->service_cidr && x->st->rollout.etcd.config_hash &&
        (r = set_str(&x->st->service_cidr, cidrs)) < 0)
        goto out;
    r = aggregate(x, &out, da, refusal, refusal_msg);
    if (r == 0)
        r = rotate_sa_key(x, rc, !refusal && out.phase == ROLLOUT_PHASE_READY,
                          (refusal && strcmp(refusal, "ServiceCIDRChangeRefused") != 0) ||
                              (out.phase == ROLLOUT_PHASE_UPGRADING &&
                               strcmp(phase_of(x, &out, da), "Upgrading") == 0));
out:
    free(da);
    render_cluster_pki_free(pki);
    render_cluster_free(rc);
    api_errors_done(&errs);
    return r;
}

int nestedcontrolplane_reconcile(void *ctx, const struct cache_view *view, const char *ns,
                                 const char *name, struct plan *plan, struct err *e)
{
    struct cp x = {.ctx = ctx, .view = view, .plan = plan, .ns = ns, .name = name};
    struct api_errors errs = API_ERRORS_INIT;
    const cJSON *cl;
    const char *rejected;
    cJSON *old = NULL;
    struct err msg;
    int r;

    x.obj = kube_store_get(view->control_planes, ns, name);
    if (!x.obj)
        return 0;
    lookup_source(view, &x.src);
    r = api_control_plane_from_json(x.obj, &x.ncp, &errs);
    if (r == -EINVAL) {
        err_clear(&msg);
        api_errors_to_err(&errs, NULL, &msg);
        r = status_deleting(x.obj) ? 0
                                   : status_plan_invalid(plan, &NESTCP_CONTROL_PLANES, x.obj,
                                                         "InvalidSpec", msg.msg, "Failed",
                                                         view->now);
        goto out;
    }
    if (r < 0)
        goto out;
    x.st = &x.ncp->status;
    x.gen = x.ncp->meta.generation;
    if (!(old = api_control_plane_status_to_json(x.st))) {
        r = -ENOMEM;
        goto out;
    }
    x.st->observed_generation = x.gen;
    cl = lookup_capi_cluster(view, x.obj, API_KIND_NESTED_CONTROL_PLANE, NULL);
    if (x.ncp->meta.deleting) {
        r = reconcile_delete(&x);
    } else if (status_paused(x.obj, cl)) {
        r = cond(&x, "Paused", API_CONDITION_TRUE, NULL, "Paused", "%s",
                 "reconciliation is paused (annotation cluster.x-k8s.io/paused or Cluster "
                 "spec.paused)");
    } else {
        r = cond(&x, "Paused", API_CONDITION_FALSE, NULL, "NotPaused", "%s", "");
        if (r == 0)
            r = reconcile_normal(&x);
    }
    /* A write of the last plan was refused (the runtime's Event said so): Ready tells why
     * until a plan goes through. */
    rejected = cache_view_rejected(view, &NESTCP_CONTROL_PLANES, ns, name);
    if (r >= 0 && rejected && !x.ncp->meta.deleting)
        r = status_condition(&x.st->conditions, "Ready", API_CONDITION_FALSE,
                             STATUS_SEVERITY_ERROR, "WriteRejected", x.gen, view->now, "%s",
                             rejected);
    if (r >= 0 && !x.spec_patched)
        r = status_plan_write(plan, &NESTCP_CONTROL_PLANES, x.obj,
                              api_control_plane_status_to_json(x.st), old);
    /* A step is taken when status.rollout records its target (the components read it there):
     * its Event goes out after that write, and not at all without it (it is planned again). */
    if (r >= 0 && x.spec_patched)
        plan_events_drop(plan, x.step_events, x.step_events_end);
    else if (r >= 0)
        plan_events_after_all(plan, x.step_events, x.step_events_end);
out:
    if (r > 0)
        r = 0;
    if (r < 0)
        err_set(e, r, "NestedControlPlane %s/%s: %s", ns, name,
                r == -ENOMEM ? "out of memory" : err_code_name(r));
    cJSON_Delete(old);
    api_control_plane_free(x.ncp);
    api_errors_done(&errs);
    return r;
}

struct map_ctx {
    enqueue_fn enqueue;
    void *q;
};

static void enqueue_ncp(void *userdata, const cJSON *ncp)
{
    struct map_ctx *m = userdata;

    m->enqueue(m->q, kube_obj_namespace(ncp), kube_obj_name(ncp));
}

static int by_queue_order(const void *a, const void *b)
{
    const struct brake_peer *x = a, *y = b;
    int c;

    if (x->queued_since != y->queued_since)
        return x->queued_since < y->queued_since ? -1 : 1;
    c = strcmp(x->ns ? x->ns : "", y->ns ? y->ns : "");
    return c ? c : strcmp(x->name ? x->name : "", y->name ? y->name : "");
}

/* A control plane that is not rolling (a roll ended, or it went) may free a slot: the first
 * waiting ones, as many as there are free slots, are reconciled again. */
static void wake_queued(struct nested_ctx *ctx, const struct cache_view *view, const cJSON *obj,
                        enqueue_fn enqueue, void *q)
{
    struct peers p = {ctx, view, NULL, NULL, NULL, 0, 0, 0};
    struct brake_peer self;
    size_t waiting = 0;
    int limit, rolling = 0;

    if (ctx->max_rollouts.value <= 0)
        return;
    peer_of(ctx, view, obj, &self);
    if ((self.rolling || self.queued) && kube_store_get(view->control_planes, self.ns, self.name))
        return;
    kube_store_foreach(view->control_planes, collect_peer, &p);
    limit = brake_limit_resolve(&ctx->max_rollouts, kube_store_count(view->control_planes));
    for (size_t i = 0; i < p.n; i++) {
        rolling += p.items[i].rolling;
        if (p.items[i].queued)
            p.items[waiting++] = p.items[i];
    }
    qsort(p.items, waiting, sizeof(*p.items), by_queue_order);
    for (size_t i = 0; i < waiting && (int)i < limit - rolling; i++)
        enqueue(q, p.items[i].ns, p.items[i].name);
    free(p.items);
}

void nestedcontrolplane_map(void *ctx, const struct cache_view *view,
                            const struct kube_resource *res, const cJSON *obj, enqueue_fn enqueue,
                            void *q)
{
    struct map_ctx m = {enqueue, q};

    lookup_control_planes_for(view, res, obj, enqueue_ncp, &m);
    if (res == &NESTCP_CONTROL_PLANES && ctx)
        wake_queued(ctx, view, obj, enqueue, q);
}

void nestedcontrolplane_def(struct nested_ctx *ctx, struct controller_def *ret_def)
{
    *ret_def = (struct controller_def){
        .name = "nestedcontrolplane",
        .primary = &NESTCP_CONTROL_PLANES,
        .reconcile = nestedcontrolplane_reconcile,
        .map = nestedcontrolplane_map,
        .ctx = ctx,
    };
}
