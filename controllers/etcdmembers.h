#ifndef NESTCP_CONTROLLERS_ETCDMEMBERS_H
#define NESTCP_CONTROLLERS_ETCDMEMBERS_H

/*
 * The membership of a tenant's etcd: a pure function from what the StatefulSet, its pods and
 * etcd's last member list show to the next single step that changes the membership. One
 * member at a time, never below quorum, so that scaling and replacing members never loses
 * data.
 *
 * The members are the StatefulSet's pods <c>-etcd-<i>; member name = pod name, peer URL
 * https://<c>-etcd-<i>.<c>-etcd.<ns>.svc:2380 (etcd_members_peer_url). A member is known by
 * its peer URL, and maps to the ordinal whose URL it has; a member whose URL is no ordinal's
 * is foreign. Every pod is created with a scheduling gate and starts only when RELEASEd: the
 * caller writes the decision's state and initial_cluster into the pod's annotations (read by
 * the container through the downward API, and ignored by an etcd whose data directory holds
 * data) and removes the gate.
 *
 * Where a member's data lives is its data UID: the UID of its PersistentVolumeClaim, or of the
 * pod itself on emptyDir (the emptyDir lives as long as the pod). The caller records the data
 * UID per ordinal when it releases a pod. A gated pod has LOST its member's data when a UID is
 * recorded and differs from the pod's (a replaced emptyDir pod, a recreated claim), or, with
 * nothing recorded, on emptyDir when the member has started before (a gated pod never ran).
 * With nothing recorded on a claim, the data is taken as kept (members made before records).
 *
 * The caller's knowledge of the membership is its last LIST, sent at list_time. It is USABLE
 * when sent at or after changed_time, the time the last membership call (ADD, PROMOTE, REMOVE)
 * answered, whatever the answer (an -EBUSY change may have been applied); only the manager
 * changes the membership, so a usable list names the members. It is FRESH when also at most
 * ETCD_MEMBERS_STALE_AFTER seconds old: which members have started and which learners exist
 * can change only while pods run. Every membership change needs a fresh list; releases do not
 * (a cluster that lost its quorum answers no LIST, and may need the release to regain it).
 *
 * The rules, in the order they apply; the first that yields an action decides:
 *
 *   0. Input outside the design (replicas not 1..7 or even, names too long for a peer URL):
 *      Refused, InvalidInput.
 *   1. Bootstrap, while no cluster ID is recorded and there is no list (the cluster never
 *      formed): with no pod released yet, SET_REPLICAS(desired) until the StatefulSet has
 *      them; then RELEASE each gated pod 0..n-1 with "new" and the initial cluster of all n,
 *      n being desired, or the StatefulSet's replicas once a pod is released (a change of
 *      desired waits until the cluster has formed). A gated pod released before whose data
 *      has gone waits while any pod runs (a LIST tells whether the cluster formed); when none
 *      runs it is released as "new" with data_lost. Then LIST while a pod runs (the answer
 *      formed the cluster: the caller records its header's cluster ID); else wait.
 *   2. A formed cluster without its StatefulSet: SET_REPLICAS(highest member ordinal + 1, or
 *      desired without a usable list).
 *   3. Releases, gated pods in ordinal order below the StatefulSet's replicas (not deleting;
 *      on a claim, only once its UID is known):
 *        - with a usable list: a member that kept its data, or has never started (a learner
 *          just added), is released "existing" with the list as its initial cluster; a pod
 *          that is no member is left alone (it was removed; rules 5 and 7 deal with it); the
 *          only voting member, having lost its data, is released "new" with itself alone and
 *          data_lost: there is nothing to rejoin, every key is gone (the caller emits a
 *          Warning event and records the cluster ID of the next LIST);
 *        - without one: a pod whose recorded data UID is its own is released "existing" with
 *          the ordinals 0..n-1 as initial cluster (its etcd reads its data and ignores both);
 *          while fewer pods run than a quorum of the replicas (no LIST can be answered),
 *          also a pod on a claim with nothing recorded (its member's data is taken as kept),
 *          and, in a cluster of one ordinal, the lost only member ("new", data_lost).
 *   4. LIST when the list is not fresh and a pod runs; when none runs, wait (Refused,
 *      QuorumLost, when the list shows lost members the others cannot outvote).
 *   5. Promotions: a learner below min(desired, replicas) whose member has started and whose
 *      pod is Ready is PROMOTEd, through a healthy voting member (etcd answers -EAGAIN until
 *      it is in sync: promote again later). A learner still starting is waited for; one whose
 *      pod is Ready while the list shows it not started is LISTed again (at most every
 *      ETCD_MEMBERS_RELIST_AFTER seconds).
 *   6. Removals, each refused unless etcd keeps its quorum: a member whose pod is gated and
 *      lost its data (ReplacingMember; the pod is added again by rule 7), then a stale member,
 *      one whose peer URL matches no ordinal below max(desired, replicas). A learner may always
 *      be removed; a healthy voting member only while every other voting member is healthy; an
 *      unhealthy one while the healthy others reach the current quorum (voters / 2 + 1).
 *   7. Scale steps, refused (MemberUnhealthy) while any voting member is unhealthy: not
 *      started, or its pod missing, gated, deleting or not Ready. A learner added for a scale
 *      up whose pod does not exist yet gets it first (SET_REPLICAS up by one).
 *        - Re-adding: the lowest ordinal below min(desired, replicas) with no member, when its
 *          pod is gated with no data (emptyDir, or a claim other than the recorded one):
 *          RECORD_ADDING, then ADD_LEARNER. Its pod is released and promoted by rules 3, 5.
 *          A pod that runs or may hold a removed member's data is dropped first by lowering
 *          replicas when it is the highest; otherwise the step is refused (StaleMemberData).
 *        - Scale down (replicas > desired): REMOVE the highest member, then SET_REPLICAS down
 *          by one (the StatefulSet's claim retention policy deletes that claim).
 *        - Scale up (replicas < desired), with no learner: RECORD_ADDING and ADD_LEARNER for
 *          ordinal replicas, then SET_REPLICAS up by one; rules 3 and 5 release and promote it.
 *   8. Nothing to do: converged (Scaled), or waiting for a pod or a learner.
 *
 * Kill -9: RECORD_ADDING comes before every ADD, and the record (status) outlives the process.
 * A restarted manager has no list and LISTs first; a member with the recorded URL that has
 * not started is then released, not added again (rule 3), and with no member of that URL the
 * recorded add is sent (rule 7); a member that ended up outside the ordinals is stale (rule 6).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/types.h"
#include "lib/etcd/json.h"

#define ETCD_MEMBERS_REPLICAS_MAX API_ETCD_MAX_MEMBERS
/* Seconds after which a list no longer tells which members have started. */
#define ETCD_MEMBERS_STALE_AFTER 10.0
/* Seconds after which a learner whose pod is Ready but listed as not started is listed again. */
#define ETCD_MEMBERS_RELIST_AFTER 1.0
#define ETCD_MEMBERS_URL_MAX 256
#define ETCD_MEMBERS_INITIAL_CLUSTER_MAX 4096

