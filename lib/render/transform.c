#include "lib/render/transform.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/render/patch.h"
#include "lib/util/buf.h"

static int oom(struct err *e)
{
    return err_set(e, -ENOMEM, "out of memory");
}

/* Returns obj[key], creating an empty object there if absent. */
static cJSON *ensure_object(cJSON *obj, const char *key)
{
    cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

    if (cJSON_IsObject(v))
        return v;
    if (v)
        cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
    return cJSON_AddObjectToObject(obj, key);
}

static int set_string(cJSON *obj, const char *key, const char *value)
{
    cJSON *v = cJSON_CreateString(value);
    bool ok;

    if (!v)
        return -ENOMEM;
    ok = cJSON_GetObjectItemCaseSensitive(obj, key)
             ? cJSON_ReplaceItemInObjectCaseSensitive(obj, key, v)
             : cJSON_AddItemToObject(obj, key, v);
    if (!ok) {
        cJSON_Delete(v);
        return -ENOMEM;
    }
    return 0;
}

static cJSON *pod_template(const cJSON *obj)
{
    const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(obj, "kind"));
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");

    if (!render_pod_spec(obj) || (kind && strcmp(kind, "Pod") == 0))
        return NULL;
    if (kind && strcmp(kind, "CronJob") == 0)
        spec = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(spec, "jobTemplate"), "spec");
    return cJSON_GetObjectItemCaseSensitive(spec, "template");
}

static int add_labels(cJSON *holder, const cJSON *labels)
{
    cJSON *meta = ensure_object(holder, "metadata"), *l;
    const cJSON *it;

    if (!meta || !(l = ensure_object(meta, "labels")))
        return -ENOMEM;
    cJSON_ArrayForEach(it, labels)
        if (set_string(l, it->string, it->valuestring) < 0)
            return -ENOMEM;
    return 0;
}

int render_transform_labels(cJSON *objects, const cJSON *labels, struct err *e)
{
    const cJSON *it;
    cJSON *obj, *tpl;

    cJSON_ArrayForEach(it, labels)
        if (!cJSON_IsString(it))
            return err_set(e, -EINVAL, "label %s: value must be a string", it->string);
    cJSON_ArrayForEach(obj, objects) {
        if (add_labels(obj, labels) < 0)
            return oom(e);
        if ((tpl = pod_template(obj)) && add_labels(tpl, labels) < 0)
            return oom(e);
    }
    return 0;
}

int render_transform_owner(cJSON *objects, const cJSON *owner, struct err *e)
{
    static const char *const keys[] = {"apiVersion", "kind", "name", "uid"};
    cJSON *obj;

    if (!owner || cJSON_IsNull(owner))
        return 0;
    for (size_t i = 0; i < 4; i++)
        if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(owner, keys[i])) ||
            !cJSON_GetObjectItemCaseSensitive(owner, keys[i])->valuestring[0])
            return err_set(e, -EINVAL, "owner.%s: required", keys[i]);
    cJSON_ArrayForEach(obj, objects) {
        cJSON *meta = ensure_object(obj, "metadata"), *refs, *ref, *it, *next;
        const char *uid = cJSON_GetObjectItemCaseSensitive(owner, "uid")->valuestring;
        if (!meta)
            return oom(e);
        refs = cJSON_GetObjectItemCaseSensitive(meta, "ownerReferences");
        if (!cJSON_IsArray(refs)) {
            cJSON_DeleteItemFromObjectCaseSensitive(meta, "ownerReferences");
            if (!(refs = cJSON_AddArrayToObject(meta, "ownerReferences")))
                return oom(e);
        }
        for (it = refs->child; it; it = next) { /* one controller: drop others and ourselves */
            next = it->next;
            const char *u = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(it, "uid"));
            if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "controller")) ||
                (u && strcmp(u, uid) == 0))
                cJSON_Delete(cJSON_DetachItemViaPointer(refs, it));
        }
        if (!(ref = cJSON_CreateObject()))
            return oom(e);
        for (size_t i = 0; i < 4; i++)
            if (!cJSON_AddStringToObject(
                    ref, keys[i], cJSON_GetObjectItemCaseSensitive(owner, keys[i])->valuestring)) {
                cJSON_Delete(ref);
                return oom(e);
            }
        if (!cJSON_AddTrueToObject(ref, "controller") ||
            !cJSON_AddTrueToObject(ref, "blockOwnerDeletion") || !cJSON_AddItemToArray(refs, ref)) {
            cJSON_Delete(ref);
            return oom(e);
        }
    }
    return 0;
}

