#ifndef NESTCP_NODEAGENT_PODOBJ_H
#define NESTCP_NODEAGENT_PODOBJ_H

/*
 * Small readers for Pod, Secret and ConfigMap objects as the API server returns them (cJSON),
 * and the callback through which the runtime asks for the Secrets, ConfigMaps,
 * PersistentVolumeClaims and PersistentVolumes a pod uses.
 */

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* Finds an object of kind "Secret", "ConfigMap", "PersistentVolumeClaim" (by namespace and
 * name) or "PersistentVolume" (cluster-scoped: namespace_ NULL). The object is borrowed until
 * the caller returns to the event loop. Returns 0 or -ENOENT.
 * Kind "ServiceAccountToken" asks for a token of a projected serviceAccountToken source: name
 * is "<pod>/<pod uid>/<service account>/<expirationSeconds>/<audience>" (audience empty for
 * the API server's), the object {"token": "..."}; -EAGAIN while one is being requested, or the
 * request's error. */
typedef int (*podobj_resolve_fn)(void *userdata, const char *kind, const char *namespace_,
                                 const char *name, const cJSON **ret_obj);

/* The string at a path of member names (NULL-terminated), or NULL when absent or not a string:
 * podobj_str(pod, "metadata", "name", NULL). Borrowed from obj. */
const char *podobj_str(const cJSON *obj, ...) __attribute__((sentinel));

/* The item at a path of member names, or NULL. */
const cJSON *podobj_get(const cJSON *obj, ...) __attribute__((sentinel));

/* An integer member of obj, or def when absent or not a number. */
long podobj_long(const cJSON *obj, const char *member, long def);

/* A boolean member of obj, or def. */
bool podobj_bool(const cJSON *obj, const char *member, bool def);

/* The value of key in a Secret (base64 `data`) or a ConfigMap (`data`, then base64
 * `binaryData`), decoded into a new buffer (caller frees; NUL-terminated, the terminator not
 * counted in *ret_len). Returns 0, -ENOENT (no such key), -EINVAL (bad base64), -ENOMEM. */
int podobj_data_value(const cJSON *obj, const char *kind, const char *key, char **ret_data,
                      size_t *ret_len);

/* Decodes standard base64 (padding optional). Returns 0, -EINVAL, -ENOMEM. */
int podobj_base64_decode(const char *in, char **ret_data, size_t *ret_len);

/* Whether every pair of the selector object (a map of labels) is among obj's labels. An empty
 * or absent selector matches nothing, as a Service's does. */
bool podobj_selector_matches(const cJSON *selector, const cJSON *labels);

/* The container port named name (an IANA name used by a probe) in container, or -ENOENT. */
int podobj_named_port(const cJSON *container, const char *name, int *ret_port);

#endif
