#ifndef NESTCP_CONTROLLERS_COMP_H
#define NESTCP_CONTROLLERS_COMP_H

/*
 * The component reconciler's parts (NestedEtcd, NestedAPIServer, NestedControllerManager),
 * shared by its four files:
 *
 *   nestedcomponent.c  the reconcile: the component and its control plane, the certs Secret,
 *                      the rendered objects applied at the target, the watch mapping, and the
 *                      conditions below
 *   compobjects.c      the rendered objects: which kinds, what is applied, what is deleted
 *                      once no longer rendered, and a failed roll held back
 *   competcd.c         etcd's steps: the data's persistence, a restore, a snapshot and the
 *                      membership, with the StatefulSet's replicas and partition
 *   compstatus.c       the status: replicas, version, addresses, the Service, Ready and
 *                      Progressing
 *
 * Internal to those files; nothing else includes it.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "api/types.h"
#include "controllers/caches.h"
#include "controllers/nested.h"
#include "lib/ctrl/plan.h"
#include "lib/render/cluster.h"

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
    bool moving_to_claims;   /* etcd: its members move from emptyDir to claims */
    bool members_settled;    /* etcd: every member votes and its pod is Ready */
    /* etcd: the restore's Events, told once its status write and pod release succeeded */
    size_t restore_events, restore_events_end;
    char restoring[768]; /* etcd: what a running restore does; "" when none runs */
    char key[RENDER_CLUSTER_NAME_MAX * 2];
    char conflict[512]; /* a rendered object's name is taken by someone else's object */
};

static inline const cJSON *get(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

static inline const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = get(o, key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static inline const char *kind_name(const struct comp *x)
{
    return nested_part_resource(x->part)->kind;
}

/* Sets a condition of the component, and records a Warning event when an error one changed.
 * Returns 0 or -ENOMEM. */
int comp_cond(struct comp *x, const char *type, const char *status, const char *severity,
              const char *reason, const char *msg);

/* Ready False (and Progressing True) with a reason: nothing below it happens. */
int comp_not_ready(struct comp *x, const char *severity, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- compobjects.c ---- */

/* Plans a server-side apply of every rendered object in objs (taken from it) that differs
 * from the cache; nothing when a name is taken by someone else's object (x->conflict says
 * which). Returns 0, -EINVAL (a kind not rendered), -ENOMEM. */
int comp_apply_changed(struct comp *x, cJSON *objs);

/* Plans the deletion of what the component controls of a rendered kind but objs no longer
 * holds. Returns 0 or -ENOMEM. */
int comp_delete_unrendered(struct comp *x, const cJSON *objs);

/* Holds a failed roll back: the StatefulSet in objs gets a partition at its replicas, and the
 * pods of the failed revision are deleted once the cache shows it. Returns 0 or a negative
 * errno. */
int comp_hold_back(struct comp *x, cJSON *objs, const char *stsname);

/* ---- competcd.c ---- */

/* etcd: the DataNotPersistent condition for the rendered hash. Returns 0 or -ENOMEM. */
int comp_report_persistence(struct comp *x, const struct render_cluster *rc, const char *hash);

/* etcd: a restore or snapshot asked for, else the next membership change; sets the
 * StatefulSet's replicas and partition in objs. Returns 0 or a negative errno. */
int comp_reconcile_members(struct comp *x, const struct render_cluster *rc, const char *certs,
                           const char *hash, cJSON *objs);

/* ---- compstatus.c ---- */

/* Replicas, version, addresses, the Service, Ready and Progressing from the live StatefulSet
 * and the target. Returns 0 or -ENOMEM. */
int comp_observe(struct comp *x, const struct render_cluster *rc, const char *hash);

#endif
