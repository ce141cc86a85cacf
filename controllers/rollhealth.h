#ifndef NESTCP_CONTROLLERS_ROLLHEALTH_H
#define NESTCP_CONTROLLERS_ROLLHEALTH_H

/*
 * The health of a StatefulSet's roll, read from its pods: a pod of the update revision that
 * is not Ready and whose container keeps restarting, or that stays not Ready past a deadline,
 * has failed the roll. The control plane then holds the roll back (status.rollout
 * rolledBack), and the component sets the StatefulSet's partition to its replicas and deletes
 * the pods of the failed revision, which the StatefulSet controller recreates at the last good
 * one (docs/upgrades.md, "A roll that fails is rolled back").
 */

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

struct kube_store;

/* A container that restarted this often since its pod was created has failed. */
#define ROLLHEALTH_RESTARTS 3
/* A pod of the update revision that is not Ready this long after it was created has failed:
 * longer than the packages' startup probes allow (240 one-second tries). */
#define ROLLHEALTH_READY_DEADLINE 300.0
/* An API server of the update revision that answered this many resource requests or more
 * since it started, at least ROLLHEALTH_ERRORS_PERCENT % of them refused or failed (429, 5xx,
 * terminated by a filter), has failed (controllers/rollerrors.h). */
#define ROLLHEALTH_ERRORS_MIN 20
#define ROLLHEALTH_ERRORS_PERCENT 10
/* How often such a pod is scraped while it soaks, seconds; its reconcile looks twice as
 * often, so that an answer is judged soon after it came. */
#define ROLLHEALTH_SCRAPE_EVERY 4.0

/* Checks the pods <sts>-0 .. <sts>-(replicas - 1) of a StatefulSet that is rolling
 * (currentRevision != updateRevision). Returns true and says in msg which pod failed and how
 * when one did; otherwise false, with *ret_recheck the seconds until the earliest deadline of
 * a pod still starting (0: none). */
bool rollhealth_failed(const cJSON *sts, const struct kube_store *pods, double now, char *msg,
                       size_t size, double *ret_recheck);

/* Calls fn for each pod of the StatefulSet that runs its update revision while the
 * StatefulSet is rolling; fn returns false to stop. */
void rollhealth_foreach_updated(const cJSON *sts, const struct kube_store *pods,
                                bool (*fn)(void *userdata, const cJSON *pod), void *userdata);

/* The StatefulSet's spec.updateStrategy.rollingUpdate.partition (0 when absent). */
int rollhealth_partition(const cJSON *sts);

#endif
