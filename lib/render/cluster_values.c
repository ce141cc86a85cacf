/* Rendering the components of a resolved cluster (render_cluster_values, _component, _desired,
 * _all). */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/render/cluster.h"
#include "lib/render/cluster_internal.h"
#include "lib/render/render.h"
#include "lib/render/transform.h"

static cJSON *strlist_json(const struct api_strlist *l)
{
    cJSON *a = cJSON_CreateArray();

    for (size_t i = 0; a && i < l->n; i++) {
        if (!cJSON_AddItemToArray(a, cJSON_CreateString(l->items[i]))) {
            cJSON_Delete(a);
            return NULL;
        }
    }
    return a;
}

static cJSON *strmap_json(const struct api_strmap *m)
{
    cJSON *o = cJSON_CreateObject();

    for (size_t i = 0; o && i < m->n; i++) {
        if (!cJSON_AddStringToObject(o, m->items[i].key, m->items[i].value)) {
            cJSON_Delete(o);
            return NULL;
        }
    }
    return o;
}

static bool add(cJSON *obj, const char *key, cJSON *v)
{
    if (!v)
        return false;
    if (!cJSON_AddItemToObject(obj, key, v)) {
        cJSON_Delete(v);
        return false;
    }
    return true;
}

static bool add_resources(cJSON *values, const struct api_resources *res)
{
    cJSON *r;

    if (res->limits.n == 0 && res->requests.n == 0)
        return true;
    if (!(r = cJSON_AddObjectToObject(values, "resources")))
        return false;
    return (res->limits.n == 0 || add(r, "limits", strmap_json(&res->limits))) &&
           (res->requests.n == 0 || add(r, "requests", strmap_json(&res->requests)));
}

static bool add_storage(cJSON *values, const struct api_etcd_storage *st)
{
    cJSON *s = cJSON_AddObjectToObject(values, "storage");

    if (!s)
        return false;
    if (st->kind == API_STORAGE_PVC)
        return cJSON_AddStringToObject(s, "type", "persistentVolumeClaim") &&
               (!st->size || cJSON_AddStringToObject(s, "size", st->size)) &&
               (!st->storage_class_name ||
                cJSON_AddStringToObject(s, "storageClassName", st->storage_class_name));
    return cJSON_AddStringToObject(s, "type", "emptyDir") &&
           (!st->size_limit || cJSON_AddStringToObject(s, "sizeLimit", st->size_limit));
}

int render_cluster_values(const struct render_cluster *rc, enum render_part part,
                          const char *certs_name, cJSON **ret_values, struct err *e)
{
    const struct render_cluster_part *p;
    const struct api_component *c, *etcd;
    const struct api_cluster_network *net = &rc->ncp->spec.cluster_network;
    const struct api_network_policy *np = &rc->ncp->spec.network_policy;
    cJSON *v, *o;

    if (part >= RENDER_PART__COUNT)
        return err_set(e, -EINVAL, "no such component");
    p = &rc->parts[part];
    c = p->obj;
    etcd = rc->parts[RENDER_PART_ETCD].obj;
    if (!c)
        return err_set(e, -ENOENT, "NestedControlPlane %s/%s: %s", rc->ns, rc->ncp->meta.name,
                       p->missing ? p->missing : "component missing");
    if (part == RENDER_PART_APISERVER && !etcd)
        return err_set(e, -ENOENT, "NestedControlPlane %s/%s: %s", rc->ns, rc->ncp->meta.name,
                       rc->parts[RENDER_PART_ETCD].missing);
    if (!(v = cJSON_CreateObject()))
        return -ENOMEM;
    if (!(o = cJSON_AddObjectToObject(v, "cluster")) ||
        !cJSON_AddStringToObject(o, "name", rc->name) ||
        !cJSON_AddStringToObject(o, "namespace", rc->ns) ||
        !cJSON_AddStringToObject(v, "component", render_part_component(part)) ||
        !cJSON_AddStringToObject(v, "version", p->version) ||
        !cJSON_AddNumberToObject(v, "replicas", c->spec.replicas) ||
        (c->spec.image && !cJSON_AddStringToObject(v, "image", c->spec.image)))
        goto oom;
    if (c->meta.uid && *c->meta.uid) {
        char av[128];
        snprintf(av, sizeof(av), "%s/%s", API_GROUP_CONTROLPLANE, API_VERSION_STORAGE);
        if (!(o = cJSON_AddObjectToObject(v, "owner")) ||
            !cJSON_AddStringToObject(o, "apiVersion", p->api_version ? p->api_version : av) ||
            !cJSON_AddStringToObject(o, "kind", api_kind_info(render_part_kind(part))->name) ||
            !cJSON_AddStringToObject(o, "name", c->meta.name) ||
            !cJSON_AddStringToObject(o, "uid", c->meta.uid))
            goto oom;
    }
    if (!(o = cJSON_AddObjectToObject(v, "network")) ||
        !add(o, "serviceCIDRs", strlist_json(&net->services)) ||
        !add(o, "podCIDRs", strlist_json(&net->pods)) ||
        !cJSON_AddStringToObject(o, "serviceDomain", net->service_domain))
        goto oom;
    if (part != RENDER_PART_ETCD) {
        if (!(o = cJSON_AddObjectToObject(v, "featureGates")))
            goto oom;
        for (size_t i = 0; i < p->gates.n; i++)
            if (!cJSON_AddBoolToObject(o, p->gates.items[i].name, p->gates.items[i].enabled))
                goto oom;
    }
    if (!add(v, "extraArgs", strmap_json(&c->spec.extra_args)) ||
        !add_resources(v, &c->spec.resources))
        goto oom;
    if (part == RENDER_PART_ETCD && !add_storage(v, &c->spec.storage))
        goto oom;
    if (etcd && (!(o = cJSON_AddObjectToObject(v, "etcd")) ||
                 !cJSON_AddNumberToObject(o, "replicas", etcd->spec.replicas)))
        goto oom;
    if (certs_name && (!(o = cJSON_AddObjectToObject(v, "secrets")) ||
                       !cJSON_AddStringToObject(o, "certs", certs_name) ||
                       !cJSON_AddStringToObject(v, "inputsHash", certs_name)))
        goto oom;
    if (c->spec.patches && !add(v, "patches", cJSON_Duplicate(c->spec.patches, true)))
        goto oom;
    if (!(o = cJSON_AddObjectToObject(v, "networkPolicy")) ||
        !cJSON_AddBoolToObject(o, "enabled", np->enabled) ||
        !add(o, "apiServerAllowedCIDRs", strlist_json(&np->apiserver_cidrs)) ||
        !cJSON_AddStringToObject(o, "managerNamespace",
                                 rc->manager_namespace[0] ? rc->manager_namespace
                                                          : RENDER_CLUSTER_MANAGER_NAMESPACE))
        goto oom;
    if (part == RENDER_PART_APISERVER &&
        (!(o = cJSON_AddObjectToObject(v, "serviceAccount")) ||
         !cJSON_AddNumberToObject(o, "maxTokenExpirationSeconds",
                                  rc->ncp->spec.certificates.sa_max_token_expiration)))
        goto oom;
    if (rc->allow_privileged && (!(o = cJSON_AddObjectToObject(v, "security")) ||
                                 !cJSON_AddTrueToObject(o, "allowPrivileged")))
        goto oom;
    *ret_values = v;
    return 0;
oom:
    cJSON_Delete(v);
    return err_set(e, -ENOMEM, "out of memory");
}

