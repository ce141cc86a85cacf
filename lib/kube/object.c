/* The object helpers of object.h. */

#include "lib/kube/object.h"

static const cJSON *meta(const cJSON *obj)
{
    return cJSON_GetObjectItemCaseSensitive(obj, "metadata");
}

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

const char *kube_obj_name(const cJSON *obj)
{
    return str(meta(obj), "name");
}

const char *kube_obj_namespace(const cJSON *obj)
{
    return str(meta(obj), "namespace");
}

const char *kube_obj_uid(const cJSON *obj)
{
    return str(meta(obj), "uid");
}

const char *kube_obj_resource_version(const cJSON *obj)
{
    return str(meta(obj), "resourceVersion");
}

const char *kube_obj_label(const cJSON *obj, const char *key)
{
    return str(cJSON_GetObjectItemCaseSensitive(meta(obj), "labels"), key);
}

const char *kube_obj_annotation(const cJSON *obj, const char *key)
{
    return str(cJSON_GetObjectItemCaseSensitive(meta(obj), "annotations"), key);
}

const cJSON *kube_obj_owner_refs(const cJSON *obj)
{
    const cJSON *refs = cJSON_GetObjectItemCaseSensitive(meta(obj), "ownerReferences");

    return cJSON_IsArray(refs) ? refs : NULL;
}

const cJSON *kube_obj_controller_ref(const cJSON *obj)
{
    const cJSON *ref;

    cJSON_ArrayForEach(ref, kube_obj_owner_refs(obj)) {
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ref, "controller")))
            return ref;
    }
    return NULL;
}

const char *kube_obj_controller_uid(const cJSON *obj)
{
    return str(kube_obj_controller_ref(obj), "uid");
}
