#include "lib/render/patch.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util/jsonpatch.h"

enum list_kind { LIST_PLAIN, LIST_BY_NAME, LIST_BY_META_NAME, LIST_PORTS, LIST_FLAGS };

static enum list_kind list_kind_of(const char *field)
{
    static const char *const by_name[] = {
        "containers", "initContainers",  "ephemeralContainers", "volumes", "volumeMounts",
        "env",        "imagePullSecrets"};

    for (size_t i = 0; i < sizeof(by_name) / sizeof(by_name[0]); i++)
        if (strcmp(field, by_name[i]) == 0)
            return LIST_BY_NAME;
    if (strcmp(field, "volumeClaimTemplates") == 0)
        return LIST_BY_META_NAME;
    if (strcmp(field, "ports") == 0)
        return LIST_PORTS;
    if (strcmp(field, "args") == 0 || strcmp(field, "command") == 0)
        return LIST_FLAGS;
    return LIST_PLAIN;
}

/* The merge key of a list element as text ("" when it has none). */
static void element_key(enum list_kind kind, const cJSON *el, char *out, size_t size)
{
    const cJSON *k = NULL;

    out[0] = '\0';
    if (kind == LIST_BY_NAME)
        k = cJSON_GetObjectItemCaseSensitive(el, "name");
    else if (kind == LIST_BY_META_NAME)
        k = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(el, "metadata"),
                                             "name");
    else if (kind == LIST_PORTS) {
        k = cJSON_GetObjectItemCaseSensitive(el, "containerPort");
        if (!k)
            k = cJSON_GetObjectItemCaseSensitive(el, "port");
    }
    if (cJSON_IsString(k))
        snprintf(out, size, "%s", k->valuestring);
    else if (cJSON_IsNumber(k))
        snprintf(out, size, "#%.0f", k->valuedouble);
}

/* Length of the "--key" part of a flag, 0 when s is not a flag. */
static size_t flag_key_len(const char *s)
{
    if (strncmp(s, "--", 2) != 0 || s[2] == '\0' || s[2] == '=')
        return 0;
    return strcspn(s, "=");
}

static int oom(struct err *e)
{
    return err_set(e, -ENOMEM, "out of memory");
}

/* Merges one flag into the list: replaces the element with the same --key, else appends. */
static int merge_flag(cJSON *list, const char *flag, struct err *e)
{
    size_t k = flag_key_len(flag);
    cJSON *it, *nv;

    cJSON_ArrayForEach(it, list) {
        if (!cJSON_IsString(it))
            continue;
        if (k ? (flag_key_len(it->valuestring) == k && strncmp(it->valuestring, flag, k) == 0)
              : strcmp(it->valuestring, flag) == 0) {
            if (!(nv = cJSON_CreateString(flag)))
                return oom(e);
            cJSON_ReplaceItemViaPointer(list, it, nv);
            return 0;
        }
    }
    if (!(nv = cJSON_CreateString(flag)) || !cJSON_AddItemToArray(list, nv)) {
        cJSON_Delete(nv);
        return oom(e);
    }
    return 0;
}

static int smp_into(cJSON *target, const cJSON *patch, const char *path, struct err *e);

static bool is_delete_directive(const cJSON *el)
{
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(el, "$patch");

    return cJSON_IsString(d) && strcmp(d->valuestring, "delete") == 0;
}

static int merge_list(cJSON *cur, const cJSON *patch, enum list_kind kind, const char *path,
                      struct err *e)
{
    const cJSON *pe;
    char pk[256], ck[256], sub[512];
    int r;

