#ifndef NESTCP_KUBE_TRANSFORM_H
#define NESTCP_KUBE_TRANSFORM_H

/*
 * Pieces of cache transforms (client-go's TransformFunc, see kube_informer_opts.transform):
 * they make an object smaller in place before an informer caches it, removing what the
 * program never reads. Pure; no I/O, no allocation.
 */

#include <cjson/cJSON.h>

/* kubectl's copy of the last object it applied, in metadata.annotations. */
#define KUBE_LAST_APPLIED_ANNOTATION "kubectl.kubernetes.io/last-applied-configuration"

/* Removes from obj's metadata what no controller reads: managedFields (server-side apply's
 * bookkeeping) and the annotation KUBE_LAST_APPLIED_ANNOTATION (an annotations object left
 * empty goes too). Everything else of the metadata stays: name, namespace, uid,
 * resourceVersion, generation, labels, other annotations, ownerReferences, finalizers,
 * creation and deletion timestamps. */
void kube_transform_trim_metadata(cJSON *obj);

/* Keeps of obj only the fields at paths (NULL-terminated; a path is keys joined by '.', as
 * "spec.template.metadata") and the objects that lead to them. A path keeps its whole
 * subtree; an array is kept or removed whole. Paths that obj lacks are ignored. */
void kube_transform_keep(cJSON *obj, const char *const *paths);

#endif
