#ifndef NESTCP_KUBE_LEADER_H
#define NESTCP_KUBE_LEADER_H

/*
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it:
 *
 *   - a candidate takes the Lease when it is absent, when its holder is empty (released), when
 *     it already names this candidate, or when the record has not changed for the record's
 *     leaseDurationSeconds as measured on the local monotonic clock from the moment this
 *     candidate first saw it (remote timestamps are never trusted, so clock skew is harmless);
 *   - every write is an update at the resourceVersion just read, so of two racing candidates
 *     only one wins (the other gets 409 Conflict and keeps waiting);
 *   - the leader renews every retry_period; if it has not renewed for renew_deadline it stops
 *     leading and says so through on_stopped_leading (a manager exits then);
 *   - kube_leader_stop() releases a held Lease (empty holder, leaseDurationSeconds 1, as
 *     client-go's ReleaseOnCancel) so a standby takes over at its next poll.
 *
 * There is no fencing: a leader that stalls longer than lease_duration - renew_deadline can
 * overlap with its successor. Stop all guarded work in on_stopped_leading.
 *
 * Callbacks run on the loop and must not free the elector (stop it, or free it later).
 *
 * Standbys poll every retry_period minus up to 20 % jitter and also wake exactly when an
 * observed record would expire, so after a leader dies a standby takes over within
 * lease_duration + retry_period (plus one request's latency).
 */

#include <stdbool.h>
#include <stddef.h>

#include "lib/util/err.h"

struct kube_client;
struct kube_leader;

struct kube_leader_opts {
    const char *namespace_; /* the Lease's namespace (required) */
    const char *name;       /* the Lease's name (required) */
    const char *identity;   /* NULL: "<hostname>_<pid>_<random hex>" */
    double lease_duration;  /* whole seconds; 0: 15 */
    double renew_deadline;  /* seconds; 0: 10 */
    double retry_period;    /* seconds; 0: 2 */
    /* Called on the loop when this candidate becomes the leader. */
    void (*on_started_leading)(void *userdata);
    /* Called on the loop when leadership is lost: code -ETIMEDOUT (no renewal within
     * renew_deadline) or -EBUSY (the Lease names another holder). Not called for
     * kube_leader_stop(). After it the elector is finished; it does not campaign again. */
    void (*on_stopped_leading)(void *userdata, int code);
    /* Optional: called when the observed holder changes ("" when released). */
    void (*on_new_leader)(void *userdata, const char *identity);
    void *userdata;
};

/* Creates a candidate; opts and its strings are copied. Nothing is sent until
 * kube_leader_start(). Returns 0, -EINVAL (bad option, detail in e), -ENOMEM. */
int kube_leader_new(struct kube_client *c, const struct kube_leader_opts *opts,
                    struct kube_leader **ret_leader, struct err *e);

/* Starts campaigning: the first attempt is made on the next loop iteration. Returns 0 or
 * -EALREADY. */
int kube_leader_start(struct kube_leader *l);

/* Stops campaigning or leading. If leading, the Lease is released first (one update; a
 * conflict means someone else already holds it, which is fine). done (may be NULL) runs once
 * on the loop when nothing is left in flight, with 0 or the release's error code.
 * on_stopped_leading is not called. Returns 0, or -EALREADY if already stopping. */
int kube_leader_stop(struct kube_leader *l, void (*done)(void *userdata, int code), void *userdata);

/* Frees the elector without releasing the Lease. A request still in flight completes first
 * (its result is ignored), so the client must stay alive or be freed afterwards; no callback
 * runs after this call. Accepts NULL. */
void kube_leader_free(struct kube_leader *l);

bool kube_leader_is_leader(const struct kube_leader *l);

/* This candidate's identity; borrowed for the elector's lifetime. */
const char *kube_leader_identity(const struct kube_leader *l);

/* Builds the default identity "<hostname>_<pid>_<8 random hex digits>" into out.
 * Returns 0, -ENOBUFS when size is too small. */
int kube_leader_default_identity(char *out, size_t size);

#endif