    cJSON_ArrayForEach(pe, patch) {
        cJSON *ce = NULL, *fresh;
        if (kind == LIST_FLAGS) {
            if (!cJSON_IsString(pe))
                return err_set(e, -EINVAL, "%s: elements must be strings", path);
            if ((r = merge_flag(cur, pe->valuestring, e)) < 0)
                return r;
            continue;
        }
        element_key(kind, pe, pk, sizeof(pk));
        if (!cJSON_IsObject(pe) || !pk[0])
            return err_set(e, -EINVAL, "%s: every element needs its %s", path,
                           kind == LIST_PORTS          ? "containerPort or port"
                           : kind == LIST_BY_META_NAME ? "metadata.name"
                                                       : "name");
        cJSON_ArrayForEach(ce, cur) {
            element_key(kind, ce, ck, sizeof(ck));
            if (strcmp(ck, pk) == 0)
                break;
        }
        snprintf(sub, sizeof(sub), "%s[%s]", path, pk);
        if (is_delete_directive(pe)) {
            if (ce)
                cJSON_Delete(cJSON_DetachItemViaPointer(cur, ce));
            continue;
        }
        if (ce) {
            if ((r = smp_into(ce, pe, sub, e)) < 0)
                return r;
            continue;
        }
        if (!(fresh = cJSON_CreateObject()))
            return oom(e);
        if ((r = smp_into(fresh, pe, sub, e)) < 0 || !cJSON_AddItemToArray(cur, fresh)) {
            cJSON_Delete(fresh);
            return r < 0 ? r : oom(e);
        }
    }
    return 0;
}

static int smp_into(cJSON *target, const cJSON *patch, const char *path, struct err *e)
{
    const cJSON *m;
    char sub[512];
    int r;

    cJSON_ArrayForEach(m, patch) {
        cJSON *cur = cJSON_GetObjectItemCaseSensitive(target, m->string), *nv;
        bool ok;
        if (strcmp(m->string, "$patch") == 0)
            continue;
        snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "." : "", m->string);
        if (cJSON_IsNull(m)) {
            if (cur)
                cJSON_Delete(cJSON_DetachItemViaPointer(target, cur));
            continue;
        }
        if (cJSON_IsObject(m) && cJSON_IsObject(cur)) {
            if ((r = smp_into(cur, m, sub, e)) < 0)
                return r;
            continue;
        }
        if (cJSON_IsArray(m) && cJSON_IsArray(cur) && list_kind_of(m->string) != LIST_PLAIN) {
            if ((r = merge_list(cur, m, list_kind_of(m->string), sub, e)) < 0)
                return r;
            continue;
        }
        if (cJSON_IsObject(m)) {
            if (!(nv = cJSON_CreateObject()))
                return oom(e);
            if ((r = smp_into(nv, m, sub, e)) < 0) {
                cJSON_Delete(nv);
                return r;
            }
        } else if (cJSON_IsArray(m) && list_kind_of(m->string) != LIST_PLAIN &&
                   list_kind_of(m->string) != LIST_FLAGS) {
            /* A new keyed list: merge into an empty one, which drops "$patch" directives. */
            if (!(nv = cJSON_CreateArray()))
                return oom(e);
            if ((r = merge_list(nv, m, list_kind_of(m->string), sub, e)) < 0) {
                cJSON_Delete(nv);
                return r;
            }
        } else if (!(nv = cJSON_Duplicate(m, true))) {
            return oom(e);
        }
        ok = cur ? cJSON_ReplaceItemInObjectCaseSensitive(target, m->string, nv)
                 : cJSON_AddItemToObject(target, m->string, nv);
        if (!ok) {
            cJSON_Delete(nv);
            return oom(e);
        }
    }
    return 0;
}

int render_patch_strategic(const cJSON *doc, const cJSON *patch, cJSON **ret_doc, struct err *e)
{
    cJSON *out;
    int r;

    if (!cJSON_IsObject(patch) || !cJSON_IsObject(doc))
        return err_set(e, -EINVAL, "a strategic merge patch and its target must be objects");
    if (!(out = cJSON_Duplicate(doc, true)))
        return oom(e);
    if ((r = smp_into(out, patch, "", e)) < 0) {
        cJSON_Delete(out);
        return r;
    }
    *ret_doc = out;
    return 0;
}

/* ---- patches ---- */