struct etcd_members_pod {
    bool exists;
    bool gated;    /* still carries the scheduling gate: never started */
    bool ready;    /* condition Ready */
    bool deleting; /* deletionTimestamp set */
    /* Its claim's UID (persistentVolumeClaim; NULL while the claim is not seen yet) or its own
     * UID (emptyDir). */
    const char *data_uid;
    const char *recorded_data_uid; /* recorded for this ordinal when released; NULL: none */
};

struct etcd_members_input {
    const char *cluster;           /* "c": pods c-etcd-<i> */
    const char *ns;                /* the namespace, for peer URLs */
    int desired;                   /* NestedEtcd spec.replicas: 1..7, odd */
    enum api_storage_kind storage; /* API_STORAGE_EMPTYDIR or API_STORAGE_PVC */
    bool sts_exists;
    int sts_replicas;                                        /* its spec.replicas */
    struct etcd_members_pod pods[ETCD_MEMBERS_REPLICAS_MAX]; /* by ordinal */
    const char *cluster_id;              /* recorded in status; NULL: the cluster never formed */
    const char *adding;                  /* the peer URL recorded before an ADD; NULL: none */
    const struct etcd_member_list *list; /* the last LIST; NULL: none (borrowed) */
    double list_time;                    /* when that LIST was sent */
    double changed_time; /* when the last membership call answered; 0: none since start */
    double now;
};