const char *render_cluster_config_hash(const cJSON *objects)
{
    const cJSON *o;

    cJSON_ArrayForEach(o, objects) {
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(o, "kind");
        const cJSON *tmd, *h;
        if (!cJSON_IsString(k) || strcmp(k->valuestring, "StatefulSet") != 0)
            continue;
        tmd = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "spec"),
                                             "template"),
            "metadata");
        h = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(tmd, "annotations"),
                                             RENDER_CONFIG_HASH_ANNOTATION);
        return cJSON_IsString(h) ? h->valuestring : NULL;
    }
    return NULL;
}

int render_cluster_component(const struct render_catalog *cat, const struct render_cluster *rc,
                             enum render_part part, const char *certs_name, cJSON **ret_objects,
                             char ret_hash[RENDER_CLUSTER_HASH_MAX], struct err *e)
{
    cJSON *values = NULL, *objs = NULL;
    const char *hash;
    char what[600];
    int r;

    if ((r = render_cluster_values(rc, part, certs_name, &values, e)) < 0)
        return r;
    r = render_component(cat, values, &objs, e);
    cJSON_Delete(values);
    if (r < 0) {
        if (r != -ENOMEM) {
            /* Values were checked during resolution; what fails here is the user's patches
             * ("spec.patches[1]: ...") or a template. */
            render_cluster_what(render_part_kind(part), rc->ns, rc->parts[part].obj->meta.name,
                                what, sizeof(what));
            err_prefix(e, "%s: ", what);
        }
        return r;
    }
    hash = render_cluster_config_hash(objs);
    if (ret_hash)
        snprintf(ret_hash, RENDER_CLUSTER_HASH_MAX, "%s", hash ? hash : "");
    *ret_objects = objs;
    return 0;
}

int render_cluster_desired(const struct render_catalog *cat, const struct render_cluster *rc,
                           const struct render_cluster_pki *pki, const struct render_source *src,
                           enum render_part part, const char *prefer,
                           struct render_cluster_desired *ret, struct err *e)
{
    struct render_cluster_desired d = {0};
    cJSON *objs = NULL;
    int r;

    if (part >= RENDER_PART__COUNT)
        return err_set(e, -EINVAL, "no such component");
    snprintf(d.version, sizeof(d.version), "%s", rc->parts[part].version);
    if (!rc->parts[part].obj ||
        (part == RENDER_PART_APISERVER && !rc->parts[RENDER_PART_ETCD].obj)) {
        *ret = d;
        return 0;
    }
    r = render_cluster_certs_find(rc, pki, src, part, prefer, d.certs_name, NULL, e);
    if (r == -ENOENT) {
        err_clear(e);
        *ret = d;
        return 0;
    }
    if (r < 0)
        return r;
    if ((r = render_cluster_component(cat, rc, part, d.certs_name, &objs, d.config_hash, e)) < 0)
        return r;
    cJSON_Delete(objs);
    d.known = true;
    *ret = d;
    return 0;
}