static const char *str_at(const cJSON *obj, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, a);

    if (b)
        v = cJSON_GetObjectItemCaseSensitive(v, b);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool same(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

struct target {
    const char *api_version, *kind, *name, *namespace; /* api_version, namespace optional */
    const char *type;
    const cJSON *body;
};

static int parse_patch(const cJSON *p, int i, struct target *ret, struct err *e)
{
    struct target t = {0};
    const cJSON *tg = cJSON_GetObjectItemCaseSensitive(p, "target");

    if (!cJSON_IsObject(p))
        return err_set(e, -EINVAL, "spec.patches[%d]: must be an object", i);
    if (tg) {
        t.api_version = str_at(tg, "apiVersion", NULL);
        t.kind = str_at(tg, "kind", NULL);
        t.name = str_at(tg, "name", NULL);
        t.namespace = str_at(tg, "namespace", NULL);
        t.type = str_at(p, "type", NULL);
        t.body = cJSON_GetObjectItemCaseSensitive(p, "patch");
        if (!t.type)
            t.type = "strategic";
        if (!t.body)
            return err_set(e, -EINVAL, "spec.patches[%d].patch: required", i);
    } else {
        t.api_version = str_at(p, "apiVersion", NULL);
        t.kind = str_at(p, "kind", NULL);
        t.name = str_at(p, "metadata", "name");
        t.namespace = str_at(p, "metadata", "namespace");
        t.type = "strategic";
        t.body = p;
        if (!t.api_version)
            return err_set(e, -EINVAL, "spec.patches[%d].apiVersion: required", i);
    }
    if (!t.kind || !t.name)
        return err_set(e, -EINVAL, "spec.patches[%d]: the target needs kind and %s", i,
                       tg ? "name" : "metadata.name");
    if (strcmp(t.type, "strategic") && strcmp(t.type, "merge") && strcmp(t.type, "json"))
        return err_set(e, -EINVAL, "spec.patches[%d].type: \"%s\" is not strategic, merge or json",
                       i, t.type);
    *ret = t;
    return 0;
}

static bool matches(const struct target *t, const cJSON *obj)
{
    return same(str_at(obj, "kind", NULL), t->kind) &&
           same(str_at(obj, "metadata", "name"), t->name) &&
           (!t->api_version || same(str_at(obj, "apiVersion", NULL), t->api_version)) &&
           (!t->namespace || same(str_at(obj, "metadata", "namespace"), t->namespace));
}

static int apply_one(cJSON *work, const cJSON *p, int i, struct err *e)
{
    struct target t = {0};
    cJSON *obj, *next;
    int hits = 0, r;

    if ((r = parse_patch(p, i, &t, e)) < 0)
        return r;
    for (obj = work->child; obj; obj = next) {
        cJSON *out = NULL;
        next = obj->next;
        if (!matches(&t, obj))
            continue;
        hits++;
        if (t.type[0] == 's')
            r = render_patch_strategic(obj, t.body, &out, e);
        else if (t.type[0] == 'm')
            r = cJSON_IsObject(t.body) ? jsonpatch_merge(obj, t.body, &out)
                                       : err_set(e, -EINVAL, "a merge patch must be an object");
        else
            r = jsonpatch_apply(obj, t.body, &out, e);
        if (r == -ENOMEM)
            err_set(e, r, "out of memory");
        if (r < 0)
            return err_prefix(e, "spec.patches[%d]: ", i);
        if (!same(str_at(out, "kind", NULL), str_at(obj, "kind", NULL)) ||
            !same(str_at(out, "apiVersion", NULL), str_at(obj, "apiVersion", NULL)) ||
            !same(str_at(out, "metadata", "name"), str_at(obj, "metadata", "name"))) {
            cJSON_Delete(out);
            return err_set(e, -EINVAL,
                           "spec.patches[%d]: must not change apiVersion, kind or metadata.name",
                           i);
        }
        cJSON_ReplaceItemViaPointer(work, obj, out);
    }
    if (hits == 0)
        return err_set(e, -EINVAL, "spec.patches[%d]: matches no object (kind %s, name %s%s%s)", i,
                       t.kind, t.name, t.namespace ? ", namespace " : "",
                       t.namespace ? t.namespace : "");
    return 0;
}

/* Moves the elements of from into to, after emptying to. */
static void move_elements(cJSON *to, cJSON *from)
{
    while (to->child)
        cJSON_Delete(cJSON_DetachItemViaPointer(to, to->child));
    while (from->child)
        cJSON_AddItemToArray(to, cJSON_DetachItemViaPointer(from, from->child));
}

int render_patch_apply_all(cJSON *objects, const cJSON *patches, struct err *e)
{
    cJSON *work;
    const cJSON *p;
    int i = 0, r = 0;

    if (!patches || cJSON_IsNull(patches))
        return 0;
    if (!cJSON_IsArray(patches))
        return err_set(e, -EINVAL, "spec.patches: must be a list");
    if (!(work = cJSON_Duplicate(objects, true)))
        return oom(e);
    cJSON_ArrayForEach(p, patches) {
        if ((r = apply_one(work, p, i++, e)) < 0)
            break;
    }
    if (r == 0)
        move_elements(objects, work);
    cJSON_Delete(work);
    return r;
}

/* ---- extraArgs ---- */

cJSON *render_pod_spec(const cJSON *object)
{
    const char *kind = str_at(object, "kind", NULL);
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(object, "spec");

    if (!kind)
        return NULL;
    if (strcmp(kind, "Pod") == 0)
        return (cJSON *)spec;
    if (strcmp(kind, "CronJob") == 0)
        spec = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(spec, "jobTemplate"), "spec");
    else if (strcmp(kind, "StatefulSet") && strcmp(kind, "Deployment") &&
             strcmp(kind, "DaemonSet") && strcmp(kind, "ReplicaSet") && strcmp(kind, "Job"))
        return NULL;
    return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(spec, "template"),
                                            "spec");
}