int render_image_with_registry(const char *image, const char *registry, char **ret_image)
{
    const char *slash = strchr(image, '/'), *rest = image;
    size_t n;
    char *out;

    /* The first component is a registry when it has a '.' or ':' or is "localhost", as the
     * container runtimes decide; everything after it is the repository path and tag. */
    if (slash) {
        size_t first = (size_t)(slash - image);
        if (memchr(image, '.', first) || memchr(image, ':', first) ||
            (first == 9 && strncmp(image, "localhost", 9) == 0))
            rest = slash + 1;
    }
    n = strlen(registry) + strlen(rest) + 2;
    if (!(out = malloc(n)))
        return -ENOMEM;
    snprintf(out, n, "%s/%s", registry, rest);
    *ret_image = out;
    return 0;
}

static int rewrite_list(cJSON *list, const char *registry)
{
    cJSON *c;

    cJSON_ArrayForEach(c, list) {
        cJSON *img = cJSON_GetObjectItemCaseSensitive(c, "image");
        char *n = NULL;
        if (!cJSON_IsString(img))
            continue;
        if (render_image_with_registry(img->valuestring, registry, &n) < 0 ||
            set_string(c, "image", n) < 0) {
            free(n);
            return -ENOMEM;
        }
        free(n);
    }
    return 0;
}

int render_transform_registry(cJSON *objects, const char *registry, struct err *e)
{
    cJSON *obj;
    size_t n;

    if (!registry || !*registry)
        return 0;
    n = strlen(registry);
    if (registry[n - 1] == '/' || strpbrk(registry, " @\t\n"))
        return err_set(e, -EINVAL, "imageRegistry \"%s\": want host[:port][/path]", registry);
    cJSON_ArrayForEach(obj, objects) {
        cJSON *ps = render_pod_spec(obj);
        if (!ps)
            continue;
        if (rewrite_list(cJSON_GetObjectItemCaseSensitive(ps, "containers"), registry) < 0 ||
            rewrite_list(cJSON_GetObjectItemCaseSensitive(ps, "initContainers"), registry) < 0)
            return oom(e);
    }
    return 0;
}

static int sha256_hex(const cJSON *v, const char *extra, char out[65])
{
    unsigned char md[32];
    unsigned int mdlen = 0;
    char *s = cJSON_PrintUnformatted(v);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int r = -ENOMEM;

    if (!s || !ctx)
        goto out;
    if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1 ||
        EVP_DigestUpdate(ctx, s, strlen(s)) != 1 ||
        (extra && (EVP_DigestUpdate(ctx, "\n", 1) != 1 ||
                   EVP_DigestUpdate(ctx, extra, strlen(extra)) != 1)) ||
        EVP_DigestFinal_ex(ctx, md, &mdlen) != 1 || mdlen != 32) {
        r = -EIO;
        goto out;
    }
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
    r = 0;
out:
    EVP_MD_CTX_free(ctx);
    cJSON_free(s);
    return r;
}

static int annotate(cJSON *holder, const char *value)
{
    cJSON *meta = ensure_object(holder, "metadata"), *a;

    if (!meta || !(a = ensure_object(meta, "annotations")))
        return -ENOMEM;
    return set_string(a, RENDER_CONFIG_HASH_ANNOTATION, value);
}

/* Removes our annotation so that hashing is stable across re-renders of rendered output. */
static void drop_annotation(cJSON *holder)
{
    cJSON *a = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(holder, "metadata"), "annotations");

    if (a)
        cJSON_DeleteItemFromObjectCaseSensitive(a, RENDER_CONFIG_HASH_ANNOTATION);
}