enum etcd_members_action {
    ETCD_MEMBERS_NONE,
    ETCD_MEMBERS_LIST,
    ETCD_MEMBERS_RELEASE,       /* ordinal, state, initial_cluster, data_lost */
    ETCD_MEMBERS_RECORD_ADDING, /* ordinal, peer_url: write status.adding = peer_url */
    ETCD_MEMBERS_ADD_LEARNER,   /* ordinal, peer_url */
    ETCD_MEMBERS_PROMOTE,       /* member_id, ordinal */
    ETCD_MEMBERS_REMOVE,        /* member_id, ordinal (-1: foreign) */
    ETCD_MEMBERS_SET_REPLICAS,  /* replicas */
};

enum etcd_members_phase {
    ETCD_MEMBERS_PHASE_BOOTSTRAPPING,
    ETCD_MEMBERS_PHASE_STARTING, /* releasing members that keep their data */
    ETCD_MEMBERS_PHASE_ADDING,
    ETCD_MEMBERS_PHASE_PROMOTING,
    ETCD_MEMBERS_PHASE_REMOVING,
    ETCD_MEMBERS_PHASE_REPLACING,
    ETCD_MEMBERS_PHASE_SCALING,   /* SET_REPLICAS of a formed cluster */
    ETCD_MEMBERS_PHASE_OBSERVING, /* LIST */
    ETCD_MEMBERS_PHASE_WAITING,
    ETCD_MEMBERS_PHASE_REFUSED,
    ETCD_MEMBERS_PHASE_SCALED, /* converged */
};

struct etcd_members_decision {
    enum etcd_members_action action;
    enum etcd_members_phase phase;
    /* CamelCase: the phase's name, or for Refused "InvalidInput", "MemberUnhealthy",
     * "QuorumLost", "StaleMemberData", "TooManyMembers", for Waiting "WaitingForPod",
     * "WaitingForClaim", "WaitingForLearner", "NoMemberRunning", and "DataLost" for a
     * release with data_lost. */
    const char *reason;
    char message[256]; /* names the member: "adding member c-etcd-3 as a learner" */
    int ordinal;       /* -1 when none */
    const char *state; /* RELEASE: "new" or "existing"; else NULL */
    char initial_cluster[ETCD_MEMBERS_INITIAL_CLUSTER_MAX]; /* RELEASE: "name=peerURL,..." */
    char peer_url[ETCD_MEMBERS_URL_MAX];                    /* RECORD_ADDING, ADD_LEARNER */
    uint64_t member_id;                                     /* PROMOTE, REMOVE */
    int replicas;                                           /* SET_REPLICAS */
    /* LIST, ADD_LEARNER, PROMOTE, REMOVE: the ordinal of a Ready, started voting member to
     * send it to (never a learner, for a REMOVE another member than the one removed); for a
     * LIST without one, a running pod; -1: any (the client Service). */
    int endpoint;
    bool data_lost;     /* RELEASE of a member whose data is gone: a new, empty cluster */
    bool forget_adding; /* the adding record names a member that votes or is not wanted */
    /* Membership is exactly ordinals 0..desired-1, all voting, and the StatefulSet has
     * desired replicas (as of a usable list). The rollout reads it as "etcd complete". */
    bool converged;
};

/* Decides the next step. Never fails. On RELEASE the caller records pods[ordinal].data_uid for
 * the ordinal; on RECORD_ADDING it writes status.adding and forgets the ordinal's recorded
 * data UID in the same status update (the member added there starts without data). */
void etcd_members_decide(const struct etcd_members_input *in, struct etcd_members_decision *out);

/* Writes the peer URL of pod <cluster>-etcd-<ordinal> into buf. Returns 0, -ENAMETOOLONG. */
int etcd_members_peer_url(const char *cluster, const char *ns, int ordinal, char *buf, size_t size);

/* "None", "List", "Release", "RecordAdding", "AddLearner", "Promote", "Remove",
 * "SetReplicas". */
const char *etcd_members_action_name(enum etcd_members_action a);

/* "Bootstrapping", "Starting", "AddingMember", "PromotingMember", "RemovingMember",
 * "ReplacingMember", "Scaling", "Observing", "Waiting", "Refused", "Scaled". */
const char *etcd_members_phase_name(enum etcd_members_phase p);

#endif
