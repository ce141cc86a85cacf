#ifndef NESTCP_CONTROLLERS_STATUS_H
#define NESTCP_CONTROLLERS_STATUS_H

/*
 * What the reconcilers share to report status: writing /status only when it differs,
 * conditions with a severity, pausing.
 */

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "api/types.h"
#include "controllers/caches.h"
#include "lib/ctrl/plan.h"

/* What a step of a reconcile returns when it has recorded in a condition why the reconcile
 * goes no further this time (it waits, or it refuses): the caller stops there, and the status
 * write that carries the condition still goes out. Not an error, and not an errno value. */
#define STATUS_STOP 1

/* CAPN's condition severities, set on conditions that are False. */
#define STATUS_SEVERITY_ERROR "Error"
#define STATUS_SEVERITY_WARNING "Warning"
#define STATUS_SEVERITY_INFO "Info"

/* Plans a write of obj's /status with new_status (taken, also on failure) unless it equals
 * old_status (the cached status serialised by the same api/status.h function; NULL when the
 * object has none). The body is obj with its status replaced, so it carries
 * metadata.resourceVersion and a concurrent write is a conflict. When only conditions'
 * messages differ (progress, no transition) the write is plan_update_status_progress, which
 * the runtime coalesces. Returns 1 when a write was planned, 0 when nothing differs,
 * -ENOMEM. */
int status_plan_write(struct plan *p, const struct kube_resource *res, const cJSON *obj,
                      cJSON *new_status, const cJSON *old_status);

/* Sets a condition (api/conditions.h) and, when status is False, its severity. message is a
 * printf format. Returns 1 when the condition changed, 0 when it was already so, -ENOMEM. */
int status_condition(struct api_conditions *cs, const char *type, const char *status,
                     const char *severity, const char *reason, int64_t generation, double now,
                     const char *fmt, ...) __attribute__((format(printf, 8, 9)));

/* For an object that does not even parse: plans a /status write of its status as it is with
 * the Ready condition False (severity Error, reason and message as given), observedGeneration
 * and, unless phase is NULL, status.phase, and a Warning Event, unless the status says so
 * already. Returns 1 when a write was planned, 0 when nothing differs, -ENOMEM. */
int status_plan_invalid(struct plan *p, const struct kube_resource *res, const cJSON *obj,
                        const char *reason, const char *message, const char *phase, double now);

/* True when obj has condition `type` with status True, set for its current generation
 * (metadata.generation, when it and the condition's observedGeneration are both known). */
bool status_condition_current(const cJSON *obj, const char *type);

/* True when obj, or the Cluster cl (may be NULL), carries the cluster.x-k8s.io/paused
 * annotation, or cl has spec.paused. */
bool status_paused(const cJSON *obj, const cJSON *cl);

/* How far a StatefulSet has got. */
struct status_sts {
    bool exists;
    int replicas; /* spec.replicas (1 when absent) */
    int status_replicas, ready, updated, available;
    const char *template_hash; /* the pod template's config-hash annotation (borrowed) */
    const char *certs;         /* the certs Secret the pod template mounts (borrowed) */
    /* Rolled out completely at `hash`: observedGeneration current, status replicas, ready
     * and updated replicas all spec.replicas, currentRevision = updateRevision, and the pod
     * template carries hash. */
    bool complete;
};

/* Reads a StatefulSet (NULL: none; any shape is tolerated) against the config hash `hash`
 * (NULL: none). */
void status_statefulset(const cJSON *sts, const char *hash, struct status_sts *ret);

/* True when obj has metadata.deletionTimestamp. */
bool status_deleting(const cJSON *obj);

/* True when a Pod's Ready condition is True. */
bool status_pod_ready(const cJSON *pod);

#endif
