/*
 * A move of the control plane to another management cluster with an etcd snapshot
 * (controllers/move.h, docs/clusterctl.md "clusterctl move"): status.move, the MoveBlocked
 * condition, the snapshot Job, and the annotations on the NestedEtcd and the control plane.
 *
 * Each pass reads the caches and plans one step; a step that changes an object waits for the
 * cache to show it before the next:
 *
 *   source   Stopping -> Snapshotting -> (NestedEtcd annotated) -> (block-move removed by
 *            the finalizer patch, ncp_move_blocks) -> Ready; Failed for no claim or a failed
 *            Job; a withdrawn request removes start-from-snapshot, then status.move
 *   target   the NestedEtcd starts from the snapshot (RestoringSnapshot) -> Moved -> the
 *            move annotation and start-from-snapshot are removed
 */

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "api/conditions.h"
#include "api/kinds.h"
#include "controllers/etcdrestore.h"
#include "controllers/lookup.h"
#include "controllers/move.h"
#include "controllers/ncp.h"
#include "controllers/snapshot.h"
#include "controllers/status.h"
#include "lib/kube/client.h"
#include "lib/kube/store.h"
#include "lib/util/strutil.h"

static bool is(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

static const char *text(const cJSON *o, const char *key)
{
    const cJSON *v = get(o, key);

    return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

/* The move request on the control plane, or NULL. */
static const char *request_of(const struct cp *x)
{
    const char *v = kube_obj_annotation(x->obj, MOVE_ANNOTATION);

    return v && *v ? v : NULL;
}

static const char *start_of(const cJSON *etcd)
{
    const char *v = kube_obj_annotation(etcd, MOVE_START_FROM_SNAPSHOT);

    return v && *v ? v : NULL;
}

/* Whether this is the target of a move: its NestedEtcd carries start-from-snapshot and never
 * formed a cluster here, or formed it from that snapshot. */
static bool is_target(const cJSON *etcd)
{
    const cJSON *st = get(etcd, "status");
    const char *start = start_of(etcd);

    return start && (!text(st, "clusterID") || is(text(get(st, "restore"), "snapshot"), start));
}

static bool preparing(const char *phase)
{
    return is(phase, MOVE_STOPPING) || is(phase, MOVE_SNAPSHOTTING) || is(phase, MOVE_READY) ||
           is(phase, MOVE_FAILED);
}

bool ncp_move_blocks(const struct cp *x)
{
    const struct api_move_status *mv = &x->st->move;
    const cJSON *etcd;

    if (!request_of(x) || !is(mv->request, request_of(x)) || !mv->snapshot ||
        !(is(mv->phase, MOVE_SNAPSHOTTING) || is(mv->phase, MOVE_READY)))
        return true;
    etcd = lookup_component(x->view, x->obj, RENDER_PART_ETCD);
    return !is(start_of(etcd), mv->snapshot) || is_target(etcd);
}

static int set_move(struct cp *x, const char *request, const char *phase, const char *snapshot,
                    const char *message)
{
    struct api_move_status *mv = &x->st->move;
    int r;

    if ((r = ncp_set_str(&mv->request, request)) < 0 || (r = ncp_set_str(&mv->phase, phase)) < 0 ||
        (r = ncp_set_str(&mv->snapshot, snapshot)) < 0)
        return r;
    return ncp_set_str(&mv->message, message);
}

static int not_movable(struct cp *x)
{
    return ncp_cond(x, "MoveBlocked", API_CONDITION_TRUE, NULL, "TenantDataNotMovable", "%s",
                    NCP_TENANT_DATA_NOT_MOVABLE);
}

static int preparing_cond(struct cp *x)
{
    return ncp_cond(x, "MoveBlocked", API_CONDITION_TRUE, NULL, "PreparingMove", "%s: %s",
                    x->st->move.phase, x->st->move.message);
}

/* A merge patch of one annotation of obj (value NULL: removed), conditional on its
 * resourceVersion. */
static int patch_annotation(struct cp *x, const struct kube_resource *res, const cJSON *obj,
                            const char *key, const char *value, const char *why)
{
    cJSON *patch = cJSON_CreateObject(), *meta, *ann;
    const char *rv = kube_obj_resource_version(obj);

    if (!patch || !(meta = cJSON_AddObjectToObject(patch, "metadata")) ||
        !cJSON_AddStringToObject(meta, "resourceVersion", rv ? rv : "") ||
        !(ann = cJSON_AddObjectToObject(meta, "annotations")) ||
        !(value ? cJSON_AddStringToObject(ann, key, value) : cJSON_AddNullToObject(ann, key))) {
        cJSON_Delete(patch);
        return -ENOMEM;
    }
    return plan_merge_patch(x->plan, res, x->ns, kube_obj_name(obj), NULL, patch, "%s %s/%s: %s",
                            res->kind, x->ns, kube_obj_name(obj), why);
}

/* The target: the NestedEtcd starts from the snapshot; once it has, status.move says Moved,
 * and then both annotations go. */
static int target_step(struct cp *x, const cJSON *etcd)
{
    const char *start = start_of(etcd), *req = request_of(x);
    const cJSON *restore = get(get(etcd, "status"), "restore");
    const char *cached = text(get(get(x->obj, "status"), "move"), "phase");
    char msg[768];
    int r;

    if (!is(text(restore, "phase"), ETCD_RESTORE_RESTORED) ||
        !text(get(etcd, "status"), "clusterID") || !is(text(restore, "snapshot"), start))
        return ncp_cond(x, "MoveBlocked", API_CONDITION_TRUE, NULL, "RestoringSnapshot",
                        "NestedEtcd %s/%s starts from snapshot %s (status.restore.phase %s): the "
                        "control plane was moved here, and its API servers start once etcd has",
                        x->ns, kube_obj_name(etcd), start,
                        text(restore, "phase") ? text(restore, "phase") : "not started");
    str_printf(msg, sizeof(msg), "NestedEtcd %s/%s started from snapshot %s at %s", x->ns,
               kube_obj_name(etcd), start,
               text(restore, "restoredAt") ? text(restore, "restoredAt") : "?");
    if ((r = set_move(x, req ? req : x->st->move.request, MOVE_MOVED, start, msg)) < 0 ||
        (r = not_movable(x)) < 0)
        return r;
    if (!is(cached, MOVE_MOVED))
        return plan_event(x->plan, KUBE_EVENT_NORMAL, "Moved", "%s", msg) < 0 ? -ENOMEM : 0;
    /* Moved is recorded: the request is done. The control plane's annotation goes first, so
     * that the NestedEtcd's going never lets the request look like a new one. */
    if (req) {
        x->spec_patched = true;
        if ((r = patch_annotation(x, &NESTCP_CONTROL_PLANES, x->obj, MOVE_ANNOTATION, NULL,
                                  "move request done")) < 0)
            return r;
    }
    return patch_annotation(x, nested_part_resource(RENDER_PART_ETCD), etcd,
                            MOVE_START_FROM_SNAPSHOT, NULL, "started from the snapshot");
}

/* A request withdrawn (or replaced) before the move: start-from-snapshot goes, then
 * status.move (and its snapshot Job), which starts the API servers and controller managers
 * again. The block-move
 * annotation is back already (ncp_move_blocks). */
static int cancel(struct cp *x, const cJSON *etcd)
{
    struct api_move_status *mv = &x->st->move;
    const cJSON *job;
    char msg[512];
    int r;

    if (mv->snapshot && is(start_of(etcd), mv->snapshot)) {
        str_printf(msg, sizeof(msg), "move request %s withdrawn: removing %s from NestedEtcd %s/%s",
                   mv->request, MOVE_START_FROM_SNAPSHOT, x->ns, kube_obj_name(etcd));
        if ((r = ncp_set_str(&mv->message, msg)) < 0 || (r = preparing_cond(x)) < 0)
            return r;
        return patch_annotation(x, nested_part_resource(RENDER_PART_ETCD), etcd,
                                MOVE_START_FROM_SNAPSHOT, NULL, "move request withdrawn");
    }
    str_printf(msg, sizeof(msg),
               "move request %s withdrawn: the API servers and controller managers start again",
               mv->request ? mv->request : "?");
    /* Its snapshot Job, finished or not, has no more use. */
    job = mv->snapshot ? kube_store_get(x->view->jobs, x->ns, mv->snapshot) : NULL;
    if (job && lookup_controlled_by_uid(job, kube_obj_uid(x->obj)) && !status_deleting(job) &&
        plan_delete(x->plan, &KUBE_JOBS, x->ns, mv->snapshot, kube_obj_uid(job),
                    "Job %s/%s: move request %s withdrawn", x->ns, mv->snapshot,
                    mv->request ? mv->request : "?") < 0)
        return -ENOMEM;
    if ((r = set_move(x, NULL, NULL, NULL, NULL)) < 0 || (r = not_movable(x)) < 0)
        return r;
    return plan_event(x->plan, KUBE_EVENT_NORMAL, "MoveCancelled", "%s", msg) < 0 ? -ENOMEM : 0;
}

struct pods_left {
    const char *name;
};

static bool first_pod(void *userdata, const cJSON *pod)
{
    ((struct pods_left *)userdata)->name = kube_obj_name(pod);
    return false;
}

/* Whether an API server or controller-manager pod is left; which is in which. */
static bool components_left(const struct cp *x, const struct desired_all *da, char *which,
                            size_t size)
{
    static const enum rollout_component stopped[] = {ROLLOUT_APISERVER, ROLLOUT_CONTROLLER_MANAGER};

    for (size_t i = 0; i < sizeof(stopped) / sizeof(stopped[0]); i++) {
        const cJSON *sts = da->sts[stopped[i]];
        const cJSON *spec_n = get(get(sts, "spec"), "replicas"),
                    *status_n = get(get(sts, "status"), "replicas");
        struct pods_left p = {NULL};

        if (!sts)
            continue;
        if (kube_obj_uid(sts))
            kube_store_foreach_owned(x->view->pods, kube_obj_uid(sts), first_pod, &p);
        if (p.name) {
            str_printf(which, size, "pod %s is still there", p.name);
            return true;
        }
        if ((cJSON_IsNumber(spec_n) && spec_n->valueint > 0) ||
            (cJSON_IsNumber(status_n) && status_n->valueint > 0)) {
            str_printf(which, size, "StatefulSet %s still has replicas", kube_obj_name(sts));
            return true;
        }
    }
    return false;
}

/* Snapshotting: the Job, then start-from-snapshot on the NestedEtcd, then (once the
 * block-move annotation has gone) Ready. */
static int snapshotting(struct cp *x, const struct desired_all *da, const cJSON *etcd,
                        const char *claim)
{
    struct api_move_status *mv = &x->st->move;
    const char *done_at, *host, *image;
    const cJSON *job;
    char msg[768], why[512];
    int r;

    if (is(start_of(etcd), mv->snapshot)) {
        if (ncp_has_block_move(x->ncp)) {
            str_printf(msg, sizeof(msg), "snapshot %s.db is on claim %s: removing %s", mv->snapshot,
                       claim, NESTED_BLOCK_MOVE);
            if ((r = set_move(x, mv->request, MOVE_SNAPSHOTTING, mv->snapshot, msg)) < 0)
                return r;
            return preparing_cond(x);
        }
        str_printf(msg, sizeof(msg),
                   "snapshot %s.db is on claim %s and NestedEtcd %s/%s carries %s=%s: "
                   "clusterctl move may go on; the API servers and controller managers stay "
                   "stopped (remove %s to cancel)",
                   mv->snapshot, claim, x->ns, kube_obj_name(etcd), MOVE_START_FROM_SNAPSHOT,
                   mv->snapshot, MOVE_ANNOTATION);
        if (!is(mv->phase, MOVE_READY) &&
            plan_event(x->plan, KUBE_EVENT_NORMAL, "ReadyToMove", "%s", msg) < 0)
            return -ENOMEM;
        if ((r = set_move(x, mv->request, MOVE_READY, mv->snapshot, msg)) < 0)
            return r;
        return ncp_cond(x, "MoveBlocked", API_CONDITION_FALSE, NULL, "ReadyToMove", "%s", msg);
    }
    if (is(mv->phase, MOVE_READY) && (r = ncp_set_str(&mv->phase, MOVE_SNAPSHOTTING)) < 0)
        return r;
    job = kube_store_get(x->view->jobs, x->ns, mv->snapshot);
    if (!job) {
        struct snapshot_job_input ji = {.ns = x->ns,
                                        .cluster = x->cluster,
                                        .owner_name = x->name,
                                        .owner_api_version = text(x->obj, "apiVersion"),
                                        .owner_uid = kube_obj_uid(x->obj),
                                        .name = mv->snapshot,
                                        .claim = claim,
                                        .certs_secret = da->ss[ROLLOUT_ETCD].certs};
        cJSON *obj;

        if (!ji.certs_secret ||
            snapshot_source(x->view->pods, da->sts[ROLLOUT_ETCD], etcd, &host, &image) < 0) {
            str_printf(msg, sizeof(msg), "waiting for a ready etcd member to take snapshot %s from",
                       mv->snapshot);
            if ((r = ncp_set_str(&mv->message, msg)) < 0)
                return r;
            return preparing_cond(x);
        }
        ji.endpoint_host = host;
        ji.image = image;
        str_printf(msg, sizeof(msg), "Job %s writes snapshot %s.db from %s to claim %s",
                   mv->snapshot, mv->snapshot, host, claim);
        if (!(obj = snapshot_job(&ji)) ||
            plan_create(x->plan, &KUBE_JOBS, obj, "Job %s/%s: etcd snapshot for move request %s",
                        x->ns, mv->snapshot, mv->request) < 0)
            return -ENOMEM;
        if ((r = ncp_set_str(&mv->message, msg)) < 0)
            return r;
        return preparing_cond(x);
    }
    switch (snapshot_job_state(job, why, sizeof(why), &done_at)) {
    case SNAPSHOT_RUNNING:
        str_printf(msg, sizeof(msg), "Job %s writes snapshot %s.db to claim %s", mv->snapshot,
                   mv->snapshot, claim);
        if ((r = ncp_set_str(&mv->message, msg)) < 0)
            return r;
        return preparing_cond(x);
    case SNAPSHOT_FAILED:
        str_printf(msg, sizeof(msg),
                   "snapshot Job %s/%s failed (%s): the API servers and controller managers start "
                   "again; set another value of %s to try again, or remove it",
                   x->ns, mv->snapshot, why, MOVE_ANNOTATION);
        if ((r = set_move(x, mv->request, MOVE_FAILED, mv->snapshot, msg)) < 0)
            return r;
        return ncp_cond(x, "MoveBlocked", API_CONDITION_TRUE, STATUS_SEVERITY_WARNING, "MoveFailed",
                        "%s", msg);
    case SNAPSHOT_COMPLETE:
        break;
    }
    str_printf(msg, sizeof(msg),
               "snapshot %s.db is on claim %s (taken at %s): annotating NestedEtcd %s/%s",
               mv->snapshot, claim, done_at ? done_at : "?", x->ns, kube_obj_name(etcd));
    if ((r = ncp_set_str(&mv->message, msg)) < 0 || (r = preparing_cond(x)) < 0)
        return r;
    return patch_annotation(x, nested_part_resource(RENDER_PART_ETCD), etcd,
                            MOVE_START_FROM_SNAPSHOT, mv->snapshot,
                            "start from the move's snapshot");
}

/* The source: a move request prepared step by step. */
static int prepare(struct cp *x, const struct desired_all *da, const cJSON *etcd, const char *req)
{
    struct api_move_status *mv = &x->st->move;
    const char *claim =
        text(get(get(get(etcd, "spec"), "snapshots"), "persistentVolumeClaim"), "claimName");
    char msg[768], left[400], key[700], name[SNAPSHOT_NAME_MAX];
    int r;

    if (!is(mv->request, req) && (r = set_move(x, req, NULL, NULL, NULL)) < 0)
        return r;
    if (is(mv->phase, MOVE_FAILED) && mv->snapshot)
        return ncp_cond(x, "MoveBlocked", API_CONDITION_TRUE, STATUS_SEVERITY_WARNING, "MoveFailed",
                        "%s", mv->message ? mv->message : "the move's preparation failed");
    if (!claim) {
        str_printf(msg, sizeof(msg),
                   "move request %s: NestedEtcd %s/%s names no "
                   "spec.snapshots.persistentVolumeClaim.claimName to write the snapshot to (a "
                   "claim the target management cluster can mount too); nothing was stopped",
                   req, x->ns, kube_obj_name(etcd));
        if ((r = set_move(x, req, MOVE_FAILED, NULL, msg)) < 0)
            return r;
        return ncp_cond(x, "MoveBlocked", API_CONDITION_TRUE, STATUS_SEVERITY_WARNING,
                        "NoSnapshotClaim", "%s", msg);
    }
    if (!mv->phase || is(mv->phase, MOVE_FAILED)) {
        /* One snapshot per request of this control plane. */
        str_printf(key, sizeof(key), "move %s/%s %s %s", x->ns, x->name,
                   kube_obj_uid(x->obj) ? kube_obj_uid(x->obj) : "", req);
        snapshot_name(x->cluster, key, name);
        if ((r = set_move(x, req, MOVE_STOPPING, name, NULL)) < 0)
            return r;
        if (plan_event(x->plan, KUBE_EVENT_WARNING, "PreparingMove",
                       "move request %s: the API servers and controller managers stop, then "
                       "etcd snapshot %s.db is taken to claim %s; the cluster is out of service "
                       "until the target's API servers answer",
                       req, name, claim) < 0)
            return -ENOMEM;
    }
    if (is(mv->phase, MOVE_STOPPING)) {
        if (components_left(x, da, left, sizeof(left))) {
            str_printf(msg, sizeof(msg),
                       "stopping the API servers and controller managers before the snapshot "
                       "(%s)",
                       left);
            if ((r = ncp_set_str(&mv->message, msg)) < 0)
                return r;
            return preparing_cond(x);
        }
        if ((r = ncp_set_str(&mv->phase, MOVE_SNAPSHOTTING)) < 0)
            return r;
    }
    return snapshotting(x, da, etcd, claim);
}

int ncp_move_report_ready(struct cp *x)
{
    const struct api_move_status *mv = &x->st->move;

    if (!is(mv->phase, MOVE_STOPPING) && !is(mv->phase, MOVE_SNAPSHOTTING) &&
        !is(mv->phase, MOVE_READY))
        return 0;
    x->st->ready = false;
    return ncp_cond(x, "Ready", API_CONDITION_FALSE, STATUS_SEVERITY_INFO, "PreparingMove",
                    "the API servers and controller managers are stopped for move request %s "
                    "(status.move.phase %s); remove %s to start them again",
                    mv->request ? mv->request : "?", mv->phase, MOVE_ANNOTATION);
}

int ncp_move_step(struct cp *x, const struct desired_all *da)
{
    struct api_move_status *mv = &x->st->move;
    const cJSON *etcd = lookup_component(x->view, x->obj, RENDER_PART_ETCD);
    const cJSON *rec = get(get(x->obj, "status"), "move");
    const char *req = request_of(x);
    int r;

    /* The Job of a move the cached status records as prepared is of no more use. */
    if (is(text(rec, "phase"), MOVE_READY) && text(rec, "snapshot") &&
        (r = snapshot_prune(x->view->jobs, kube_obj_uid(x->obj), SNAPSHOT_COMPONENT,
                            text(rec, "snapshot"), x->plan)) < 0)
        return r;
    if (!etcd)
        return not_movable(x);
    if (is_target(etcd) && !(is(mv->request, req) && preparing(mv->phase)))
        return target_step(x, etcd);
    if (preparing(mv->phase) && !is(mv->request, req))
        return cancel(x, etcd);
    if (!req || (is(mv->phase, MOVE_MOVED) && is(mv->request, req))) {
        if ((r = not_movable(x)) < 0)
            return r;
        /* A request done here whose annotation is still there (its removal failed). */
        if (req) {
            x->spec_patched = true;
            return patch_annotation(x, &NESTCP_CONTROL_PLANES, x->obj, MOVE_ANNOTATION, NULL,
                                    "move request done");
        }
        return 0;
    }
    return prepare(x, da, etcd, req);
}
