#ifndef NESTCP_RENDER_TRANSFORM_H
#define NESTCP_RENDER_TRANSFORM_H

/*
 * Transforms every rendered object gets after templates and patches: common labels, the owner
 * reference, an image registry mirror, and the config-hash annotations. Each works in place on
 * a cJSON array of objects and is deterministic.
 */

#include <cjson/cJSON.h>

#include "lib/util/err.h"

#define RENDER_CONFIG_HASH_ANNOTATION "nestcp.x-k8s.io/config-hash"

/* Sets each label of labels (object of strings) on every object's metadata.labels and on the
 * pod template's metadata.labels of workloads. Returns 0, -EINVAL, -ENOMEM. */
int render_transform_labels(cJSON *objects, const cJSON *labels, struct err *e);

/* Sets metadata.ownerReferences of every object to the one owner
 * {apiVersion, kind, name, uid, controller: true, blockOwnerDeletion: true}, keeping other
 * owners that the templates or patches set. owner NULL or null does nothing. Returns 0,
 * -EINVAL (owner lacks one of apiVersion, kind, name, uid), -ENOMEM. */
int render_transform_owner(cJSON *objects, const cJSON *owner, struct err *e);

/* Rewrites the image of every container and init container of every workload so that its
 * registry part becomes registry: "registry.k8s.io/kube-apiserver:v1.20.2" with
 * "mirror.local:5000/k8s" gives "mirror.local:5000/k8s/kube-apiserver:v1.20.2". registry NULL
 * or "" does nothing. Returns 0, -EINVAL, -ENOMEM. */
int render_transform_registry(cJSON *objects, const char *registry, struct err *e);

/* The image name with its registry replaced (see above); caller frees. */
int render_image_with_registry(const char *image, const char *registry, char **ret_image);

/* Annotates every object with RENDER_CONFIG_HASH_ANNOTATION = sha256 (hex) of the object as it
 * is (so an unchanged object compares equal by one string), and the pod template of workloads
 * with the sha256 of the pod template plus extra_input (may be NULL), so a change of the pods'
 * inputs that is not visible in the spec (e.g. a digest of mounted Secrets) rolls them while a
 * change of replicas does not. Returns 0 or -ENOMEM. */
int render_transform_config_hash(cJSON *objects, const char *extra_input, struct err *e);

/* Sets spec.replicas (replicas >= 0) and spec.updateStrategy rollingUpdate.partition
 * (partition >= 0) of every StatefulSet in objects, and refreshes its whole-object config hash;
 * the pod template and its hash are left as they are. For the etcd reconciler, whose member
 * count and roll position come from etcd's membership rather than from the spec. Returns 0 or
 * -ENOMEM. */
int render_transform_statefulset_scale(cJSON *objects, int replicas, int partition, struct err *e);

#endif
