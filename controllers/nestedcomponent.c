/*
 * NestedEtcd, NestedAPIServer and NestedControllerManager: one reconciler parameterised by the
 * component (enum render_part). Each owns its certs Secret <c>-<short>-certs-<hash>, its
 * Service(s) and its StatefulSet, all built by lib/render/cluster.h.
 *
 *   component -> its control plane (adopted by it) -> render_cluster_resolve
 *   -> the CA Secrets (never created here) -> a good certs Secret, or a new one created ahead
 *   -> render the objects and their config hash
 *   -> etcd: persistence, restore, snapshot, membership (competcd.c)
 *   -> hash == the target in the control plane's status.rollout: apply what differs
 *      (compobjects.c); otherwise: leave the running StatefulSet alone
 *   -> rollout complete at the target: delete superseded certs Secrets
 *   -> status (phase, healthy, conditions, replicas, version, addresses / Service)
 *      (compstatus.c)
 *
 * This file holds the reconcile itself, the certs Secret and the watch mapping; the parts it
 * shares with the others are in controllers/comp.h. Nothing is done for a component or
 * control plane being deleted, and nothing but the Paused condition while paused.
 */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/conditions.h"
#include "api/kinds.h"
#include "api/status.h"
#include "api/types.h"
#include "controllers/comp.h"
#include "controllers/etcdmembership.h"
#include "controllers/keypool.h"
#include "controllers/lookup.h"
#include "controllers/move.h"
#include "controllers/nested.h"
#include "controllers/status.h"
#include "lib/kube/store.h"
#include "lib/pki/secret.h"
#include "lib/render/transform.h"

int comp_cond(struct comp *x, const char *type, const char *status, const char *severity,
              const char *reason, const char *msg)
{
    int r = status_condition(&x->st->conditions, type, status, severity, reason, x->gen,
                             x->view->now, "%s", msg);

    if (r > 0 && severity && strcmp(severity, STATUS_SEVERITY_ERROR) == 0 &&
        plan_event(x->plan, KUBE_EVENT_WARNING, reason, "%s", msg) < 0)
        return -ENOMEM;
    return r < 0 ? r : 0;
}

int comp_not_ready(struct comp *x, const char *severity, const char *reason, const char *fmt, ...)
{
    char msg[ERR_MSG_MAX + 256];
    va_list ap;
    int r;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    r = comp_cond(x, "Ready", API_CONDITION_FALSE, severity, reason, msg);
    return r;
}

/* ---- keys ---- */

static int take_key(void *ctx, enum pki_key_alg alg, char **ret_key_pem, struct err *e)
{
    return keypool_take(ctx, alg, ret_key_pem, e);
}

static size_t keys_needed(enum render_part part)
{
    switch (part) {
    case RENDER_PART_ETCD:
        return 3; /* server, peer, healthcheck client */
    case RENDER_PART_APISERVER:
        return 4;
    default:
        return 1;
    }
}

/* ---- certs Secrets issued but not yet seen ---- */

struct issued {
    double at;
    const char *secret; /* in the same allocation, after key */
    char key[];
};

/* True when a certs Secret this reconciler created is still on its way to the cache. */
static bool issue_pending(struct comp *x)
{
    struct issued *is = strmap_get(&x->pc->issued, x->key);

    if (!is)
        return false;
    if (kube_store_get(x->view->secrets, x->ns, is->secret) ||
        x->view->now - is->at > NESTED_ISSUE_WAIT) {
        free(strmap_remove(&x->pc->issued, x->key));
        return false;
    }
    return true;
}

static void remember_issued(struct comp *x, const char *secret)
{
    size_t kl = strlen(x->key) + 1, sl = strlen(secret) + 1;
    struct issued *is = malloc(sizeof(*is) + kl + sl);

    if (!is)
        return; /* only an optimisation */
    memcpy(is->key, x->key, kl);
    memcpy(is->key + kl, secret, sl);
    is->secret = is->key + kl;
    is->at = x->view->now;
    free(strmap_remove(&x->pc->issued, is->key));
    if (strmap_put(&x->pc->issued, is->key, is) < 0)
        free(is);
}

struct superseded {
    struct comp *x;
    const char *uid, *keep1, *keep2, *prefix;
    int r;
};