/* What else the pods' hash covers: extra_input, then the data of every ConfigMap rendered with
 * them (the component's pods mount its ConfigMaps, so a change of one rolls them). Without
 * ConfigMaps it is extra_input alone. Returns 0 with *ret (caller frees) or -ENOMEM. */
static int pod_inputs(const cJSON *objects, const char *extra_input, char **ret)
{
    struct buf b = BUF_INIT;
    const cJSON *obj;

    if (buf_puts(&b, extra_input ? extra_input : "") < 0)
        goto oom;
    cJSON_ArrayForEach(obj, objects) {
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(obj, "kind");
        char *data;
        int r;

        if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "ConfigMap") != 0)
            continue;
        data = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(obj, "data"));
        r = data ? buf_printf(&b, "\nConfigMap %s", data) : -ENOMEM;
        cJSON_free(data);
        if (r < 0)
            goto oom;
    }
    if (!(*ret = buf_steal(&b)))
        goto oom;
    return 0;
oom:
    buf_done(&b);
    return -ENOMEM;
}

int render_transform_config_hash(cJSON *objects, const char *extra_input, struct err *e)
{
    cJSON *obj, *tpl;
    char pod[65], whole[65], *inputs = NULL;
    int r = pod_inputs(objects, extra_input, &inputs);

    if (r < 0)
        return err_set(e, r, "config hash: out of memory");
    cJSON_ArrayForEach(obj, objects) {
        drop_annotation(obj);
        if ((tpl = pod_template(obj))) {
            drop_annotation(tpl);
            if ((r = sha256_hex(tpl, inputs, pod)) < 0 || (r = annotate(tpl, pod)) < 0)
                break;
        }
        if ((r = sha256_hex(obj, NULL, whole)) < 0 || (r = annotate(obj, whole)) < 0)
            break;
    }
    free(inputs);
    if (r < 0)
        return err_set(e, r, "config hash: %s", r == -ENOMEM ? "out of memory" : "digest failed");
    return 0;
}

static int set_number(cJSON *o, const char *key, int value)
{
    cJSON *n = cJSON_CreateNumber(value);

    if (!n)
        return -ENOMEM;
    if (cJSON_GetObjectItemCaseSensitive(o, key))
        return cJSON_ReplaceItemInObjectCaseSensitive(o, key, n) ? 0 : (cJSON_Delete(n), -ENOMEM);
    return cJSON_AddItemToObject(o, key, n) ? 0 : (cJSON_Delete(n), -ENOMEM);
}

int render_transform_statefulset_scale(cJSON *objects, int replicas, int partition, struct err *e)
{
    cJSON *obj;
    char whole[65];

    cJSON_ArrayForEach(obj, objects) {
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(obj, "kind");
        cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec"), *us, *ru;
        int r;

        if (!cJSON_IsString(kind) || strcmp(kind->valuestring, "StatefulSet") != 0 ||
            !cJSON_IsObject(spec))
            continue;
        if (replicas >= 0 && set_number(spec, "replicas", replicas) < 0)
            return oom(e);
        if (partition >= 0) {
            if (!(us = ensure_object(spec, "updateStrategy")) ||
                set_string(us, "type", "RollingUpdate") < 0 ||
                !(ru = ensure_object(us, "rollingUpdate")) ||
                set_number(ru, "partition", partition) < 0)
                return oom(e);
        }
        /* Hashed as render_transform_config_hash hashed it: without our annotation, and
         * without an annotations object that only held it. */
        drop_annotation(obj);
        {
            cJSON *meta = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
            cJSON *a = cJSON_GetObjectItemCaseSensitive(meta, "annotations");
            if (cJSON_IsObject(a) && !a->child)
                cJSON_DeleteItemFromObjectCaseSensitive(meta, "annotations");
        }
        if ((r = sha256_hex(obj, NULL, whole)) < 0 || (r = annotate(obj, whole)) < 0)
            return err_set(e, r, "config hash: %s",
                           r == -ENOMEM ? "out of memory" : "digest failed");
    }
    return 0;
}
