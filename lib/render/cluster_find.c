/* Finding a control plane's objects: its Cluster API Cluster, its NestedCluster and its
 * components, and the control plane a component belongs to (render_cluster_resolve,
 * render_cluster_control_plane_of). */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/defaults.h"
#include "api/validate.h"
#include "lib/render/cluster.h"
#include "lib/render/cluster_internal.h"
#include "lib/util/strutil.h"

#define CLUSTER_NAME_LABEL "cluster.x-k8s.io/cluster-name"

/* ---- finding the objects ---- */

struct match {
    const char *ncp_name, *cluster_name;
    const cJSON *found;
    int count;
};

static bool owner_is(const cJSON *obj, const char *kind, const char *group, const char *name,
                     bool controller_only)
{
    const cJSON *refs = cJSON_GetObjectItemCaseSensitive(
                    cJSON_GetObjectItemCaseSensitive(obj, "metadata"), "ownerReferences"),
                *r;
    size_t glen = strlen(group);

    cJSON_ArrayForEach(r, refs)
    {
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(r, "kind"),
                    *av = cJSON_GetObjectItemCaseSensitive(r, "apiVersion"),
                    *n = cJSON_GetObjectItemCaseSensitive(r, "name");
        if (controller_only && !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "controller")))
            continue;
        if (cJSON_IsString(k) && strcmp(k->valuestring, kind) == 0 && cJSON_IsString(av) &&
            strncmp(av->valuestring, group, glen) == 0 && av->valuestring[glen] == '/' &&
            cJSON_IsString(n) && (!name || strcmp(n->valuestring, name) == 0))
            return true;
    }
    return false;
}

static const char *label_of(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"),
                                         "labels"),
        key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool match_component(void *ud, const cJSON *obj)
{
    struct match *m = ud;
    const char *label = label_of(obj, CLUSTER_NAME_LABEL);

    if (owner_is(obj, "NestedControlPlane", API_GROUP_CONTROLPLANE, m->ncp_name, true) ||
        (label && strcmp(label, m->cluster_name) == 0)) {
        m->found = obj;
        m->count++;
    }
    return true;
}

static bool match_cluster(void *ud, const cJSON *obj)
{
    struct match *m = ud;
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(obj, "spec"), "controlPlaneRef");
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(ref, "kind"),
                *n = cJSON_GetObjectItemCaseSensitive(ref, "name");

    if (cJSON_IsString(k) && strcmp(k->valuestring, "NestedControlPlane") == 0 &&
        cJSON_IsString(n) && strcmp(n->valuestring, m->ncp_name) == 0) {
        m->found = obj;
        m->count++;
    }
    return true;
}

char *render_cluster_dup_api_version(const cJSON *obj)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, "apiVersion");

    return cJSON_IsString(v) ? strdup(v->valuestring) : NULL;
}

/* The Cluster of the control plane, parsed into rc->capi (or none). */
int render_cluster_find_capi_cluster(struct render_cluster *rc, const struct render_source *src,
                                     const cJSON *ncp_json, const char *what,
                                     struct api_errors *errs)
{
    const struct api_meta *m = &rc->ncp->meta;
    struct api_errors local = API_ERRORS_INIT;
    const cJSON *cl = NULL;
    char cwhat[600];
    int r = 0;

    for (size_t i = 0; i < m->n_owners; i++) {
        const struct api_owner_ref *o = &m->owners[i];
        if (o->kind && o->api_version && o->name && strcmp(o->kind, "Cluster") == 0 &&
            str_has_prefix(o->api_version, API_GROUP_CLUSTER "/")) {
            cl = src->get(src->ctx, API_KIND_CLUSTER, rc->ns, o->name);
            if (!cl) {
                api_errors_add(errs, NULL,
                               "%s: metadata.ownerReferences: Cluster %s/%s does not exist", what,
                               rc->ns, o->name);
                return -ENOENT;
            }
            break;
        }
    }
    if (!cl) {
        struct match mt = {.ncp_name = m->name};
        src->each(src->ctx, API_KIND_CLUSTER, rc->ns, match_cluster, &mt);
        if (mt.count > 1) {
            api_errors_add(errs, NULL,
                           "%s: %d Clusters name it in spec.controlPlaneRef; at most one may", what,
                           mt.count);
            return -EINVAL;
        }
        cl = mt.found;
    }
    (void)ncp_json;
    if (!cl)
        return 0;
    render_cluster_what(API_KIND_CLUSTER, rc->ns, render_cluster_meta_str(cl, "name"), cwhat,
                        sizeof(cwhat));
    r = api_capi_cluster_from_json(cl, &rc->capi, &local);
    if (r == 0)
        api_cluster_network_validate(&rc->capi->cluster_network, "spec.clusterNetwork", &local);
    render_cluster_merge_errors(errs, &local, cwhat);
    api_errors_done(&local);
    return r;
}