static bool delete_superseded(void *userdata, const cJSON *secret)
{
    struct superseded *s = userdata;
    const char *name = kube_obj_name(secret);

    if (!name || strncmp(name, s->prefix, strlen(s->prefix)) != 0 ||
        !lookup_controlled_by_uid(secret, s->uid) || (s->keep1 && !strcmp(name, s->keep1)) ||
        (s->keep2 && !strcmp(name, s->keep2)) || status_deleting(secret))
        return true;
    if (plan_delete(s->x->plan, &KUBE_SECRETS, s->x->ns, name, kube_obj_uid(secret),
                    "Secret %s/%s: superseded certificates, no longer mounted", s->x->ns,
                    name) < 0) {
        s->r = -ENOMEM;
        return false;
    }
    return true;
}

/* ---- the component's objects ---- */

static int reconcile_children(struct comp *x)
{
    struct nested_ctx *base = x->pc->base;
    struct api_errors errs = API_ERRORS_INIT;
    struct render_cluster *rc = NULL;
    struct render_cluster_pki *pki = NULL;
    char certs[RENDER_CLUSTER_NAME_MAX], hash[RENDER_CLUSTER_HASH_MAX] = "";
    char prefix[RENDER_CLUSTER_NAME_MAX + 16], stsname[RENDER_CLUSTER_NAME_MAX];
    cJSON *secret = NULL, *objs = NULL;
    struct status_sts ss;
    struct err e, why;
    int64_t renew_at = 0;
    int r;

    err_clear(&e);
    r = render_cluster_resolve(base->cat, &x->src, x->ns, kube_obj_name(x->ncp), &rc, &errs);
    if (r == -EINVAL || r == -ENOENT) {
        api_errors_to_err(&errs, NULL, &e);
        r = comp_not_ready(x, STATUS_SEVERITY_ERROR,
                           r == -EINVAL ? api_errors_reason(&errs) : "MissingObjects", "%s", e.msg);
        goto out;
    }
    if (r < 0)
        goto out;
    render_cluster_set_allow_privileged(rc, base->allow_privileged);
    render_cluster_set_manager_namespace(rc, base->manager_namespace);
    render_cluster_set_check_memo(rc, &base->memo);
    if ((r = render_cluster_check(base->cat, rc, x->part, (int64_t)x->view->now, &e)) == -EINVAL) {
        r = comp_not_ready(x, STATUS_SEVERITY_ERROR, "InvalidSpec", "%s", e.msg);
        goto out;
    }
    if (r < 0)
        goto out;
    if (base->keys)
        render_cluster_set_key_source(rc, take_key, base->keys);
    nested_cert_policy(base, rc);
    r = render_cluster_pki_load(rc, &x->src, (int64_t)x->view->now, false, &pki, &errs);
    if (r == -ENOENT || r == -EINVAL) {
        api_errors_to_err(&errs, NULL, &e);
        if (r == -ENOENT)
            r = comp_not_ready(x, STATUS_SEVERITY_INFO, "WaitingForCertificateAuthorities", "%s",
                               e.msg);
        else
            r = comp_not_ready(x, STATUS_SEVERITY_ERROR, "InvalidCertificateAuthority", "%s",
                               e.msg);
        goto out;
    }
    if (r < 0)
        goto out;

    snprintf(stsname, sizeof(stsname), "%s-%s", render_cluster_name(rc),
             render_part_short(x->part));
    status_statefulset(kube_store_get(x->view->statefulsets, x->ns, stsname), x->target_hash, &ss);
    err_clear(&why);
    r = render_cluster_certs_find(rc, pki, &x->src, x->part, ss.certs, certs, &renew_at, &why);
    if (r == 0)
        nested_requeue_for_renewal(x->plan, x->view->now, renew_at);
    if (r == -ENOENT) {
        if (issue_pending(x)) {
            plan_requeue_after(x->plan, 1.0);
            r = comp_not_ready(x, STATUS_SEVERITY_INFO, "IssuingCertificates",
                               "waiting for the new certificates Secret to be seen");
            goto out;
        }
        if (base->keys)
            keypool_reserve(base->keys, render_cluster_key_alg(rc), keys_needed(x->part));
        r = render_cluster_certs_issue(rc, pki, &x->src, x->part, ss.certs, &secret, &e);
        if (r == -EAGAIN) {
            plan_requeue_after(x->plan, NESTED_KEY_WAIT);
            r = comp_not_ready(x, STATUS_SEVERITY_INFO, "IssuingCertificates",
                               "waiting for private keys (%s)", e.msg);
            goto out;
        }
        if (r == -EINVAL || r == -ENOENT) {
            r = comp_not_ready(x, STATUS_SEVERITY_ERROR, "CertificatesFailed", "%s", e.msg);
            goto out;
        }
        if (r < 0)
            goto out;
        snprintf(certs, sizeof(certs), "%s", kube_obj_name(secret));
        remember_issued(x, certs);
        /* The Event after the create it reports: it goes out once the Secret exists. */
        r = plan_create(x->plan, &KUBE_SECRETS, secret, "Secret %s/%s: new certificates", x->ns,
                        certs);
        secret = NULL;
        if (r < 0 ||
            plan_event(x->plan, KUBE_EVENT_NORMAL, "IssuedCertificates", "Secret %s: %s", certs,
                       ss.certs ? why.msg : "the component's first certificates") < 0) {
            r = -ENOMEM;
            goto out;
        }
    } else if (r < 0) {
        goto out;
    }

    r = render_cluster_component(base->cat, rc, x->part, certs, &objs, hash, &e);
    if (r == -EINVAL || r == -ENOENT) {
        r = comp_not_ready(x, STATUS_SEVERITY_ERROR, "InvalidSpec", "%s", e.msg);
        goto out;
    }
    if (r < 0)
        goto out;
    if ((r = comp_report_persistence(x, rc, hash)) < 0 ||
        (r = comp_reconcile_members(x, rc, certs, hash, objs)) < 0)
        goto out;
    /* A move being prepared stops the API servers and controller managers until it is
     * cancelled or fails (controllers/move.h): nothing is written after its snapshot. */
    if (x->part != RENDER_PART_ETCD && move_stops_components(x->ncp)) {
        err_clear(&e);
        if ((r = render_transform_statefulset_scale(objs, 0, 0, &e)) < 0)
            goto out;
    }
    if (x->part != RENDER_PART_ETCD && x->rolled_back && x->target_hash &&
        strcmp(hash, x->target_hash) == 0 && (r = comp_hold_back(x, objs, stsname)) < 0)
        goto out;
    if (x->target_hash && strcmp(hash, x->target_hash) == 0) {
        if ((r = comp_delete_unrendered(x, objs)) < 0 || (r = comp_apply_changed(x, objs)) < 0)
            goto out;
        if (x->conflict[0]) {
            /* Looked at again once the runtime would read the object again. */
            plan_requeue_after(x->plan, CACHE_VIEW_CONFLICT_TTL);
            r = comp_not_ready(x, STATUS_SEVERITY_ERROR, "ObjectConflict", "%s", x->conflict);
            goto out;
        }
        /* Superseded certs Secrets go once nothing can mount them any more. */
        if (ss.complete && ss.certs && strcmp(ss.certs, certs) == 0) {
            struct superseded s = {x, kube_obj_uid(x->obj), certs, NULL, prefix, 0};
            snprintf(prefix, sizeof(prefix), "%s-%s-certs-", render_cluster_name(rc),
                     render_part_short(x->part));
            if (s.uid)
                kube_store_foreach_owned(x->view->secrets, s.uid, delete_superseded, &s);
            if ((r = s.r) < 0)
                goto out;
        }
    }
    r = comp_observe(x, rc, hash);
out:
    cJSON_Delete(secret);
    cJSON_Delete(objs);
    render_cluster_pki_free(pki);
    render_cluster_free(rc);
    api_errors_done(&errs);
    return r;
}

