/* etcd's steps in the component reconciler (controllers/comp.h): whether the members' data
 * persists, a restore from a snapshot (controllers/etcdrestore.h), a snapshot
 * (controllers/etcdsnapshot.h), and the next membership change
 * (controllers/etcdmembership.h) with the StatefulSet's replicas and partition. */

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "api/conditions.h"
#include "controllers/comp.h"
#include "controllers/etcdmembership.h"
#include "controllers/etcdrestore.h"
#include "controllers/etcdsnapshot.h"
#include "controllers/status.h"
#include "lib/render/transform.h"

/* etcd: DataNotPersistent, True while the members' data is on emptyDir; an error (and a
 * Warning Event) while that holds back a roll. */
int comp_report_persistence(struct comp *x, const struct render_cluster *rc, const char *hash)
{
    struct etcd_safety es;

    if (x->part != RENDER_PART_ETCD)
        return 0;
    nested_etcd_safety(x->view, &x->src, rc, hash, &es);
    x->moving_to_claims = es.moving_to_claims;
    if (!es.not_persistent)
        return comp_cond(x, "DataNotPersistent", API_CONDITION_FALSE, NULL,
                         "PersistentVolumeClaims",
                         "each member keeps its data in a PersistentVolumeClaim of its own");
    if (es.refusal && strcmp(es.refusal, "DataNotPersistent") == 0)
        return comp_cond(x, "DataNotPersistent", API_CONDITION_TRUE, STATUS_SEVERITY_ERROR,
                         "RollRefused", es.message);
    return comp_cond(x, "DataNotPersistent", API_CONDITION_TRUE, STATUS_SEVERITY_WARNING,
                     "EmptyDir", es.message);
}

/* etcd: a restore from a snapshot the NestedEtcd's annotation asks for
 * (controllers/etcdrestore.h), in place of the membership step while it runs. Returns 1 when
 * it runs, 0 when the membership step goes on, or a negative errno. */
static int restore_step(struct comp *x, const struct render_cluster *rc, cJSON *objs)
{
    struct etcd_restore_input in = {.view = x->view,
                                    .etcd = x->obj,
                                    .ns = x->ns,
                                    .cluster = render_cluster_name(rc),
                                    .now = x->view->now};
    struct etcd_restore_output out;
    const cJSON *o;
    struct err e;
    int r;

    cJSON_ArrayForEach(o, objs) {
        if (!in.sts && str(o, "kind") && strcmp(str(o, "kind"), "StatefulSet") == 0)
            in.sts = o;
    }
    x->restore_events = x->plan->n_events;
    r = etcd_restore_step(&in, x->st, x->plan, &x->after_status, &out);
    x->restore_events_end = x->plan->n_events;
    if (r < 0)
        return r;
    if (out.reason &&
        (r = comp_cond(x, ETCD_RESTORE_CONDITION, out.status,
                       out.warning                                   ? STATUS_SEVERITY_WARNING
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
    if ((r = comp_cond(x, ETCD_MEMBERSHIP_CONDITION, API_CONDITION_FALSE, STATUS_SEVERITY_INFO,
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
    struct etcd_snapshot_input in = {.view = x->view,
                                     .etcd = x->obj,
                                     .ns = x->ns,
                                     .cluster = render_cluster_name(rc),
                                     .certs = certs};
    struct etcd_snapshot_output out;
    int r;

    if ((r = etcd_snapshot_step(&in, x->st, x->plan, &out)) < 0 || !out.reason)
        return r;
    return comp_cond(x, ETCD_SNAPSHOT_CONDITION, out.status,
                     out.warning                                   ? STATUS_SEVERITY_WARNING
                     : strcmp(out.status, API_CONDITION_TRUE) == 0 ? NULL
                                                                   : STATUS_SEVERITY_INFO,
                     out.reason, out.message);
}

/* etcd: the next membership change, and the StatefulSet's replicas and partition. */
int comp_reconcile_members(struct comp *x, const struct render_cluster *rc, const char *certs,
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
    if ((r = etcd_membership_step(base->members, &in, x->st, x->plan, &x->after_status, &out)) < 0)
        return r;
    err_clear(&e);
    if ((r = render_transform_statefulset_scale(objs, out.replicas, out.partition, &e)) < 0)
        return r;
    x->members_settled = out.settled;
    if (!out.reason)
        return 0;
    if (out.converged)
        return comp_cond(x, ETCD_MEMBERSHIP_CONDITION, API_CONDITION_TRUE, NULL, out.reason,
                         out.message);
    return comp_cond(x, ETCD_MEMBERSHIP_CONDITION, API_CONDITION_FALSE,
                     out.refused ? STATUS_SEVERITY_ERROR : STATUS_SEVERITY_INFO, out.reason,
                     out.message);
}
