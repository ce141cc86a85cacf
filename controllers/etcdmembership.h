#ifndef NESTCP_CONTROLLERS_ETCDMEMBERSHIP_H
#define NESTCP_CONTROLLERS_ETCDMEMBERSHIP_H

/*
 * The etcd reconciler's membership step. From the caches (the StatefulSet, its pods and their
 * claims), the NestedEtcd status and what etcd last answered, controllers/etcdmembers.h decides
 * the next single change; this module turns it into plan actions:
 *
 *   RELEASE          one merge patch of the pod, guarded by its UID: the annotations its
 *                    container reads (etcd.nestcp.x-k8s.io/initial-cluster and
 *                    initial-cluster-state) and the removal of its scheduling gate
 *   LIST, ADD_LEARNER, PROMOTE, REMOVE
 *                    a call to one member through etcd's v3 JSON gateway (lib/etcd/client.h),
 *                    by pod IP, TLS verified against the member's DNS name, with the etcd
 *                    healthcheck client certificate of the component's certs Secret
 *   RECORD_ADDING    status.adding, and the data UID of a released member in status.members
 *   SET_REPLICAS     the StatefulSet's spec.replicas
 *
 * Status is written before the pod patch or the call (the caller appends `after_status` to its
 * plan after the status write), so what must outlive a crash (the adding record, the data UIDs)
 * is stored before the change it guards is made.
 *
 * It also places the roll: the StatefulSet's rollingUpdate.partition stays above every pod
 * that does not run the rendered template until membership has converged and every member's
 * pod is Ready, then moves down to the highest such ordinal, so that members are replaced one
 * at a time and each is back (re-added when its data was lost) before the next goes.
 *
 * What etcd answered lives in memory (struct etcd_membership), by NestedEtcd key: the last
 * member list and when it was sent, when the last change was answered, the last failure. A
 * restarted manager starts with nothing and lists first. A change etcd confirmed becomes an
 * Event in the next reconcile, so an Event says a change happened only after it did.
 */

#include <stdbool.h>
#include <stdint.h>

#include "api/types.h"
#include "controllers/caches.h"
#include "controllers/etcdmembers.h"
#include "lib/ctrl/plan.h"
#include "lib/etcd/client.h"

#define ETCD_MEMBERSHIP_GATE "etcd.nestcp.x-k8s.io/member"
#define ETCD_MEMBERSHIP_INITIAL_CLUSTER "etcd.nestcp.x-k8s.io/initial-cluster"
#define ETCD_MEMBERSHIP_INITIAL_STATE "etcd.nestcp.x-k8s.io/initial-cluster-state"
/* The condition of a NestedEtcd that says its membership is what the spec asks for. */
#define ETCD_MEMBERSHIP_CONDITION "MembersReady"

struct etcd_membership;

/* Returns 0 or -ENOMEM. */
int etcd_membership_new(struct etcd_membership **ret);
/* Frees what is remembered and the transport. No call may be in flight. Accepts NULL. */
void etcd_membership_free(struct etcd_membership *em);

/* Drops what is remembered of the NestedEtcd key ("ns/name"), e.g. once it is gone. */
void etcd_membership_forget(struct etcd_membership *em, const char *key);

struct etcd_membership_input {
    const struct cache_view *view;
    const char *key;               /* the NestedEtcd, "ns/name" */
    const char *ns, *cluster;      /* pods <cluster>-etcd-<i> in ns */
    int desired;                   /* spec.replicas */
    enum api_storage_kind storage; /* what the spec renders (never API_STORAGE_UNSET) */
    const char *certs;             /* the certs Secret the members mount */
    const char *pod_hash;          /* the rendered pod template's config hash */
    /* The StatefulSet may be changed now: the rendered configuration is the rollout's
     * target. Otherwise a SET_REPLICAS waits. */
    bool may_apply;
};

struct etcd_membership_output {
    int replicas;  /* the StatefulSet's spec.replicas to apply */
    int partition; /* its rollingUpdate.partition */
    /* Membership is exactly the desired members, all voting, every pod Ready, and no pod
     * waits to be replaced. */
    bool converged;
    /* Membership is the desired one, all voting, every pod Ready and nothing to do (pods may
     * still run an old template). */
    bool settled;
    bool refused;       /* a change is refused: an error the user must act on */
    const char *reason; /* CamelCase; NULL: nothing new to report (a LIST in flight) */
    char message[512];
};

/*
 * One step for the NestedEtcd in->key, whose parsed status is st (updated in place: cluster
 * ID, adding, members). Events go to plan; the pod patch or call to after_status, which the
 * caller appends after its status write. Returns 0 or -ENOMEM.
 */
int etcd_membership_step(struct etcd_membership *em, const struct etcd_membership_input *in,
                         struct api_component_status *st, struct plan *plan,
                         struct plan *after_status, struct etcd_membership_output *out);

/* The call actions this module plans (plan_action.call). */
extern const struct plan_call_ops etcd_membership_call_ops;

/* What a planned call asks, for tests that answer it themselves. */
struct etcd_membership_call {
    enum etcd_members_action action; /* LIST, ADD_LEARNER, PROMOTE or REMOVE */
    int ordinal;                     /* the member it is sent to */
    const char *peer_url;            /* ADD_LEARNER */
    uint64_t member_id;              /* PROMOTE, REMOVE */
};

/* Fills *ret from a call action of this module. Returns 0, or -EINVAL for another action. */
int etcd_membership_call_of(const struct plan_action *a, struct etcd_membership_call *ret);

/* Records res as the answer to the call action a, sent at sent and answered at now, as the
 * call itself does when etcd answers. */
void etcd_membership_answer(const struct plan_action *a, const struct etcd_result *res, double sent,
                            double now);

#endif