/* ---- reconcile ---- */

/* The control plane's target for this component. */
static void read_target(struct comp *x)
{
    const cJSON *t =
        get(get(get(get(x->ncp, "status"), "rollout"), "components"), render_part_field(x->part));

    x->target_hash = str(t, "configHash");
    x->target_version = str(t, "version");
    x->rolled_back = str(t, "rolledBack");
    if (x->target_hash && !x->target_hash[0])
        x->target_hash = NULL;
}

static int reconcile_parsed(struct comp *x)
{
    const cJSON *cl;
    const char *ncp_uid;
    int r;

    x->ncp = lookup_control_plane_of_component(x->view, x->obj, x->part);
    cl = x->ncp ? lookup_capi_cluster(x->view, x->ncp, API_KIND_NESTED_CONTROL_PLANE, NULL) : NULL;
    if (status_paused(x->obj, cl) || (x->ncp && status_paused(x->ncp, NULL)))
        return comp_cond(x, "Paused", API_CONDITION_TRUE, NULL, "Paused",
                         "reconciliation is paused (annotation cluster.x-k8s.io/paused or Cluster "
                         "spec.paused)");
    if ((r = comp_cond(x, "Paused", API_CONDITION_FALSE, NULL, "NotPaused", "")) < 0)
        return r;
    if (!x->ncp)
        return comp_not_ready(x, STATUS_SEVERITY_INFO, "WaitingForControlPlane",
                              "no NestedControlPlane in namespace %s refers to %s %s", x->ns,
                              kind_name(x), x->name);
    ncp_uid = kube_obj_uid(x->ncp);
    if (!lookup_controlled_by_uid(x->obj, ncp_uid)) {
        const char *owner;
        if (kube_obj_controller_ref(x->obj) &&
            !lookup_controlled_by_kind(x->obj, API_KIND_NESTED_CONTROL_PLANE, &owner))
            return comp_not_ready(x, STATUS_SEVERITY_ERROR, "ControlledByAnotherOwner",
                                  "%s %s is controlled by another owner, not NestedControlPlane %s",
                                  kind_name(x), x->name, kube_obj_name(x->ncp));
        return comp_not_ready(x, STATUS_SEVERITY_INFO, "WaitingForAdoption",
                              "waiting for NestedControlPlane %s to adopt it",
                              kube_obj_name(x->ncp));
    }
    read_target(x);
    return reconcile_children(x);
}

