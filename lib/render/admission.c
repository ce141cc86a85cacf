#include "lib/render/admission.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/render/catalog.h"
#include "lib/util/buf.h"

/* A set of borrowed names, written out sorted, one per line. */
struct names {
    const char **items;
    size_t n, cap;
};

static int names_add(struct names *s, const char *name)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        const char **items = realloc(s->items, cap * sizeof(*items));
        if (!items)
            return -ENOMEM;
        s->items = items;
        s->cap = cap;
    }
    s->items[s->n++] = name;
    return 0;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Adds the names as data[key]: sorted, without duplicates, each line ended by "\n". */
static int put_names(cJSON *data, const char *key, struct names *s)
{
    struct buf b = BUF_INIT;
    int r = 0;

    qsort(s->items, s->n, sizeof(*s->items), cmp_name);
    for (size_t i = 0; i < s->n && r == 0; i++)
        if (i == 0 || strcmp(s->items[i], s->items[i - 1]) != 0)
            r = buf_printf(&b, "%s\n", s->items[i]);
    if (r == 0 && !cJSON_AddStringToObject(data, key, b.data ? b.data : ""))
        r = -ENOMEM;
    buf_done(&b);
    return r;
}

/* Adds to s the names of the package's list `which`. */
static int add_names(struct names *s, const struct render_package *p, enum render_names which)
{
    const char *const *v;
    size_t n = render_package_names(p, which, &v);

    for (size_t i = 0; i < n; i++)
        if (names_add(s, v[i]) < 0)
            return -ENOMEM;
    return 0;
}

/* Adds "<what>.lines": the lines of lines that have a package of every component of comps. */
static int put_lines(const struct render_catalog *c, cJSON *data, const char *what,
                     const cJSON *lines, const char *const *comps, size_t ncomps)
{
    struct buf b = BUF_INIT;
    const cJSON *it;
    char key[128];
    int r = 0;

    cJSON_ArrayForEach(it, lines) {
        bool all = true;
        for (size_t i = 0; i < ncomps; i++)
            all = all && render_catalog_package(c, comps[i], it->valuestring);
        if (all && (r = buf_printf(&b, "%s%s", b.len ? ", " : "", it->valuestring)) < 0)
            break;
    }
    snprintf(key, sizeof(key), "%s.lines", what);
    if (r == 0 && !cJSON_AddStringToObject(data, key, b.data ? b.data : ""))
        r = -ENOMEM;
    buf_done(&b);
    return r;
}

/* Adds the keys of one component: per line flags (and removedFlags), the union of flags, and
 * for kube-apiserver the Kubernetes feature gates. */
static int put_component(const struct render_catalog *c, cJSON *data, const char *comp,
                         const cJSON *lines)
{
    struct names all_flags = {0}, all_gates = {0};
    const cJSON *it;
    char key[256];
    int r = 0;
    bool k8s = strcmp(comp, "kube-apiserver") == 0;

    cJSON_ArrayForEach(it, lines) {
        const struct render_package *p = render_catalog_package(c, comp, it->valuestring);
        struct names s = {0};

        if (!p)
            continue;
        snprintf(key, sizeof(key), "%s.%s.flags", comp, it->valuestring);
        r = add_names(&s, p, RENDER_FLAGS);
        if (r == 0)
            r = add_names(&all_flags, p, RENDER_FLAGS);
        if (r == 0)
            r = put_names(data, key, &s);
        s.n = 0;
        if (r == 0)
            r = add_names(&s, p, RENDER_REMOVED_FLAGS);
        if (r == 0 && s.n > 0) {
            snprintf(key, sizeof(key), "%s.%s.removedFlags", comp, it->valuestring);
            r = put_names(data, key, &s);
        }
        s.n = 0;
        if (r == 0 && k8s &&
            render_catalog_package(c, "kube-controller-manager", it->valuestring)) {
            snprintf(key, sizeof(key), "kubernetes.%s.featureGates", it->valuestring);
            r = add_names(&s, p, RENDER_FEATURE_GATES);
            if (r == 0)
                r = add_names(&all_gates, p, RENDER_FEATURE_GATES);
            if (r == 0)
                r = put_names(data, key, &s);
        }
        free(s.items);
        if (r < 0)
            goto out;
    }
    snprintf(key, sizeof(key), "%s.flags", comp);
    if ((r = put_names(data, key, &all_flags)) < 0)
        goto out;
    if (k8s)
        r = put_names(data, "kubernetes.featureGates", &all_gates);
out:
    free(all_flags.items);
    free(all_gates.items);
    return r;
}

static cJSON *configmap_new(const char *ns, const char *name)
{
    cJSON *cm = cJSON_CreateObject(), *md, *labels;

    if (!cm || !cJSON_AddStringToObject(cm, "apiVersion", "v1") ||
        !cJSON_AddStringToObject(cm, "kind", "ConfigMap") ||
        !(md = cJSON_AddObjectToObject(cm, "metadata")) ||
        !cJSON_AddStringToObject(md, "name", name) ||
        (ns && *ns && !cJSON_AddStringToObject(md, "namespace", ns)) ||
        !(labels = cJSON_AddObjectToObject(md, "labels")) ||
        !cJSON_AddStringToObject(labels, "app.kubernetes.io/component",
                                 RENDER_ADMISSION_COMPONENT) ||
        !cJSON_AddStringToObject(labels, "app.kubernetes.io/managed-by", "nestcp") ||
        !cJSON_AddStringToObject(labels, "app.kubernetes.io/name", "nestcp") ||
        !cJSON_AddObjectToObject(cm, "data")) {
        cJSON_Delete(cm);
        return NULL;
    }
    return cm;
}

int render_admission_params(const struct render_catalog *c, const char *ns, const char *name,
                            cJSON **ret_configmap)
{
    static const char *const k8s[] = {"kube-apiserver", "kube-controller-manager"};
    static const char *const etcd[] = {"etcd"};
    cJSON *versions = NULL, *cm = NULL, *data;
    const cJSON *comp;
    char def[RENDER_VERSION_MAX];
    const struct render_package *p;
    int r = -ENOMEM;

    if (!name || !*name)
        return -EINVAL;
    if (!(cm = configmap_new(ns, name)) || render_catalog_versions(c, &versions) < 0)
        goto out;
    data = cJSON_GetObjectItemCaseSensitive(cm, "data");
    comp = cJSON_GetObjectItemCaseSensitive(versions, "kube-apiserver");
    if ((r = put_lines(c, data, "kubernetes", cJSON_GetObjectItemCaseSensitive(comp, "packages"),
                       k8s, 2)) < 0)
        goto out;
    if (render_catalog_resolve(c, "kube-apiserver", NULL, "stable", &p, def, NULL) == 0 &&
        !cJSON_AddStringToObject(data, "kubernetes.default", def)) {
        r = -ENOMEM;
        goto out;
    }
    comp = cJSON_GetObjectItemCaseSensitive(versions, "etcd");
    if ((r = put_lines(c, data, "etcd", cJSON_GetObjectItemCaseSensitive(comp, "packages"), etcd,
                       1)) < 0)
        goto out;
    cJSON_ArrayForEach(comp, versions) {
        if ((r = put_component(c, data, comp->string,
                               cJSON_GetObjectItemCaseSensitive(comp, "packages"))) < 0)
            goto out;
    }
    *ret_configmap = cm;
    cm = NULL;
    r = 0;
out:
    cJSON_Delete(versions);
    cJSON_Delete(cm);
    return r;
}
