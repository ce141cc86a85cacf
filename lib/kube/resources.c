/* The well-known resource table and the pure object helpers of client.h. */

#include <string.h>

#include "lib/kube/client.h"

const struct kube_resource KUBE_NAMESPACES = {"", "v1", "namespaces", "Namespace", false};
const struct kube_resource KUBE_PODS = {"", "v1", "pods", "Pod", true};
const struct kube_resource KUBE_PVCS = {"", "v1", "persistentvolumeclaims", "PersistentVolumeClaim",
                                        true};
const struct kube_resource KUBE_SERVICES = {"", "v1", "services", "Service", true};
const struct kube_resource KUBE_SECRETS = {"", "v1", "secrets", "Secret", true};
const struct kube_resource KUBE_CONFIGMAPS = {"", "v1", "configmaps", "ConfigMap", true};
const struct kube_resource KUBE_EVENTS = {"", "v1", "events", "Event", true};
const struct kube_resource KUBE_SERVICEACCOUNTS = {"", "v1", "serviceaccounts", "ServiceAccount",
                                                   true};
const struct kube_resource KUBE_NODES = {"", "v1", "nodes", "Node", false};
const struct kube_resource KUBE_STATEFULSETS = {"apps", "v1", "statefulsets", "StatefulSet", true};
const struct kube_resource KUBE_LEASES = {"coordination.k8s.io", "v1", "leases", "Lease", true};
const struct kube_resource KUBE_CRDS = {"apiextensions.k8s.io", "v1", "customresourcedefinitions",
                                        "CustomResourceDefinition", false};
const struct kube_resource KUBE_JOBS = {"batch", "v1", "jobs", "Job", true};
const struct kube_resource KUBE_NETWORKPOLICIES = {"networking.k8s.io", "v1", "networkpolicies",
                                                   "NetworkPolicy", true};
const struct kube_resource KUBE_TOKENREVIEWS = {"authentication.k8s.io", "v1", "tokenreviews",
                                                "TokenReview", false};
const struct kube_resource KUBE_SUBJECTACCESSREVIEWS = {
    "authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", false};

static const char *meta_str(const cJSON *obj, const char *key)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(meta, key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const char *meta_map_str(const cJSON *obj, const char *map, const char *key)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const cJSON *v =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(meta, map), key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

const char *kube_obj_name(const cJSON *obj)
{
    return meta_str(obj, "name");
}

const char *kube_obj_namespace(const cJSON *obj)
{
    return meta_str(obj, "namespace");
}

const char *kube_obj_uid(const cJSON *obj)
{
    return meta_str(obj, "uid");
}

const char *kube_obj_resource_version(const cJSON *obj)
{
    return meta_str(obj, "resourceVersion");
}

const char *kube_obj_label(const cJSON *obj, const char *key)
{
    return meta_map_str(obj, "labels", key);
}

const char *kube_obj_annotation(const cJSON *obj, const char *key)
{
    return meta_map_str(obj, "annotations", key);
}

const cJSON *kube_obj_controller_ref(const cJSON *obj)
{
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
    const cJSON *refs = cJSON_GetObjectItemCaseSensitive(meta, "ownerReferences"), *ref;

    cJSON_ArrayForEach(ref, refs) {
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ref, "controller")))
            return ref;
    }
    return NULL;
}
