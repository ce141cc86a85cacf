/* The NestedControlPlane's targets (controllers/ncp.h): each component's desired state, the
 * rollout state machine with the fleet-wide brake, the etcd snapshot before a version change,
 * the health of a roll, and the restarts after an etcd restore. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/conditions.h"
#include "api/version.h"
#include "controllers/brake.h"
#include "controllers/etcdmembership.h"
#include "controllers/lookup.h"
#include "controllers/ncp.h"
#include "controllers/rollerrors.h"
#include "controllers/rollhealth.h"
#include "controllers/snapshot.h"
#include "lib/kube/store.h"
#include "lib/util/strutil.h"

static struct api_rollout_target *target_of(struct api_rollout *ro, int i)
{
    return i == ROLLOUT_ETCD        ? &ro->etcd
           : i == ROLLOUT_APISERVER ? &ro->apiserver
                                    : &ro->controller_manager;
}

int ncp_compute_desired(struct cp *x, const struct render_cluster *rc,
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
            r = ncp_cond(x, "Ready", API_CONDITION_FALSE, STATUS_SEVERITY_ERROR, "InvalidSpec",
                         "%s", e.msg);
            return r < 0 ? r : STATUS_STOP;
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

/* The cluster ID a NestedEtcd's status records (etcd gave it to the membership step), or
 * NULL. */
static const char *etcd_cluster_id(const cJSON *etcd)
{
    const cJSON *id = get(get(etcd, "status"), "clusterID");

    return cJSON_IsString(id) && id->valuestring[0] ? id->valuestring : NULL;
}

/* ---- the brake (controllers/brake.h) ---- */

