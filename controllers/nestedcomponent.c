/*
 * NestedEtcd, NestedAPIServer and NestedControllerManager: one reconciler parameterised by the
 * component (enum render_part). Each owns its certs Secret <c>-<short>-certs-<hash>, its
 * Service(s) and its StatefulSet, all built by lib/render/cluster.h.
 *
 *   component -> its control plane (adopted by it) -> render_cluster_resolve
 *   -> the CA Secrets (never created here) -> a good certs Secret, or a new one created ahead
 *   -> render the objects and their config hash
 *   -> hash == the target in the control plane's status.rollout: apply what differs
 *      otherwise: leave the running StatefulSet alone
 *   -> rollout complete at the target: delete superseded certs Secrets
 *   -> status (phase, healthy, conditions, replicas, version, addresses / Service)
 *
 * Nothing is done for a component or control plane being deleted, and nothing but the Paused
 * condition while paused.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/conditions.h"
#include "api/kinds.h"
#include "api/status.h"
#include "api/types.h"
#include "controllers/etcdmembership.h"
#include "controllers/etcdrestore.h"
#include "controllers/etcdsnapshot.h"
#include "controllers/keypool.h"
#include "controllers/lookup.h"
#include "controllers/nested.h"
#include "controllers/rollhealth.h"
#include "controllers/status.h"
#include "lib/kube/store.h"
#include "lib/pki/secret.h"
#include "lib/render/transform.h"

/* One reconcile in progress. */
struct comp {
    struct nested_part_ctx *pc;
    enum render_part part;
    const struct cache_view *view;
    struct render_source src;
    struct plan *plan;
    struct plan after_status; /* etcd: the pod release or etcd call, after the status write */
    const char *ns, *name;
    const cJSON *obj, *ncp;
    struct api_component *c;
    struct api_component_status *st;
    int64_t gen;
    const char *target_hash, *target_version; /* from the control plane, or NULL */
    const char *rolled_back; /* the roll to the target failed and is held back: what failed */
    bool moving_to_claims; /* etcd: its members move from emptyDir to claims */
    bool members_settled;  /* etcd: every member votes and its pod is Ready */
    /* etcd: the restore's Events, told once its status write and pod release succeeded */
    size_t restore_events, restore_events_end;
    char restoring[768]; /* etcd: what a running restore does; "" when none runs */
    char key[RENDER_CLUSTER_NAME_MAX * 2];
    char conflict[512]; /* a rendered object's name is taken by someone else's object */
};