static int cmp_members(const void *a, const void *b)
{
    return strcmp((*(const cJSON *const *)a)->string, (*(const cJSON *const *)b)->string);
}

static int flag_text(const cJSON *kv, char **ret, struct err *e)
{
    char num[64];
    const char *v;
    size_t n;
    char *s;

    if (!kv->string[0] || kv->string[0] == '-' || strchr(kv->string, '='))
        return err_set(e, -EINVAL, "extraArgs: \"%s\" is not a flag name (write it without dashes)",
                       kv->string);
    if (cJSON_IsString(kv))
        v = kv->valuestring;
    else if (cJSON_IsBool(kv))
        v = cJSON_IsTrue(kv) ? "true" : "false";
    else if (cJSON_IsNumber(kv) && kv->valuedouble == floor(kv->valuedouble) &&
             fabs(kv->valuedouble) < 1e15) {
        snprintf(num, sizeof(num), "%lld", (long long)kv->valuedouble);
        v = num;
    } else
        return err_set(e, -EINVAL, "extraArgs.%s: must be a string, integer or bool", kv->string);
    n = strlen(kv->string) + strlen(v) + 4;
    if (!(s = malloc(n)))
        return oom(e);
    snprintf(s, n, "--%s=%s", kv->string, v);
    *ret = s;
    return 0;
}

int render_patch_extra_args(cJSON *objects, const char *container, const cJSON *extra_args,
                            struct err *e)
{
    const cJSON **kvs = NULL, *it;
    cJSON *obj;
    int n = 0, found = 0, r = 0;

    if (!extra_args || cJSON_IsNull(extra_args))
        return 0;
    if (!cJSON_IsObject(extra_args))
        return err_set(e, -EINVAL, "extraArgs: must be an object");
    n = cJSON_GetArraySize(extra_args);
    if (n == 0)
        return 0;
    if (!(kvs = calloc((size_t)n, sizeof(*kvs))))
        return oom(e);
    n = 0;
    cJSON_ArrayForEach(it, extra_args)
        kvs[n++] = it;
    qsort(kvs, (size_t)n, sizeof(*kvs), cmp_members);
    cJSON_ArrayForEach(obj, objects) {
        cJSON *c, *args;
        cJSON_ArrayForEach(c,
                           cJSON_GetObjectItemCaseSensitive(render_pod_spec(obj), "containers")) {
            if (!same(str_at(c, "name", NULL), container))
                continue;
            found++;
            args = cJSON_GetObjectItemCaseSensitive(c, "args");
            if (!args && !(args = cJSON_AddArrayToObject(c, "args"))) {
                r = oom(e);
                goto out;
            }
            if (!cJSON_IsArray(args)) {
                r = err_set(e, -EINVAL, "container %s: args is not a list", container);
                goto out;
            }
            for (int i = 0; i < n; i++) {
                char *flag = NULL;
                if ((r = flag_text(kvs[i], &flag, e)) < 0)
                    goto out;
                r = merge_flag(args, flag, e);
                free(flag);
                if (r < 0)
                    goto out;
            }
        }
    }
    if (!found)
        r = err_set(e, -ENOENT, "extraArgs: no container named %s", container);
out:
    free(kvs);
    return r;
}