/* The Upgrading condition of a cached control plane: status, reason, lastTransitionTime. */
static void upgrading_of(const cJSON *ncp, const char **ret_status, const char **ret_reason,
                         const char **ret_since)
{
    const cJSON *c;

    *ret_status = *ret_reason = *ret_since = NULL;
    cJSON_ArrayForEach(c, get(get(ncp, "status"), "conditions")) {
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
static void peer_of(const struct nested_ctx *ctx, const struct cache_view *view, const cJSON *ncp,
                    struct brake_peer *ret)
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

/* Notes whether ns/name waits for a roll slot (ctx->waiting). Out of memory it is left as it
 * was: a waiting control plane is also checked again every NESTED_QUEUED_RECHECK. */
static void note_waiting(struct nested_ctx *ctx, const char *ns, const char *name, bool waits)
{
    char key[2 * RENDER_CLUSTER_NAME_MAX + 2], *own;

    snprintf(key, sizeof(key), "%s/%s", ns ? ns : "", name ? name : "");
    if (!waits) {
        free(strmap_remove(&ctx->waiting, key));
        return;
    }
    if (strmap_get(&ctx->waiting, key) || !(own = strdup(key)))
        return;
    if (strmap_put(&ctx->waiting, own, own) < 0)
        free(own);
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
    bi.limit =
        brake_limit_resolve(&x->ctx->max_rollouts, kube_store_count(x->view->control_planes));
    brake_decide(&bi, &bo);
    free(p.items);
    note_waiting(x->ctx, x->ns, x->name, !bo.go);
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
    if (rollhealth_failed(da->sts[i], x->view->pods, x->view->now, msg, sizeof(msg), &recheck))
        return ncp_set_str(&t->rolled_back, msg);
    if (recheck > 0)
        plan_requeue_after(x->plan, recheck);
    if (i == ROLLOUT_APISERVER && x->cluster) {
        /* The API servers of the new revision that are Ready must also answer: their error
         * rate (controllers/rollerrors.h). */
        struct rollerrors_input in = {da->sts[i], x->view->pods, x->view->secrets,
                                      x->ns,      x->cluster,    x->view->now};
        bool failed = false;
        int r = rollerrors_check(&x->ctx->roll_errors, &in, x->plan, msg, sizeof(msg), &failed);

        if (r < 0)
            return r;
        if (failed)
            return ncp_set_str(&t->rolled_back, msg);
    }
    return 0;
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
int ncp_restart_after_restore(struct cp *x, const struct desired_all *da)
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
                            "Pod %s/%s: it started before etcd was restored", x->ns, name) < 0 ||
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
        starts = starts ||
                 (out->target_changed[parts[k]] &&
                  version_moves(in->c[parts[k]].target.version, out->target[parts[k]].version));
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

    if ((r = ncp_set_str(&s->name, name)) < 0 || (r = ncp_set_str(&s->claim_name, claim)) < 0 ||
        (r = ncp_set_str(&s->taken_at, taken_at)) < 0 || (r = ncp_set_str(&s->before, before)) < 0)
        return r;
    return ncp_set_str(&s->message, message);
}

/* Before the targets move to another etcd or API server version of a control plane that was
 * complete once, etcd is snapshotted to the claim its NestedEtcd names (controllers/snapshot.h):
 * nothing moves until the snapshot Job has completed; a failed one stops the roll. Where no
 * claim is named the roll goes on, and status.rollout.snapshot says no snapshot was taken. */
static int snapshot_gate(struct cp *x, const struct rollout_input *in, const struct desired_all *da,
                         struct rollout_output *out)
{
    struct api_rollout_snapshot *sn = &x->st->rollout.snapshot;
    const cJSON *etcd = lookup_component(x->view, x->obj, RENDER_PART_ETCD), *job;
    const cJSON *claim_v =
        get(get(get(get(etcd, "spec"), "snapshots"), "persistentVolumeClaim"), "claimName");
    const char *claim =
        cJSON_IsString(claim_v) && claim_v->valuestring[0] ? claim_v->valuestring : NULL;
    const char *done_at, *host, *image;
    char before[256], key[512], name[SNAPSHOT_NAME_MAX], why[512], msg[1024];
    int r;

    /* The Job of the snapshot the cached status records is of no more use. */
    {
        const cJSON *rec = get(get(get(x->obj, "status"), "rollout"), "snapshot");
        if (cJSON_IsString(get(rec, "name")) && cJSON_IsString(get(rec, "takenAt")) &&
            (r = snapshot_prune(x->view->jobs, kube_obj_uid(x->obj), SNAPSHOT_COMPONENT,
                                get(rec, "name")->valuestring, x->plan)) < 0)
            return r;
    }
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
        struct snapshot_job_input ji = {.ns = x->ns,
                                        .cluster = x->cluster,
                                        .owner_name = x->name,
                                        .owner_api_version = text_of(x->obj, "apiVersion"),
                                        .owner_uid = kube_obj_uid(x->obj),
                                        .name = name,
                                        .claim = claim,
                                        .certs_secret = da->ss[ROLLOUT_ETCD].certs};
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
                   "taking etcd snapshot %s.db on claim %s before %s (Job %s)", name, claim, before,
                   name);
        if (!(obj = snapshot_job(&ji)) ||
            plan_create(x->plan, &KUBE_JOBS, obj, "Job %s/%s: etcd snapshot before %s", x->ns, name,
                        before) < 0 ||
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
                   "taking etcd snapshot %s.db on claim %s before %s (Job %s)", name, claim, before,
                   name);
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

/* API server pods are Ready but not yet available (Ready for less than the StatefulSet's
 * minReadySeconds). A StatefulSet of Parallel pods replaces every old pod that is not
 * available at once, so a roll started now would replace them all together: a new target
 * waits, holding its slot of the brake. A super cluster whose StatefulSets do not report
 * availableReplicas settles nothing. */
static bool apiservers_settling(const struct desired_all *da)
{
    const cJSON *av = get(get(da->sts[RENDER_PART_APISERVER], "status"), "availableReplicas");

    return cJSON_IsNumber(av) &&
           da->ss[RENDER_PART_APISERVER].available < da->ss[RENDER_PART_APISERVER].ready;
}

/* Runs the state machine, with the brake, and writes the targets into status.rollout; returns
 * its output. */
int ncp_step_rollout(struct cp *x, const struct desired_all *da, bool frozen,
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
            const cJSON *netcd = lookup_component(x->view, x->obj, RENDER_PART_ETCD);
            /* A learner being added does not vote: quorum is counted over the others. */
            int learners = etcd_learners(netcd);
            /* etcd answered at its target: the membership step recorded the cluster ID that
             * etcd gave, and the StatefulSet runs the target's pod template. */
            c->answers = da->ss[i].exists && da->ss[i].template_hash && t->config_hash &&
                         strcmp(da->ss[i].template_hash, t->config_hash) == 0 &&
                         etcd_cluster_id(netcd) != NULL;
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
    if (out->target_changed[ROLLOUT_APISERVER] && apiservers_settling(da)) {
        hold_targets(&in, out, ROLLOUT_PHASE_UPGRADING, BRAKE_REASON_ROLLING);
        snprintf(out->message, sizeof(out->message),
                 "kube-apiserver waiting for its pods to be available (minReadySeconds)");
    }
    x->step_events = x->plan->n_events;
    for (int i = 0; i < ROLLOUT__COUNT; i++) {
        struct api_rollout_target *t = target_of(ro, i);
        if (!out->target_changed[i])
            continue;
        if ((r = ncp_set_str(&t->version, out->target[i].version)) < 0 ||
            (r = ncp_set_str(&t->config_hash, out->target[i].hash)) < 0 ||
            (r = ncp_set_str(&t->rolled_back, NULL)) < 0)
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
    if ((r = ncp_set_str(&ro->step,
                         active >= 0 ? render_part_field((enum render_part)active) : NULL)) < 0)
        return r;
    return ncp_set_str(&ro->target_version, in.c[ROLLOUT_APISERVER].desired.version);
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
void ncp_wake_queued(struct nested_ctx *ctx, const struct cache_view *view, const cJSON *obj,
                     enqueue_fn enqueue, void *q)
{
    struct peers p = {ctx, view, NULL, NULL, NULL, 0, 0, 0};
    struct brake_peer self;
    size_t waiting = 0;
    int limit, rolling = 0;

    if (ctx->max_rollouts.value <= 0)
        return;
    peer_of(ctx, view, obj, &self);
    {
        const char *status, *reason, *since;
        upgrading_of(obj, &status, &reason, &since);
        note_waiting(ctx, self.ns, self.name,
                     !status_deleting(obj) && str_is(status, API_CONDITION_TRUE) &&
                         str_is(reason, BRAKE_REASON_QUEUED) &&
                         kube_store_get(view->control_planes, self.ns, self.name));
    }
    if (strmap_size(&ctx->waiting) == 0)
        return;
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
