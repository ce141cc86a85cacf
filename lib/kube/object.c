/* The object helpers of object.h. */

#include <errno.h>
#include <stdbool.h>
#include <string.h>

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

/* One term of a selector, [t, end): 1 satisfied, 0 not, -EINVAL not understood. */
static int term_selected(const cJSON *obj, const char *t, const char *end)
{
    char key[320];
    const char *op = t, *val = NULL, *have;
    size_t klen;
    bool negate = false, not_equal = false;

    while (t < end && *t == ' ')
        t++;
    while (end > t && end[-1] == ' ')
        end--;
    if (t < end && *t == '!') {
        negate = true;
        t++;
    }
    for (op = t; op < end && *op != '=' && *op != '!' && *op != ' ' && *op != '('; op++)
        ;
    klen = (size_t)(op - t);
    if (klen == 0 || klen >= sizeof(key))
        return -EINVAL;
    if (op < end) {
        if (negate)
            return -EINVAL;
        if (*op == '!' && op + 1 < end && op[1] == '=') {
            not_equal = true;
            val = op + 2;
        } else if (*op == '=') {
            val = op + 1 < end && op[1] == '=' ? op + 2 : op + 1;
        } else {
            return -EINVAL; /* "key in (...)", "key notin (...)" */
        }
        if (memchr(val, '=', (size_t)(end - val)) || memchr(val, '!', (size_t)(end - val)))
            return -EINVAL;
    }
    memcpy(key, t, klen);
    key[klen] = '\0';
    have = kube_obj_label(obj, key);
    if (!val)
        return negate ? !have : !!have;
    if (!have)
        return not_equal;
    return (strlen(have) == (size_t)(end - val) && memcmp(have, val, (size_t)(end - val)) == 0) !=
           not_equal;
}

int kube_obj_selected(const cJSON *obj, const char *selector)
{
    const char *t = selector;
    int selected = 1;

    if (!t)
        return 1;
    /* Every term is read, so that a selector is refused whatever the object. */
    while (*t) {
        const char *end = strchr(t, ',');
        int r;

        if (!end)
            end = t + strlen(t);
        if ((r = term_selected(obj, t, end)) < 0)
            return r;
        selected &= r;
        t = *end ? end + 1 : end;
    }
    return selected;
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