static const cJSON *get(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = get(o, key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const char *kind_name(const struct comp *x)
{
    return nested_part_resource(x->part)->kind;
}

/* Sets a condition of the component, and records a Warning event when an error one changed. */
static int cond(struct comp *x, const char *type, const char *status, const char *severity,
                const char *reason, const char *msg)
{
    int r = status_condition(&x->st->conditions, type, status, severity, reason, x->gen,
                             x->view->now, "%s", msg);

    if (r > 0 && severity && strcmp(severity, STATUS_SEVERITY_ERROR) == 0 &&
        plan_event(x->plan, KUBE_EVENT_WARNING, reason, "%s", msg) < 0)
        return -ENOMEM;
    return r < 0 ? r : 0;
}

/* Ready False (and Progressing True) with a reason: nothing below it happens. */
static int not_ready(struct comp *x, const char *severity, const char *reason, const char *fmt,
                     ...) __attribute__((format(printf, 4, 5)));

static int not_ready(struct comp *x, const char *severity, const char *reason, const char *fmt,
                     ...)
{
    char msg[ERR_MSG_MAX + 256];
    va_list ap;
    int r;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    r = cond(x, "Ready", API_CONDITION_FALSE, severity, reason, msg);
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
    char key[RENDER_CLUSTER_NAME_MAX * 2];
    char secret[RENDER_CLUSTER_NAME_MAX];
    double at;
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
    struct issued *is = calloc(1, sizeof(*is));

    if (!is)
        return; /* only an optimisation */
    snprintf(is->key, sizeof(is->key), "%s", x->key);
    snprintf(is->secret, sizeof(is->secret), "%s", secret);
    is->at = x->view->now;
    free(strmap_remove(&x->pc->issued, is->key));
    if (strmap_put(&x->pc->issued, is->key, is) < 0)
        free(is);
}

/* ---- children ---- */

/* What packages may render, in the order their objects are deleted with a control plane. */
static const struct kube_resource *const rendered[] = {
    &KUBE_STATEFULSETS, &KUBE_SERVICES, &KUBE_CONFIGMAPS, &KUBE_NETWORKPOLICIES};

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

    cJSON_ArrayForEach(o, objs)
    {
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

/* Plans a server-side apply of every rendered object that differs from the cache; one the
 * cache does not hold is applied only if it is absent or the component's (plan_apply_claimed).
 * Nothing at all when a name is taken (find_conflict). */
static int apply_changed(struct comp *x, cJSON *objs)
{
    cJSON *o;

    if (find_conflict(x, objs))
        return 0;
    while ((o = cJSON_DetachItemFromArray(objs, 0))) {
        const struct kube_resource *res = resource_of(o);
        const struct kube_store *store;
        const cJSON *live;
        const char *want = config_hash(o), *have;

        if (!res) {
            cJSON_Delete(o);
            return -EINVAL;
        }
        store = nestedcomponent_rendered_store(x->view, res);
        live = store ? kube_store_get(store, x->ns, kube_obj_name(o)) : NULL;
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
                r = plan_delete_orphan(x->plan, res, x->ns, kube_obj_name(live),
                                       kube_obj_uid(live),
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
                  : plan_apply_claimed(x->plan, res, o, kube_obj_uid(x->obj),
                                       "%s %s/%s: missing", res->kind, x->ns,
                                       kube_obj_name(o))) < 0)
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
    cJSON_ArrayForEach(o, u->objs)
    {
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

static int delete_unrendered_all(struct comp *x, const cJSON *objs)
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

/* ---- status ---- */

static int set_addresses(struct comp *x, const struct render_cluster *rc)
{
    const char *cname = render_cluster_name(rc);
    int n = x->c->spec.replicas > 0 ? x->c->spec.replicas : 1;
    struct api_etcd_address *a;
    char host[RENDER_CLUSTER_NAME_MAX * 3];

    if (x->part != RENDER_PART_ETCD)
        return 0;
    a = calloc((size_t)n, sizeof(*a));
    if (!a)
        return -ENOMEM;
    for (int i = 0; i < n; i++) {
        snprintf(host, sizeof(host), "%s-etcd-%d.%s-etcd.%s.svc", cname, i, cname, x->ns);
        a[i].hostname = strdup(host);
        a[i].port = 2379;
        if (!a[i].hostname) { /* the status keeps its old addresses */
            while (i-- > 0)
                free(a[i].hostname);
            free(a);
            return -ENOMEM;
        }
    }
    for (size_t i = 0; i < x->st->n_addresses; i++) {
        free(x->st->addresses[i].ip);
        free(x->st->addresses[i].hostname);
    }
    free(x->st->addresses);
    x->st->addresses = a;
    x->st->n_addresses = (size_t)n;
    return 0;
}

static int set_service_ref(struct comp *x, const struct render_cluster *rc)
{
    struct api_object_ref *ref = &x->st->apiserver_service;
    char name[RENDER_CLUSTER_NAME_MAX];
    const cJSON *svc;

    if (x->part != RENDER_PART_APISERVER)
        return 0;
    snprintf(name, sizeof(name), "%s-apiserver", render_cluster_name(rc));
    svc = kube_store_get(x->view->services, x->ns, name);
    api_object_ref_done(ref);
    if (!svc)
        return 0;
    ref->api_version = strdup("v1");
    ref->kind = strdup("Service");
    ref->name = strdup(name);
    ref->namespace = strdup(x->ns);
    ref->uid = kube_obj_uid(svc) ? strdup(kube_obj_uid(svc)) : NULL;
    return ref->api_version && ref->kind && ref->name && ref->namespace ? 0 : -ENOMEM;
}

/* Replicas, version, Ready and Progressing from the live StatefulSet and the target. */
static int observe(struct comp *x, const struct render_cluster *rc, const char *hash)
{
    char name[RENDER_CLUSTER_NAME_MAX], msg[512];
    struct status_sts ss;
    int r;

    snprintf(name, sizeof(name), "%s-%s", render_cluster_name(rc), render_part_short(x->part));
    status_statefulset(kube_store_get(x->view->statefulsets, x->ns, name), x->target_hash, &ss);
    x->st->replicas = ss.exists ? ss.status_replicas : 0;
    x->st->ready_replicas = ss.ready;
    x->st->updated_replicas = ss.updated;
    x->st->healthy = ss.exists && ss.ready >= ss.replicas && ss.replicas > 0;
    if (ss.complete && x->target_version) {
        free(x->st->version);
        if (!(x->st->version = strdup(x->target_version)))
            return -ENOMEM;
    }
    if ((r = set_addresses(x, rc)) < 0 || (r = set_service_ref(x, rc)) < 0)
        return r;
    if (!x->target_hash) {
        snprintf(msg, sizeof(msg),
                 "waiting for NestedControlPlane %s to roll it out (components start in the "
                 "order etcd, kube-apiserver, kube-controller-manager)",
                 kube_obj_name(x->ncp));
        r = not_ready(x, STATUS_SEVERITY_INFO, "WaitingForRollout", "%s", msg);
    } else if (x->restoring[0]) {
        r = not_ready(x, STATUS_SEVERITY_INFO, "Restoring", "%s", x->restoring);
    } else if (ss.complete) {
        snprintf(msg, sizeof(msg), "%d/%d replicas ready", ss.ready, ss.replicas);
        r = cond(x, "Ready", API_CONDITION_TRUE, NULL, "Ready", msg);
    } else if (!ss.exists) {
        r = not_ready(x, STATUS_SEVERITY_INFO, "Creating", "StatefulSet %s is being created",
                      name);
    } else if (x->rolled_back && x->part != RENDER_PART_ETCD) {
        snprintf(msg, sizeof(msg), "%d/%d replicas ready at the last good revision", ss.ready,
                 ss.replicas);
        r = ss.ready >= ss.replicas
                ? cond(x, "Ready", API_CONDITION_TRUE, NULL, "RolledBack", msg)
                : not_ready(x, STATUS_SEVERITY_INFO, "RollingBack", "%s", msg);
    } else {
        r = not_ready(x, STATUS_SEVERITY_INFO, "RollingOut", "%d/%d updated, %d/%d ready",
                      ss.updated, ss.replicas, ss.ready, ss.replicas);
    }
    if (r < 0)
        return r;
    if (ss.complete && hash && strcmp(hash, x->target_hash) == 0)
        return cond(x, "Progressing", API_CONDITION_FALSE, NULL, "RolledOut",
                    "the StatefulSet runs the rendered configuration");
    if (!x->target_hash || (hash && strcmp(hash, x->target_hash) != 0))
        return cond(x, "Progressing", API_CONDITION_TRUE, NULL, "WaitingForRollout",
                    "a changed configuration waits for its turn in the control plane's rollout");
    if (x->rolled_back && x->part != RENDER_PART_ETCD) {
        snprintf(msg, sizeof(msg), "the roll to this configuration failed and is held back: %s",
                 x->rolled_back);
        return cond(x, "Progressing", API_CONDITION_FALSE, STATUS_SEVERITY_WARNING, "RolledBack",
                    msg);
    }
    return cond(x, "Progressing", API_CONDITION_TRUE, NULL, "RollingOut",
                "the StatefulSet is rolling out");
}

/* etcd: DataNotPersistent, True while the members' data is on emptyDir; an error (and a
 * Warning Event) while that holds back a roll. */
static int report_persistence(struct comp *x, const struct render_cluster *rc, const char *hash)
{
    struct etcd_safety es;

    if (x->part != RENDER_PART_ETCD)
        return 0;
    nested_etcd_safety(x->view, &x->src, rc, hash, &es);
    x->moving_to_claims = es.moving_to_claims;
    if (!es.not_persistent)
        return cond(x, "DataNotPersistent", API_CONDITION_FALSE, NULL, "PersistentVolumeClaims",
                    "each member keeps its data in a PersistentVolumeClaim of its own");
    if (es.refusal && strcmp(es.refusal, "DataNotPersistent") == 0)
        return cond(x, "DataNotPersistent", API_CONDITION_TRUE, STATUS_SEVERITY_ERROR,
                    "RollRefused", es.message);
    return cond(x, "DataNotPersistent", API_CONDITION_TRUE, STATUS_SEVERITY_WARNING, "EmptyDir",
                es.message);
}

/* etcd: a restore from a snapshot the NestedEtcd's annotation asks for
 * (controllers/etcdrestore.h), in place of the membership step while it runs. Returns 1 when
 * it runs, 0 when the membership step goes on, or a negative errno. */
static int restore_step(struct comp *x, const struct render_cluster *rc, cJSON *objs)
{
    struct etcd_restore_input in = {
        .view = x->view, .etcd = x->obj, .ns = x->ns, .cluster = render_cluster_name(rc),
        .now = x->view->now};
    struct etcd_restore_output out;
    const cJSON *o;
    struct err e;
    int r;

    cJSON_ArrayForEach(o, objs)
    {
        if (!in.sts && str(o, "kind") && strcmp(str(o, "kind"), "StatefulSet") == 0)
            in.sts = o;
    }
    x->restore_events = x->plan->n_events;
    r = etcd_restore_step(&in, x->st, x->plan, &x->after_status, &out);
    x->restore_events_end = x->plan->n_events;
    if (r < 0)
        return r;
    if (out.reason &&
        (r = cond(x, ETCD_RESTORE_CONDITION, out.status,
                  out.warning ? STATUS_SEVERITY_WARNING
                  : strcmp(out.status, API_CONDITION_TRUE) == 0 ? NULL
                                                                : STATUS_SEVERITY_INFO,
                  out.reason, out.message)) < 0)
        return r;
    /* What etcd answered before is of another cluster. */
    if (out.active || out.started_cluster)
        etcd_membership_forget(x->pc->base->members, x->key);
    if (!out.active)
        return 0;
    /* Neither ready nor a settled membership while etcd is being replaced. */
    snprintf(x->restoring, sizeof(x->restoring), "%s", out.message);
    if ((r = cond(x, ETCD_MEMBERSHIP_CONDITION, API_CONDITION_FALSE, STATUS_SEVERITY_INFO,
                  "Restoring", out.message)) < 0)
        return r;
    err_clear(&e);
    if ((r = render_transform_statefulset_scale(objs, out.replicas, 0, &e)) < 0)
        return r;
    x->members_settled = false;
    if (!out.started_cluster)
        plan_requeue_after(x->plan, 5.0);
    return 1;
}

/* etcd: a snapshot the NestedEtcd's annotation asks for (controllers/etcdsnapshot.h). */
static int snapshot_step(struct comp *x, const struct render_cluster *rc, const char *certs)
{
    struct etcd_snapshot_input in = {.view = x->view, .etcd = x->obj, .ns = x->ns,
                                     .cluster = render_cluster_name(rc), .certs = certs};
    struct etcd_snapshot_output out;
    int r;

    if ((r = etcd_snapshot_step(&in, x->st, x->plan, &out)) < 0 || !out.reason)
        return r;
    return cond(x, ETCD_SNAPSHOT_CONDITION, out.status,
                out.warning ? STATUS_SEVERITY_WARNING
                : strcmp(out.status, API_CONDITION_TRUE) == 0 ? NULL
                                                              : STATUS_SEVERITY_INFO,
                out.reason, out.message);
}

/* etcd: the next membership change, and the StatefulSet's replicas and partition. */
static int reconcile_members(struct comp *x, const struct render_cluster *rc, const char *certs,
                             const char *hash, cJSON *objs)
{
    struct nested_ctx *base = x->pc->base;
    struct etcd_membership_input in = {
        .view = x->view,
        .key = x->key,
        .ns = x->ns,
        .cluster = render_cluster_name(rc),
        .desired = x->c->spec.replicas > 0 ? x->c->spec.replicas : 1,
        .storage = x->c->spec.storage.kind == API_STORAGE_EMPTYDIR ? API_STORAGE_EMPTYDIR
                                                                   : API_STORAGE_PVC,
        .certs = certs,
        .pod_hash = hash,
        .may_apply = x->target_hash && strcmp(hash, x->target_hash) == 0,
    };
    struct etcd_membership_output out;
    struct err e;
    int r;

    if (x->part != RENDER_PART_ETCD)
        return 0;
    if (!base->members && (r = etcd_membership_new(&base->members)) < 0)
        return r;
    if ((r = restore_step(x, rc, objs)) != 0)
        return r < 0 ? r : 0;
    if ((r = snapshot_step(x, rc, certs)) < 0)
        return r;
    if ((r = etcd_membership_step(base->members, &in, x->st, x->plan, &x->after_status, &out)) <
        0)
        return r;
    err_clear(&e);
    if ((r = render_transform_statefulset_scale(objs, out.replicas, out.partition, &e)) < 0)
        return r;
    x->members_settled = out.settled;
    if (!out.reason)
        return 0;
    if (out.converged)
        return cond(x, ETCD_MEMBERSHIP_CONDITION, API_CONDITION_TRUE, NULL, out.reason,
                    out.message);
    return cond(x, ETCD_MEMBERSHIP_CONDITION, API_CONDITION_FALSE,
                out.refused ? STATUS_SEVERITY_ERROR : STATUS_SEVERITY_INFO, out.reason,
                out.message);
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
static int hold_back(struct comp *x, cJSON *objs, const char *stsname)
{
    const cJSON *sts = kube_store_get(x->view->statefulsets, x->ns, stsname), *o;
    struct rollback rb = {x, NULL, 0};
    int replicas = 1;
    struct err e;
    int r;

    cJSON_ArrayForEach(o, objs)
    {
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
        r = not_ready(x, STATUS_SEVERITY_ERROR,
                      r == -EINVAL ? api_errors_reason(&errs) : "MissingObjects",
                      "%s", e.msg);
        goto out;
    }
    if (r < 0)
        goto out;
    render_cluster_set_allow_privileged(rc, base->allow_privileged);
    render_cluster_set_manager_namespace(rc, base->manager_namespace);
    if ((r = nested_check_render(base->cat, rc, x->part, &e)) == -EINVAL) {
        r = not_ready(x, STATUS_SEVERITY_ERROR, "InvalidSpec", "%s", e.msg);
        goto out;
    }
    if (r < 0)
        goto out;
    if (base->keys)
        render_cluster_set_key_source(rc, take_key, base->keys);
    nested_cert_policy(base, rc);
    render_cluster_set_check_memo(rc, &base->memo);
    r = render_cluster_pki_load(rc, &x->src, (int64_t)x->view->now, false, &pki, &errs);
    if (r == -ENOENT || r == -EINVAL) {
        api_errors_to_err(&errs, NULL, &e);
        if (r == -ENOENT)
            r = not_ready(x, STATUS_SEVERITY_INFO, "WaitingForCertificateAuthorities", "%s",
                          e.msg);
        else
            r = not_ready(x, STATUS_SEVERITY_ERROR, "InvalidCertificateAuthority", "%s", e.msg);
        goto out;
    }
    if (r < 0)
        goto out;

    snprintf(stsname, sizeof(stsname), "%s-%s", render_cluster_name(rc),
             render_part_short(x->part));
    status_statefulset(kube_store_get(x->view->statefulsets, x->ns, stsname), x->target_hash,
                       &ss);
    err_clear(&why);
    r = render_cluster_certs_find(rc, pki, &x->src, x->part, ss.certs, certs, &renew_at, &why);
    if (r == 0)
        nested_requeue_for_renewal(x->plan, x->view->now, renew_at);
    if (r == -ENOENT) {
        if (issue_pending(x)) {
            plan_requeue_after(x->plan, 1.0);
            r = not_ready(x, STATUS_SEVERITY_INFO, "IssuingCertificates",
                          "waiting for the new certificates Secret to be seen");
            goto out;
        }
        if (base->keys)
            keypool_reserve(base->keys, render_cluster_key_alg(rc), keys_needed(x->part));
        r = render_cluster_certs_issue(rc, pki, &x->src, x->part, ss.certs, &secret, &e);
        if (r == -EAGAIN) {
            plan_requeue_after(x->plan, NESTED_KEY_WAIT);
            r = not_ready(x, STATUS_SEVERITY_INFO, "IssuingCertificates",
                          "waiting for private keys (%s)", e.msg);
            goto out;
        }
        if (r == -EINVAL || r == -ENOENT) {
            r = not_ready(x, STATUS_SEVERITY_ERROR, "CertificatesFailed", "%s", e.msg);
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
        if (r < 0 || plan_event(x->plan, KUBE_EVENT_NORMAL, "IssuedCertificates",
                                "Secret %s: %s", certs,
                                ss.certs ? why.msg : "the component's first certificates") < 0) {
            r = -ENOMEM;
            goto out;
        }
    } else if (r < 0) {
        goto out;
    }

    r = render_cluster_component(base->cat, rc, x->part, certs, &objs, hash, &e);
    if (r == -EINVAL || r == -ENOENT) {
        r = not_ready(x, STATUS_SEVERITY_ERROR, "InvalidSpec", "%s", e.msg);
        goto out;
    }
    if (r < 0)
        goto out;
    if ((r = report_persistence(x, rc, hash)) < 0 ||
        (r = reconcile_members(x, rc, certs, hash, objs)) < 0)
        goto out;
    if (x->part != RENDER_PART_ETCD && x->rolled_back && x->target_hash &&
        strcmp(hash, x->target_hash) == 0 && (r = hold_back(x, objs, stsname)) < 0)
        goto out;
    if (x->target_hash && strcmp(hash, x->target_hash) == 0) {
        if ((r = delete_unrendered_all(x, objs)) < 0 || (r = apply_changed(x, objs)) < 0)
            goto out;
        if (x->conflict[0]) {
            /* Looked at again once the runtime would read the object again. */
            plan_requeue_after(x->plan, CACHE_VIEW_CONFLICT_TTL);
            r = not_ready(x, STATUS_SEVERITY_ERROR, "ObjectConflict", "%s", x->conflict);
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
    r = observe(x, rc, hash);
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
    const cJSON *t = get(get(get(get(x->ncp, "status"), "rollout"), "components"),
                         render_part_field(x->part));

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
    cl = x->ncp ? lookup_capi_cluster(x->view, x->ncp, API_KIND_NESTED_CONTROL_PLANE, NULL)
                : NULL;
    if (status_paused(x->obj, cl) || (x->ncp && status_paused(x->ncp, NULL)))
        return cond(x, "Paused", API_CONDITION_TRUE, NULL, "Paused",
                    "reconciliation is paused (annotation cluster.x-k8s.io/paused or Cluster "
                    "spec.paused)");
    if ((r = cond(x, "Paused", API_CONDITION_FALSE, NULL, "NotPaused", "")) < 0)
        return r;
    if (!x->ncp)
        return not_ready(x, STATUS_SEVERITY_INFO, "WaitingForControlPlane",
                         "no NestedControlPlane in namespace %s refers to %s %s", x->ns,
                         kind_name(x), x->name);
    ncp_uid = kube_obj_uid(x->ncp);
    if (!lookup_controlled_by_uid(x->obj, ncp_uid)) {
        const char *owner;
        if (kube_obj_controller_ref(x->obj) &&
            !lookup_controlled_by_kind(x->obj, API_KIND_NESTED_CONTROL_PLANE, &owner))
            return not_ready(x, STATUS_SEVERITY_ERROR, "ControlledByAnotherOwner",
                             "%s %s is controlled by another owner, not NestedControlPlane %s",
                             kind_name(x), x->name, kube_obj_name(x->ncp));
        return not_ready(x, STATUS_SEVERITY_INFO, "WaitingForAdoption",
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
    struct comp x = {.pc = pc, .part = pc->part, .view = view, .plan = plan, .ns = ns,
                     .name = name};
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
        return 0;
    }
    ncp = lookup_control_plane_of_component(view, x.obj, pc->part);
    if (ncp && status_deleting(ncp))
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
        r = status_condition(&x.st->conditions, "Ready", API_CONDITION_FALSE,
                             STATUS_SEVERITY_ERROR, "WriteRejected", x.gen, view->now, "%s",
                             rejected);
    if (r >= 0) {
        const struct api_condition *ready = api_conditions_get(&x.st->conditions, "Ready");
        free(x.st->phase);
        x.st->phase = strdup(ready && !strcmp(ready->status, API_CONDITION_TRUE) ? "Ready"
                                                                                 : "Unready");
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

void nestedcomponent_map(void *ctx, const struct cache_view *view,
                         const struct kube_resource *res, const cJSON *obj, enqueue_fn enqueue,
                         void *q)
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