int render_cluster_find_nested_cluster(struct render_cluster *rc, const struct render_source *src,
                                       struct api_errors *errs)
{
    const struct api_object_ref *ref = rc->capi ? &rc->capi->infrastructure_ref : NULL;
    struct api_errors local = API_ERRORS_INIT;
    const cJSON *obj;
    char what[600];
    int r;

    if (!ref || !ref->name || !ref->kind || strcmp(ref->kind, "NestedCluster") != 0)
        return 0;
    obj = src->get(src->ctx, API_KIND_NESTED_CLUSTER, rc->ns, ref->name);
    if (!obj)
        return 0; /* nothing of it is rendered; its controller waits for it */
    render_cluster_what(API_KIND_NESTED_CLUSTER, rc->ns, ref->name, what, sizeof(what));
    r = api_nested_cluster_from_json(obj, &rc->nc, &local);
    if (r == 0 && (r = api_nested_cluster_default(rc->nc, rc->capi)) == 0)
        api_nested_cluster_validate(rc->nc, &local);
    render_cluster_merge_errors(errs, &local, what);
    api_errors_done(&local);
    return r == -ENOMEM ? r : 0;
}

static int set_missing(struct render_cluster_part *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int set_missing(struct render_cluster_part *p, const char *fmt, ...)
{
    char buf[800];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    free(p->missing);
    p->missing = strdup(buf);
    return p->missing ? 0 : -ENOMEM;
}

/* Finds and parses each component. */
int render_cluster_find_components(struct render_cluster *rc, const struct render_source *src,
                                   struct api_errors *errs)
{
    const struct api_object_ref *refs[RENDER_PART__COUNT] = {
        &rc->ncp->spec.etcd, &rc->ncp->spec.apiserver, &rc->ncp->spec.controller_manager};
    int ret = 0;

    for (int i = 0; i < RENDER_PART__COUNT; i++) {
        struct render_cluster_part *p = &rc->parts[i];
        enum render_part part = (enum render_part)i;
        enum api_kind kind = render_part_kind(part);
        const char *kname = api_kind_info(kind)->name, *ref = render_cluster_ref_path(part);
        struct api_errors local = API_ERRORS_INIT;
        const cJSON *obj;
        char what[600];
        int r;

        if (refs[i]->name) {
            obj = src->get(src->ctx, kind, rc->ns, refs[i]->name);
            if (!obj && set_missing(p, "%s.name: %s %s/%s does not exist", ref, kname, rc->ns,
                                    refs[i]->name) < 0)
                return -ENOMEM;
        } else {
            struct match mt = {.ncp_name = rc->ncp->meta.name, .cluster_name = rc->name};
            src->each(src->ctx, kind, rc->ns, match_component, &mt);
            obj = mt.count == 1 ? mt.found : NULL;
            if (mt.count > 1) {
                api_errors_add(errs, NULL,
                               "NestedControlPlane %s/%s: %s: %d %s objects belong to cluster "
                               "%s; name one in %s.name",
                               rc->ns, rc->ncp->meta.name, ref, mt.count, kname, rc->name, ref);
                ret = -EINVAL;
                continue;
            }
            if (!obj &&
                set_missing(p,
                            "%s: not set, and no %s in namespace %s is owned by this "
                            "control plane or labelled %s=%s",
                            ref, kname, rc->ns, CLUSTER_NAME_LABEL, rc->name) < 0)
                return -ENOMEM;
        }
        if (!obj)
            continue;
        render_cluster_what(kind, rc->ns, render_cluster_meta_str(obj, "name"), what,
                            sizeof(what));
        r = api_component_from_json(obj, &p->obj, &local);
        if (r == 0 && p->obj->kind != kind) {
            api_errors_add(&local, "kind", "is not %s", kname);
            api_component_free(p->obj);
            p->obj = NULL;
            r = -EINVAL;
        }
        render_cluster_merge_errors(errs, &local, what);
        api_errors_done(&local);
        if (r == -ENOMEM)
            return r;
        if (r < 0) {
            ret = -EINVAL;
            continue;
        }
        if (!(p->api_version = render_cluster_dup_api_version(obj)))
            return -ENOMEM;
    }
    return ret;
}

/* ---- which control plane a component belongs to ---- */

struct owner_match {
    const cJSON *component;
    const char *cname, *kind_name, *label;
    const struct render_source *src;
    const char *found;
    int count;
};

static bool match_owner_ncp(void *ud, const cJSON *ncp)
{
    struct owner_match *m = ud;
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(ncp, "spec");
    const char *name = render_cluster_meta_str(ncp, "name");

    for (int i = 0; i < RENDER_PART__COUNT && name; i++) {
        const cJSON *ref =
            cJSON_GetObjectItemCaseSensitive(spec, render_part_field((enum render_part)i));
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(ref, "name"),
                    *k = cJSON_GetObjectItemCaseSensitive(ref, "kind");
        if (cJSON_IsString(n) && strcmp(n->valuestring, m->cname) == 0 &&
            (!cJSON_IsString(k) || strcmp(k->valuestring, m->kind_name) == 0)) {
            m->found = name;
            m->count++;
            return true;
        }
    }
    if (m->label && name) {
        /* The control plane's cluster name: its Cluster owner, label, or name. */
        const char *cn = label_of(ncp, CLUSTER_NAME_LABEL);
        const cJSON *refs_json = cJSON_GetObjectItemCaseSensitive(
                        cJSON_GetObjectItemCaseSensitive(ncp, "metadata"), "ownerReferences"),
                    *r;
        cJSON_ArrayForEach(r, refs_json)
        {
            const cJSON *k = cJSON_GetObjectItemCaseSensitive(r, "kind"),
                        *n = cJSON_GetObjectItemCaseSensitive(r, "name");
            if (cJSON_IsString(k) && strcmp(k->valuestring, "Cluster") == 0 && cJSON_IsString(n))
                cn = n->valuestring;
        }
        if (!cn)
            cn = name;
        if (strcmp(cn, m->label) == 0) {
            m->found = name;
            m->count++;
        }
    }
    return true;
}

int render_cluster_control_plane_of(const struct render_source *src, const cJSON *component,
                                    char ret_name[static RENDER_CLUSTER_NAME_MAX])
{
    const cJSON *refs = cJSON_GetObjectItemCaseSensitive(
                    cJSON_GetObjectItemCaseSensitive(component, "metadata"), "ownerReferences"),
                *r;
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(component, "kind");
    struct owner_match m = {.component = component, .src = src};
    const char *ns = render_cluster_meta_str(component, "namespace");

    cJSON_ArrayForEach(r, refs)
    {
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(r, "kind"),
                    *n = cJSON_GetObjectItemCaseSensitive(r, "name");
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "controller")) && cJSON_IsString(k) &&
            strcmp(k->valuestring, "NestedControlPlane") == 0 && cJSON_IsString(n) &&
            strlen(n->valuestring) < RENDER_CLUSTER_NAME_MAX) {
            snprintf(ret_name, RENDER_CLUSTER_NAME_MAX, "%s", n->valuestring);
            return 0;
        }
    }
    m.cname = render_cluster_meta_str(component, "name");
    m.kind_name = cJSON_IsString(kind) ? kind->valuestring : "";
    if (!m.cname)
        return -ENOENT;
    src->each(src->ctx, API_KIND_NESTED_CONTROL_PLANE, ns ? ns : "default", match_owner_ncp, &m);
    if (m.count == 0) {
        m.label = label_of(component, CLUSTER_NAME_LABEL);
        if (m.label)
            src->each(src->ctx, API_KIND_NESTED_CONTROL_PLANE, ns ? ns : "default", match_owner_ncp,
                      &m);
    }
    if (m.count != 1 || strlen(m.found) >= RENDER_CLUSTER_NAME_MAX)
        return -ENOENT;
    snprintf(ret_name, RENDER_CLUSTER_NAME_MAX, "%s", m.found);
    return 0;
}
