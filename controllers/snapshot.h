#ifndef NESTCP_CONTROLLERS_SNAPSHOT_H
#define NESTCP_CONTROLLERS_SNAPSHOT_H

/*
 * The etcd snapshot taken before an etcd or API server version change (docs/upgrades.md,
 * "A snapshot before every version change"). It is a Job in the control plane's namespace,
 * controlled by its NestedControlPlane, whose one pod runs the running etcd image's
 * `etcdctl snapshot save` against one ready member, authenticated with the etcd certs Secret's
 * healthcheck-client certificate, and writes <name>.db on the PersistentVolumeClaim the
 * NestedEtcd names (spec.snapshots.persistentVolumeClaim.claimName). etcdctl writes
 * <name>.db.part and renames it when the snapshot is whole, so <name>.db is never partial.
 *
 * Pure: this builds the Job and reads its state; controllers/nestedcontrolplane.c decides when
 * one is needed and holds the change until it is complete.
 */

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

struct kube_store;

/* app.kubernetes.io/component of the Job and its pod (the etcd NetworkPolicy lets such pods
 * reach the client port). */
#define SNAPSHOT_COMPONENT "etcd-snapshot"
/* Where the claim is mounted in the pod. */
#define SNAPSHOT_DIR "/snapshots"
#define SNAPSHOT_NAME_MAX 64
/* A snapshot Job that has not completed after this long fails (activeDeadlineSeconds). */
#define SNAPSHOT_DEADLINE_SECONDS 600
/* Pods a snapshot Job may try (backoffLimit + 1). */
#define SNAPSHOT_BACKOFF_LIMIT 2
/* A finished Job goes after a week (ttlSecondsAfterFinished); the control plane's
 * status.rollout.snapshot keeps the record, and the file stays on the claim. */
#define SNAPSHOT_TTL_SECONDS (7 * 86400)

struct snapshot_job_input {
    const char *ns, *cluster;
    /* What controls the Job: the NestedControlPlane (before a version change) or the
     * NestedEtcd (a snapshot the user asks for); owner_kind NULL: NestedControlPlane. */
    const char *owner_api_version, *owner_kind, *owner_name, *owner_uid;
    const char *name;          /* snapshot_name() */
    const char *claim;         /* the claim the file goes to */
    const char *image;         /* the running etcd's image: its etcdctl matches the server */
    const char *certs_secret;  /* the etcd certs Secret the members mount */
    const char *endpoint_host; /* a ready member's DNS name, which its certificate holds */
};

/* The snapshot of the change key names (any text that differs per change):
 * <cluster, at most 36 characters>-etcd-snapshot-<first 10 hex of sha256(key)>. */
void snapshot_name(const char *cluster, const char *key, char out[SNAPSHOT_NAME_MAX]);

/* The member a snapshot is taken from: the lowest ordinal of the etcd StatefulSet sts whose
 * pod (in pods) is Ready, its DNS name from the NestedEtcd etcd's status.addresses and the
 * image its etcd container runs (borrowed). -ENOENT when no member is ready. */
int snapshot_source(const struct kube_store *pods, const cJSON *sts, const cJSON *etcd,
                    const char **ret_host, const char **ret_image);

/* The Job, or NULL when out of memory. */
cJSON *snapshot_job(const struct snapshot_job_input *in);

/* app.kubernetes.io/component of a restore Job (controllers/etcdrestore.h) and its pod. */
#define SNAPSHOT_RESTORE_COMPONENT "etcd-restore"

struct snapshot_restore_input {
    const char *ns, *cluster;
    /* The NestedEtcd that controls the Job. */
    const char *owner_api_version, *owner_name, *owner_uid;
    const char *name;                      /* the Job's */
    const char *snapshot;                  /* <snapshot>.db is restored */
    const char *claim;                     /* the snapshots claim, mounted read-only */
    const char *data_claim;                /* the member's new claim; the data goes to its data/ */
    const char *image;                     /* the etcd image: its etcdutl */
    const char *member, *peer_url, *token; /* the one member the data is made for */
    long long bump_revision;
};

/* The restore Job of the change key names: <cluster>-etcd-restore-<hash>. */
void snapshot_restore_name(const char *cluster, const char *key, char out[SNAPSHOT_NAME_MAX]);

/* The Job that runs `etcdutl snapshot restore` into data_claim, or NULL when out of memory. */
cJSON *snapshot_restore_job(const struct snapshot_restore_input *in);

enum snapshot_state {
    SNAPSHOT_RUNNING,  /* not finished (its pod may still be pending) */
    SNAPSHOT_COMPLETE, /* condition Complete True: <name>.db is on the claim */
    SNAPSHOT_FAILED,   /* condition Failed True: no pod succeeded in time */
};

/* Deletes (with their pods) the finished Jobs controlled by owner_uid whose
 * app.kubernetes.io/component is component, and whose name is only_name unless that is NULL:
 * once what a Job did is recorded in a status the cache shows, it has no more use, and its
 * pod, finished or not, would keep the claims it mounts from being deleted. Returns 0 or
 * -ENOMEM. */
struct plan;
int snapshot_prune(const struct kube_store *jobs, const char *owner_uid, const char *component,
                   const char *only_name, struct plan *plan);

/* The state of a snapshot Job as its status tells. For SNAPSHOT_FAILED, why holds the Job's
 * reason and message; for SNAPSHOT_COMPLETE, *completed_at its status.completionTime (borrowed
 * from job; NULL when absent). */
enum snapshot_state snapshot_job_state(const cJSON *job, char *why, size_t size,
                                       const char **completed_at);

#endif
