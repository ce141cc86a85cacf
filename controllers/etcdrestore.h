#ifndef NESTCP_CONTROLLERS_ETCDRESTORE_H
#define NESTCP_CONTROLLERS_ETCDRESTORE_H

/*
 * Restoring a tenant's etcd from a snapshot (docs/upgrades.md, "Restoring a snapshot"): the
 * way back from an upgrade that went wrong. The user annotates the NestedEtcd
 * etcd.nestcp.x-k8s.io/restore-snapshot=<name>, <name> being a snapshot nestcp took
 * (the control plane's status.rollout.snapshot.name), whose file <name>.db is on the claim of
 * the NestedEtcd's spec.snapshots. The etcd reconciler then, in place of its membership step:
 *
 *   Stopping   scales the StatefulSet to 0: every member stops, and its claim goes with it
 *              (persistentVolumeClaimRetentionPolicy whenScaled: Delete); then forgets the
 *              cluster (status clusterID, adding, members);
 *   Restoring  scales it to 1: member 0's pod is created behind its scheduling gate with a
 *              new, empty claim; a Job mounts that claim and the snapshots claim and runs
 *              `etcdutl snapshot restore <name>.db` as member 0 alone, with
 *              --bump-revision 1000000000 --mark-compacted, so that every revision a client
 *              saw before is older than anything etcd serves now, and compacted: a watch or
 *              list from it is told to start again (410 Gone), never served a mix of before
 *              and after;
 *   Restored   once the Job completed, records member 0's claim as its data and lifts its
 *              gate: it starts a new cluster from the snapshot's data. The membership step
 *              takes over again, records the new cluster ID and adds the other members one
 *              at a time, as learners that copy the data from member 0. The control plane
 *              restarts every API server and controller-manager pod older than restoredAt.
 *
 * A NestedEtcd that never formed a cluster (no cluster ID, no member recorded, no member pod
 * that left its gate) and carries etcd.nestcp.x-k8s.io/start-from-snapshot=<name> (the target
 * of a move, controllers/move.h) starts from <name> the same way: there is nothing to stop,
 * so it begins at Restoring. On an etcd that formed, that annotation is ignored.
 *
 * The phase is in the NestedEtcd's status.restore. A Job that fails leaves the restore in
 * Restoring, saying why; deleting the Job tries again. Restoring the same name again needs the
 * annotation removed first; another name starts another restore.
 */

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "api/types.h"
#include "controllers/caches.h"
#include "lib/ctrl/plan.h"

#define ETCD_RESTORE_ANNOTATION "etcd.nestcp.x-k8s.io/restore-snapshot"
#define ETCD_RESTORE_STOPPING "Stopping"
#define ETCD_RESTORE_RESTORING "Restoring"
#define ETCD_RESTORE_RESTORED "Restored"
/* The condition of a NestedEtcd that tells a restore's progress. */
#define ETCD_RESTORE_CONDITION "Restored"
/* What every revision is moved up by (etcdutl snapshot restore --bump-revision). */
#define ETCD_RESTORE_BUMP 1000000000

struct etcd_restore_input {
    const struct cache_view *view;
    const cJSON *etcd;        /* the NestedEtcd as cached */
    const char *ns, *cluster; /* its StatefulSet is <cluster>-etcd */
    const cJSON *sts;         /* the rendered StatefulSet: image, token, peer URL */
    double now;
};

struct etcd_restore_output {
    bool active;          /* a restore runs: the membership step waits; apply replicas */
    bool started_cluster; /* member 0 was released this pass: forget what etcd answered */
    int replicas;         /* the StatefulSet's spec.replicas while active */
    const char *reason;   /* for the Restored condition; NULL: leave it */
    const char *status;   /* "True" or "False" */
    bool warning;
    char message[768];
};

/* The next step of a restore asked for by the annotation; changes st (status.restore, and the
 * membership records when the cluster is forgotten or member 0 starts) and plans. Actions that
 * must follow the status write go to after_status. Its Events (RestoreStarted, Restored) go to
 * plan; the caller holds them until the status write and after_status succeeded
 * (plan_events_after_all). Returns 0 or -ENOMEM. */
int etcd_restore_step(const struct etcd_restore_input *in, struct api_component_status *st,
                      struct plan *plan, struct plan *after_status,
                      struct etcd_restore_output *out);

#endif
