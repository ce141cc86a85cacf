#ifndef NESTCP_RENDER_PATCH_H
#define NESTCP_RENDER_PATCH_H

/*
 * User changes to rendered objects: a component's `spec.patches` and `extraArgs`.
 *
 * A patch is one of
 *   - a partial object with apiVersion, kind and metadata.name (and optionally
 *     metadata.namespace), as kubebuilder-declarative-pattern's patches are: it is merged
 *     strategically into the object it names (see render_patch_strategic);
 *   - {"target": {"apiVersion": ..., "kind": ..., "name": ..., "namespace": ...},
 *      "type": "strategic" | "merge" | "json", "patch": ...}, where "merge" is an RFC 7386 merge
 *     patch object and "json" an RFC 6902 operation list. apiVersion and namespace are optional.
 * A patch that matches no object is an error.
 */

#include <cjson/cJSON.h>

#include "lib/util/err.h"

/* Strategic merge of patch into a copy of doc: like an RFC 7386 merge patch, except that the
 * lists containers, initContainers, ephemeralContainers, volumes, volumeMounts, env,
 * imagePullSecrets and volumeClaimTemplates merge element by element by name (an element with
 * "$patch": "delete" removes its namesake), ports merge by containerPort (Service ports by
 * port), and args/command merge flag by flag: "--key=value" replaces the element with the same
 * "--key", anything else is appended unless already present. Returns 0 and the result in
 * *ret_doc (caller frees), or -EINVAL, -ENOMEM. */
int render_patch_strategic(const cJSON *doc, const cJSON *patch, cJSON **ret_doc, struct err *e);

/* Applies every patch of the array patches, in order, to the objects array (in place; on
 * failure objects is left as it was). Errors (-EINVAL) read
 * "spec.patches[1]: matches no object (kind StatefulSet, name foo)". */
int render_patch_apply_all(cJSON *objects, const cJSON *patches, struct err *e);

/* Merges extra_args (object: flag name without dashes -> string, number or bool) into the args
 * of the container named container in every workload of objects: "--key=..." already there is
 * replaced in place, otherwise "--key=value" is appended; keys are applied in byte order.
 * Returns 0, -EINVAL (a value that is not a scalar, a key that is empty or starts with '-'),
 * -ENOENT (no such container), -ENOMEM. */
int render_patch_extra_args(cJSON *objects, const char *container, const cJSON *extra_args,
                            struct err *e);

/* The pod template spec of a workload object (StatefulSet, Deployment, DaemonSet, Job, or
 * CronJob), borrowed, or NULL. */
cJSON *render_pod_spec(const cJSON *object);

#endif
