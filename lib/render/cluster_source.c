/* A struct render_source over a JSON array of objects (render_source_from_objects). */

#include "lib/render/cluster.h"

#include <string.h>

static const char *str_at(const cJSON *obj, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, a);

    if (b)
        v = cJSON_GetObjectItemCaseSensitive(v, b);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool in_namespace(const cJSON *obj, const char *ns)
{
    const char *ons = str_at(obj, "metadata", "namespace");

    return strcmp(ons && *ons ? ons : "default", ns && *ns ? ns : "default") == 0;
}

static bool is_kind(const cJSON *obj, enum api_kind kind)
{
    const char *av = str_at(obj, "apiVersion", NULL), *k = str_at(obj, "kind", NULL);
    enum api_kind found;

    return av && k && api_kind_lookup(av, k, &found) == 0 && found == kind;
}

static bool is_secret(const cJSON *obj)
{
    const char *av = str_at(obj, "apiVersion", NULL), *k = str_at(obj, "kind", NULL);

    return av && k && strcmp(av, "v1") == 0 && strcmp(k, "Secret") == 0;
}

static bool is_statefulset(const cJSON *obj)
{
    const char *av = str_at(obj, "apiVersion", NULL), *k = str_at(obj, "kind", NULL);

    return av && k && strcmp(av, "apps/v1") == 0 && strcmp(k, "StatefulSet") == 0;
}

static bool named(const cJSON *obj, const char *name)
{
    const char *n = str_at(obj, "metadata", "name");

    return n && name && strcmp(n, name) == 0;
}

static const cJSON *objects_get(void *ctx, enum api_kind kind, const char *ns, const char *name)
{
    const cJSON *o;

    cJSON_ArrayForEach(o, (const cJSON *)ctx)
        if (is_kind(o, kind) && in_namespace(o, ns) && named(o, name))
            return o;
    return NULL;
}

static void objects_each(void *ctx, enum api_kind kind, const char *ns, render_source_fn fn,
                         void *userdata)
{
    const cJSON *o;

    cJSON_ArrayForEach(o, (const cJSON *)ctx) {
        if (is_kind(o, kind) && in_namespace(o, ns) && !fn(userdata, o))
            return;
    }
}

static const cJSON *objects_get_secret(void *ctx, const char *ns, const char *name)
{
    const cJSON *o;

    cJSON_ArrayForEach(o, (const cJSON *)ctx)
        if (is_secret(o) && in_namespace(o, ns) && named(o, name))
            return o;
    return NULL;
}

static const cJSON *objects_get_statefulset(void *ctx, const char *ns, const char *name)
{
    const cJSON *o;

    cJSON_ArrayForEach(o, (const cJSON *)ctx)
        if (is_statefulset(o) && in_namespace(o, ns) && named(o, name))
            return o;
    return NULL;
}

/* Whether obj's controller ownerReference has this uid. */
static bool controlled_by(const cJSON *obj, const char *uid)
{
    const cJSON *refs = cJSON_GetObjectItemCaseSensitive(
                    cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "ownerReferences"),
                *ref;

    cJSON_ArrayForEach(ref, refs) {
        const cJSON *u = cJSON_GetObjectItemCaseSensitive(ref, "uid");
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ref, "controller")))
            return cJSON_IsString(u) && strcmp(u->valuestring, uid) == 0;
    }
    return false;
}

static void objects_each_secret(void *ctx, const char *ns, const char *owner_uid,
                                render_source_fn fn, void *userdata)
{
    const cJSON *o;

    cJSON_ArrayForEach(o, (const cJSON *)ctx) {
        if (is_secret(o) && in_namespace(o, ns) && (!owner_uid || controlled_by(o, owner_uid)) &&
            !fn(userdata, o))
            return;
    }
}

void render_source_from_objects(const cJSON *objects, struct render_source *ret_src)
{
    /* No each_keyed: a walk over the documents is what there is. */
    *ret_src = (struct render_source){
        .ctx = (void *)objects,
        .get = objects_get,
        .each = objects_each,
        .get_secret = objects_get_secret,
        .each_secret = objects_each_secret,
        .get_statefulset = objects_get_statefulset,
    };
}