static int append_all(cJSON *out, cJSON *items)
{
    while (items && items->child)
        if (!cJSON_AddItemToArray(out, cJSON_DetachItemViaPointer(items, items->child)))
            return -ENOMEM;
    return 0;
}

int render_cluster_all(const struct render_catalog *cat, const struct render_cluster *rc,
                       const struct render_source *src, int64_t now, cJSON **ret_objects,
                       struct api_errors *errs)
{
    struct render_cluster_pki *pki = NULL;
    cJSON *out = cJSON_CreateArray(), *workloads = cJSON_CreateArray(), *secret = NULL;
    char names[RENDER_PART__COUNT][RENDER_CLUSTER_NAME_MAX];
    bool have[RENDER_PART__COUNT] = {false};
    struct err e = {0};
    int r = 0, q;

    if (!out || !workloads) {
        r = -ENOMEM;
        goto out;
    }
    /* First every problem that needs no key: versions off the skew policy (which the
     * controllers refuse to roll out), missing components, patches, templates. A placeholder
     * stands in for the certs Secret; nothing is generated for a bad input. */
    if (render_cluster_version_skew(rc)) {
        api_errors_add(errs, NULL, "%s", render_cluster_version_skew(rc));
        r = -EINVAL;
    }
    for (int i = 0; i < RENDER_PART__COUNT; i++) {
        cJSON *objs = NULL;
        if (!rc->parts[i].obj) {
            api_errors_add(errs, NULL, "NestedControlPlane %s/%s: %s", rc->ns, rc->ncp->meta.name,
                           rc->parts[i].missing);
            r = -ENOENT;
            continue;
        }
        if (i == RENDER_PART_APISERVER && !rc->parts[RENDER_PART_ETCD].obj)
            continue;
        q = render_cluster_component(cat, rc, (enum render_part)i, "placeholder", &objs, NULL, &e);
        cJSON_Delete(objs);
        if (q == -ENOMEM) {
            r = q;
            goto out;
        }
        if (q < 0) {
            api_errors_add(errs, NULL, "%s", e.msg);
            if (r == 0)
                r = -EINVAL;
        }
    }
    if (r < 0)
        goto out;
    if ((r = render_cluster_pki_load(rc, src, now, true, &pki, errs)) < 0)
        goto out;
    {
        const cJSON *ca;
        cJSON_ArrayForEach(ca, render_cluster_pki_created(pki)) {
            cJSON *copy = cJSON_Duplicate(ca, true);
            if (!copy || !cJSON_AddItemToArray(out, copy)) {
                cJSON_Delete(copy);
                r = -ENOMEM;
                goto out;
            }
        }
    }
    /* Certs Secrets, then the kubeconfig, then the workloads. */
    for (int i = 0; i < RENDER_PART__COUNT; i++) {
        q = render_cluster_certs(rc, pki, src, (enum render_part)i, NULL, &secret, names[i], &e);
        if (q == 0 && secret && !cJSON_AddItemToArray(out, secret)) {
            cJSON_Delete(secret);
            q = -ENOMEM;
        }
        secret = NULL;
        if (q == -ENOMEM) {
            r = q;
            goto out;
        }
        if (q < 0) {
            api_errors_add(errs, NULL, "%s", e.msg);
            r = -EINVAL;
            continue;
        }
        have[i] = true;
    }
    q = render_cluster_kubeconfig(rc, pki, src, &secret, NULL, &e);
    if (q == 0 && secret && !cJSON_AddItemToArray(out, secret)) {
        cJSON_Delete(secret);
        q = -ENOMEM;
    }
    if (q < 0) {
        if (q != -ENOMEM)
            api_errors_add(errs, NULL, "%s", e.msg);
        r = q;
        if (q == -ENOMEM)
            goto out;
    }
    for (int i = 0; i < RENDER_PART__COUNT; i++) {
        cJSON *objs = NULL;
        if (!have[i])
            continue;
        q = render_cluster_component(cat, rc, (enum render_part)i, names[i], &objs, NULL, &e);
        if (q == 0)
            q = append_all(workloads, objs);
        cJSON_Delete(objs);
        if (q == -ENOMEM) {
            r = q;
            goto out;
        }
        if (q < 0) {
            api_errors_add(errs, NULL, "%s", e.msg);
            r = -EINVAL;
        }
    }
    if (r == 0)
        r = append_all(out, workloads);
out:
    if (r == 0 && errs && api_errors_oom(errs))
        r = -ENOMEM;
    if (r == 0) {
        *ret_objects = out;
        out = NULL;
    }
    cJSON_Delete(out);
    cJSON_Delete(workloads);
    render_cluster_pki_free(pki);
    return r;
}
