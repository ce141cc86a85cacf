#ifndef NESTCP_NODEAGENT_PODVOL_H
#define NESTCP_NODEAGENT_PODVOL_H

/*
 * A pod's volumes as host directories, and the bind mounts that put them at each container's
 * mount paths.
 *
 *   secret, configMap, projected (secret, configMap, serviceAccountToken and downwardAPI
 *   sources), downwardAPI
 *                          <pod_dir>/volumes/<volume>, one file per key (or per `items`
 *                          entry, at its `path`, with its `mode` or the volume's `defaultMode`),
 *                          rewritten when the data changes; keys that went away are removed.
 *                          A token is the owner's (resolve's "ServiceAccountToken"); downward
 *                          API items take the pod's metadata fields only
 *   emptyDir               <pod_dir>/volumes/<volume>, kept across container restarts
 *   persistentVolumeClaim  the spec.hostPath.path or spec.local.path of the PersistentVolume
 *                          the claim is bound to (podvol_claims_resolve), an existing
 *                          directory that outlives the pod and goes with the volume;
 *                          read-only in every container when the source says readOnly
 *   hostPath               the host path itself (created for DirectoryOrCreate)
 *
 * Other volume types are refused with -EOPNOTSUPP naming the volume.
 */

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "lib/util/err.h"
#include "test/nodeagent/podobj.h"

struct podvol_dirs {
    const char *pod_dir; /* <state>/pods/<ns>_<pod> */
    const cJSON *claims; /* volume name -> host path, from podvol_claims_resolve; NULL: none */
};

struct podvol_mount {
    char *source; /* host path (a directory, or a file for a subPath into a file) */
    char *target; /* absolute path inside the container */
    bool readonly;
};

/* Finds the host directory of every persistentVolumeClaim volume of pod, as the kubelet
 * mounts a claim: the claim (resolve's "PersistentVolumeClaim") exists, is not being deleted
 * and is Bound (status.phase) to the PersistentVolume spec.volumeName names (resolve's
 * "PersistentVolume", namespace NULL); that volume is not being deleted, its spec.claimRef
 * names the claim (namespace, name, and uid when set) and it has an absolute
 * spec.hostPath.path or spec.local.path. *ret_claims is a new object mapping volume names to
 * those paths (caller frees; empty when the pod has no claims).
 * Returns 0, -ENOENT (claim or volume missing or being deleted), -EAGAIN (the claim is not
 * bound yet), -EINVAL (claimRef names another claim, a bad claim name or path), -EOPNOTSUPP
 * (a volume neither hostPath nor local), -ENOMEM; e names the pod's volume and the claim. */
int podvol_claims_resolve(const cJSON *pod, podobj_resolve_fn resolve, void *userdata,
                          cJSON **ret_claims, struct err *e);

/* Writes or refreshes the contents of every volume of pod. Idempotent. A claim's directory
 * (from dirs->claims) must exist; its content is the application's.
 * Returns 0, -ENOENT (a Secret, ConfigMap or key that is not optional is missing, a claim
 * not in dirs->claims or its directory missing), -EAGAIN (a token is being requested),
 * -EOPNOTSUPP (a volume type this runtime does
 * not provide), -EINVAL (a bad item path), or an errno from the file system; e names the
 * volume. */
int podvol_prepare(const cJSON *pod, const struct podvol_dirs *dirs, podobj_resolve_fn resolve,
                   void *userdata, struct err *e);

/* The bind mounts of container (an element of pod.spec.containers): its volumeMounts (with
 * subPath), then hosts_path on /etc/hosts unless the container mounts something there itself.
 * Sorted so a parent directory is mounted before what is mounted inside it.
 * Returns 0, -EINVAL (mount of an unknown volume, relative mountPath, bad subPath), -ENOENT
 * (a claim not in dirs->claims), -ENOMEM. */
int podvol_mounts(const cJSON *pod, const cJSON *container, const struct podvol_dirs *dirs,
                  const char *hosts_path, struct podvol_mount **ret_mounts, size_t *ret_n,
                  struct err *e);

void podvol_mounts_free(struct podvol_mount *mounts, size_t n);

/* Creates path and its missing parents as directories with mode (like mkdir -p).
 * Returns 0 or a negative errno. */
int podvol_mkdir_p(const char *path, unsigned mode);

/* Writes data to path (through a temporary file and a rename) unless path already holds
 * exactly that data with that mode. Returns 0 or a negative errno. */
int podvol_write_file(const char *path, const void *data, size_t len, unsigned mode);

#endif
