#ifndef NESTCP_CONTROLLERS_ETCDSAFETY_H
#define NESTCP_CONTROLLERS_ETCDSAFETY_H

/*
 * Whether a change of a running etcd keeps the tenant's data: a pure function from the
 * StatefulSet that runs and what the component would render now.
 *
 * A member's data survives the replacement of its pod only on a PersistentVolumeClaim. On
 * emptyDir a replaced member starts empty: a member of several is removed and added again
 * through etcd's membership API and copies the data from the others
 * (controllers/etcdmembership.h), but the only member of a 1-member etcd would bootstrap a
 * new, empty cluster. Adding and removing members never restarts one (each learns its initial
 * cluster from its pod's annotations), so spec.replicas may change at any time. Hence:
 *   - emptyDir -> persistentVolumeClaim moves the members of an etcd of 3 or more one at a
 *     time (moving_to_claims); for 1 member, and persistentVolumeClaim -> emptyDir, it is
 *     refused (EtcdStorageChangeRefused): a StatefulSet's volumeClaimTemplates cannot change
 *     in place;
 *   - a roll (any pod template change) of a 1-member etcd on emptyDir is refused
 *     (DataNotPersistent), unless its object carries the annotation
 *     ETCD_SAFETY_ACCEPT_DATA_LOSS = "true", knowing every key is lost.
 * The NestedControlPlane freezes its rollout on a refusal; the NestedEtcd reports the
 * DataNotPersistent condition whenever its members run on emptyDir.
 */

#include <stdbool.h>

#include "api/types.h"

#define ETCD_SAFETY_ACCEPT_DATA_LOSS "etcd.nestcp.x-k8s.io/accept-data-loss"

struct etcd_safety_input {
    const char *name;              /* the StatefulSet, for messages */
    bool exists;                   /* it runs */
    int live_replicas;             /* its spec.replicas */
    bool live_claims;              /* it has volumeClaimTemplates */
    bool changes;                  /* the rendered pod template differs from its own */
    int replicas;                  /* NestedEtcd spec.replicas */
    enum api_storage_kind storage; /* effective (never API_STORAGE_UNSET) */
    bool storage_kept;             /* emptyDir only because spec.storage is unset */
    bool accept_data_loss;         /* the annotation */
    const char *certs_expire;      /* "2027-12-04", the members' certificates; NULL: unknown */
};

struct etcd_safety {
    const char *refusal; /* CamelCase reason, or NULL: the change may roll out */
    bool not_persistent; /* the members' data is on emptyDir */
    /* spec.storage moved from emptyDir to persistentVolumeClaim on an etcd of 3 or more
     * members: the StatefulSet is replaced by one with claims (its pods orphaned and adopted)
     * and the members move to claims one at a time, each added again from the others. */
    bool moving_to_claims;
    char message[1024]; /* why refused, or (not_persistent) what would be lost and how to fix */
};

void etcd_safety_check(const struct etcd_safety_input *in, struct etcd_safety *out);

#endif
