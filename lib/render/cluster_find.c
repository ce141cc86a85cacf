/* Finding a control plane's objects for render_cluster_resolve: its Cluster API Cluster, its
 * NestedCluster and its components, by the rule of lib/render/member.h, parsed and checked. */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/defaults.h"
#include "api/validate.h"
#include "lib/render/cluster.h"
#include "lib/render/cluster_internal.h"
#include "lib/render/member.h"
#include "lib/util/strutil.h"

/* ---- finding the objects ---- */

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
    struct api_errors local = API_ERRORS_INIT;
    bool by_owner;
    int count;
    const cJSON *cl =
        member_capi_cluster(src, ncp_json, API_KIND_NESTED_CONTROL_PLANE, &by_owner, &count);
    char cwhat[600];
    int r = 0;

    if (by_owner && !cl) {
        api_errors_add(errs, NULL, "%s: metadata.ownerReferences: Cluster %s/%s does not exist",
                       what, rc->ns, member_owner_cluster_name(ncp_json));
        return -ENOENT;
    }
    if (count > 1) {
        api_errors_add(errs, NULL,
                       "%s: %d Clusters name it in spec.controlPlaneRef; at most one may", what,
                       count);
        return -EINVAL;
    }
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
    char what[600], group[64];
    int r;

    if (!ref || !ref->name || !ref->kind || strcmp(ref->kind, "NestedCluster") != 0)
        return 0;
    /* A reference without apiVersion or apiGroup matches by kind alone (member.h). */
    if (api_object_ref_group(ref, group, sizeof(group)) < 0 ||
        (group[0] && strcmp(group, API_GROUP_INFRASTRUCTURE) != 0))
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
                                   const cJSON *ncp_json, struct api_errors *errs)
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
            int count;
            obj = member_component(src, ncp_json, part, &count);
            if (count > 1) {
                api_errors_add(errs, NULL,
                               "NestedControlPlane %s/%s: %s: %d %s objects belong to cluster "
                               "%s; name one in %s.name",
                               rc->ns, rc->ncp->meta.name, ref, count, kname, rc->name, ref);
                ret = -EINVAL;
                continue;
            }
            if (!obj && set_missing(p,
                                    "%s: not set, and no %s in namespace %s is owned by this "
                                    "control plane or labelled %s=%s",
                                    ref, kname, rc->ns, MEMBER_CLUSTER_NAME_LABEL, rc->name) < 0)
                return -ENOMEM;
        }
        if (!obj)
            continue;
        render_cluster_what(kind, rc->ns, render_cluster_meta_str(obj, "name"), what, sizeof(what));
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