int nestedcomponent_reconcile(void *ctx, const struct cache_view *view, const char *ns,
                              const char *name, struct plan *plan, struct err *e)
{
    struct nested_part_ctx *pc = ctx;
    struct comp x = {
        .pc = pc, .part = pc->part, .view = view, .plan = plan, .ns = ns, .name = name};
    struct api_errors errs = API_ERRORS_INIT;
    const cJSON *ncp;
    const char *rejected;
    cJSON *old = NULL;
    struct err msg;
    int r;

    snprintf(x.key, sizeof(x.key), "%s/%s", ns, name);
    x.obj = kube_store_get(lookup_store(view, render_part_kind(pc->part)), ns, name);
    if (!x.obj || status_deleting(x.obj)) {
        if (pc->part == RENDER_PART_ETCD)
            etcd_membership_forget(pc->base->members, x.key);
        /* A certs Secret it may still wait for: nothing is issued for it any more. */
        free(strmap_remove(&pc->issued, x.key));
        return 0;
    }
    ncp = lookup_control_plane_of_component(view, x.obj, pc->part);
    if (ncp && status_deleting(ncp))
        return 0;
    /* clusterctl copied it elsewhere and deletes it here: the garbage collector removes what
     * it owns, nothing else is done to it. */
    if (move_deleting_for_move(x.obj) || move_deleting_for_move(ncp))
        return 0;
    plan_init(&x.after_status);
    lookup_source(view, &x.src);
    r = api_component_from_json(x.obj, &x.c, &errs);
    if (r == -EINVAL) {
        err_clear(&msg);
        api_errors_to_err(&errs, NULL, &msg);
        r = status_plan_invalid(plan, nested_part_resource(pc->part), x.obj, "InvalidSpec", msg.msg,
                                "Unready", view->now);
        goto out;
    }
    if (r < 0)
        goto out;
    x.st = &x.c->status;
    x.gen = x.c->meta.generation;
    if (!(old = api_component_status_to_json(x.c->kind, x.st))) {
        r = -ENOMEM;
        goto out;
    }
    x.st->observed_generation = x.gen;
    r = reconcile_parsed(&x);
    /* A write of the last plan was refused (the runtime's Event said so): Ready tells why
     * until a plan goes through. */
    rejected = cache_view_rejected(view, nested_part_resource(pc->part), ns, name);
    if (r >= 0 && rejected)
        r = status_condition(&x.st->conditions, "Ready", API_CONDITION_FALSE, STATUS_SEVERITY_ERROR,
                             "WriteRejected", x.gen, view->now, "%s", rejected);
    if (r >= 0) {
        const struct api_condition *ready = api_conditions_get(&x.st->conditions, "Ready");
        free(x.st->phase);
        x.st->phase =
            strdup(ready && !strcmp(ready->status, API_CONDITION_TRUE) ? "Ready" : "Unready");
        r = x.st->phase ? status_plan_write(plan, nested_part_resource(pc->part), x.obj,
                                            api_component_status_to_json(x.c->kind, x.st), old)
                        : -ENOMEM;
        if (r >= 0)
            r = plan_append(plan, &x.after_status);
        if (r >= 0)
            plan_events_after_all(plan, x.restore_events, x.restore_events_end);
    }
out:
    plan_done(&x.after_status);
    if (r > 0)
        r = 0;
    if (r < 0)
        err_set(e, r, "%s %s/%s: %s", nested_part_resource(pc->part)->kind, ns, name,
                r == -ENOMEM ? "out of memory" : err_code_name(r));
    cJSON_Delete(old);
    api_component_free(x.c);
    api_errors_done(&errs);
    return r;
}

