#ifndef NESTCP_KUBE_OBJECT_H
#define NESTCP_KUBE_OBJECT_H

/*
 * Reading the standard parts of a Kubernetes object held as a cJSON tree: metadata's strings,
 * labels, annotations and ownerReferences. Pure functions of the tree, with no HTTP behind
 * them, so code that only looks at objects need not include the client.
 *
 * Every pointer returned is borrowed from obj and valid while obj is unchanged. A missing
 * field, or one of the wrong JSON type, reads as NULL. obj may be NULL.
 */

#include <cjson/cJSON.h>

/* metadata.name, metadata.namespace, metadata.uid, metadata.resourceVersion, or NULL. */
const char *kube_obj_name(const cJSON *obj);
const char *kube_obj_namespace(const cJSON *obj);
const char *kube_obj_uid(const cJSON *obj);
const char *kube_obj_resource_version(const cJSON *obj);

/* metadata.labels[key] or metadata.annotations[key], or NULL. */
const char *kube_obj_label(const cJSON *obj, const char *key);
const char *kube_obj_annotation(const cJSON *obj, const char *key);

/* Whether obj's labels satisfy a label selector of terms joined by ",": "key" (present),
 * "!key" (absent), "key=value" or "key==value", "key!=value" (absent or another value); an
 * empty or NULL selector selects everything. 1 selected, 0 not, -EINVAL for a selector of
 * another form (set-based "in" and "notin" terms). */
int kube_obj_selected(const cJSON *obj, const char *selector);

/* metadata.ownerReferences (an array, possibly empty), or NULL. */
const cJSON *kube_obj_owner_refs(const cJSON *obj);

/* The ownerReference with controller: true, or NULL. */
const cJSON *kube_obj_controller_ref(const cJSON *obj);

/* The uid of the controller's ownerReference, or NULL. */
const char *kube_obj_controller_uid(const cJSON *obj);

#endif
