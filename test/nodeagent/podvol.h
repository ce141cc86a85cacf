#ifndef NESTCP_NODEAGENT_PODVOL_H
#define NESTCP_NODEAGENT_PODVOL_H

/*
 * A pod's volumes as host directories, and the bind mounts that put them at each container's
 * mount paths.
 *
 *   secret, configMap, projected (secret and configMap sources)
 *                          <pod_dir>/volumes/<volume>, one file per key (or per `items`
 *                          entry, at its `path`, with its `mode` or the volume's `defaultMode`),
 *                          rewritten when the data changes; keys that went away are removed
 *   emptyDir               <pod_dir>/volumes/<volume>, kept across container restarts
 *   persistentVolumeClaim  <pvc_dir>/<namespace>_<claimName>, kept after the pod is gone, so a
 *                          StatefulSet pod that is recreated finds its data again
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
    const char *pvc_dir; /* <state>/pvc */
};

struct podvol_mount {
    char *source; /* host path (a directory, or a file for a subPath into a file) */
    char *target; /* absolute path inside the container */
    bool readonly;
};

/* Writes or refreshes the contents of every volume of pod. Idempotent.
 * Returns 0, -ENOENT (a Secret, ConfigMap or key that is not optional is missing),
 * -EOPNOTSUPP (a volume type this runtime does not provide), -EINVAL (a bad item path),
 * or an errno from the file system; e names the volume. */
int podvol_prepare(const cJSON *pod, const struct podvol_dirs *dirs, podobj_resolve_fn resolve,
                   void *userdata, struct err *e);

/* The bind mounts of container (an element of pod.spec.containers): its volumeMounts (with
 * subPath), then hosts_path on /etc/hosts unless the container mounts something there itself.
 * Sorted so a parent directory is mounted before what is mounted inside it.
 * Returns 0, -EINVAL (mount of an unknown volume, relative mountPath, bad subPath), -ENOMEM. */
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