/* ---- what to reconcile ---- */

struct map_ctx {
    struct nested_part_ctx *pc;
    const struct cache_view *view;
    enqueue_fn enqueue;
    void *q;
};

static void enqueue_component_of(void *userdata, const cJSON *ncp)
{
    struct map_ctx *m = userdata;
    const cJSON *comp = lookup_component(m->view, ncp, m->pc->part);

    if (comp)
        m->enqueue(m->q, kube_obj_namespace(comp), kube_obj_name(comp));
}

void nestedcomponent_map(void *ctx, const struct cache_view *view, const struct kube_resource *res,
                         const cJSON *obj, enqueue_fn enqueue, void *q)
{
    struct nested_part_ctx *pc = ctx;
    const struct kube_resource *own = nested_part_resource(pc->part);
    struct map_ctx m = {pc, view, enqueue, q};
    const char *owner;

    if (strcmp(res->group, own->group) == 0 && strcmp(res->resource, own->resource) == 0) {
        enqueue(q, kube_obj_namespace(obj), kube_obj_name(obj));
        return;
    }
    if (res == &KUBE_PODS || res == &KUBE_PVCS) {
        /* A pod or claim of the component: the component of its StatefulSet
         * <cluster>-<short>. */
        const char *cluster = kube_obj_label(obj, "cluster.x-k8s.io/cluster-name");
        const char *which = kube_obj_label(obj, "app.kubernetes.io/component");
        const char *part_short = render_part_short(pc->part);
        char sts[RENDER_CLUSTER_NAME_MAX + 32];
        const cJSON *set;

        if (!cluster || !which || strcmp(which, part_short) != 0)
            return;
        snprintf(sts, sizeof(sts), "%s-%s", cluster, part_short);
        set = kube_store_get(view->statefulsets, kube_obj_namespace(obj), sts);
        if (set && lookup_controlled_by_kind(set, render_part_kind(pc->part), &owner))
            enqueue(q, kube_obj_namespace(obj), owner);
        return;
    }
    if (lookup_controlled_by_kind(obj, render_part_kind(pc->part), &owner)) {
        enqueue(q, kube_obj_namespace(obj), owner);
        return;
    }
    lookup_control_planes_for(view, res, obj, enqueue_component_of, &m);
}

void nestedcomponent_def(struct nested_ctx *ctx, enum render_part part,
                         struct reconciler_def *ret_def)
{
    *ret_def = (struct reconciler_def){
        .name = api_kind_info(render_part_kind(part))->singular, /* "nestedetcd", ... */
        .primary = nested_part_resource(part),
        .reconcile = nestedcomponent_reconcile,
        .map = nestedcomponent_map,
        .ctx = &ctx->parts[part],
    };
}
