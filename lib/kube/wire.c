/* How a request goes on the wire (wire.h). */

#include "lib/kube/wire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/kube/server.h"

static const char *patch_content_type(enum kube_patch_type t)
{
    switch (t) {
    case KUBE_PATCH_JSON:
        return "application/json-patch+json";
    case KUBE_PATCH_APPLY:
        return "application/apply-patch+yaml";
    case KUBE_PATCH_MERGE:
    default:
        return "application/merge-patch+json";
    }
}

static const char *body_namespace(const cJSON *body)
{
    return kube_obj_namespace(body);
}

/* The DeleteOptions body of a DELETE, or NULL when out of memory: never a body without a
 * precondition the request asked for (a DELETE without its uid precondition could remove a
 * same-named successor). */
static cJSON *delete_options(const struct kube_request *req)
{
    cJSON *o = req->body ? cJSON_Duplicate(req->body, 1) : cJSON_CreateObject();
    cJSON *pre;

    if (!o)
        return NULL;
    if (!cJSON_GetObjectItemCaseSensitive(o, "kind") &&
        (!cJSON_AddStringToObject(o, "kind", "DeleteOptions") ||
         !cJSON_AddStringToObject(o, "apiVersion", "v1")))
        goto oom;
    if (req->propagation_policy &&
        !cJSON_AddStringToObject(o, "propagationPolicy", req->propagation_policy))
        goto oom;
    if (req->precondition_uid || req->precondition_rv) {
        if (!(pre = cJSON_AddObjectToObject(o, "preconditions")) ||
            (req->precondition_uid &&
             !cJSON_AddStringToObject(pre, "uid", req->precondition_uid)) ||
            (req->precondition_rv &&
             !cJSON_AddStringToObject(pre, "resourceVersion", req->precondition_rv)))
            goto oom;
    }
    return o;
oom:
    cJSON_Delete(o);
    return NULL;
}

int kube_wire_build(struct kube_wire *w, const struct kube_server *s,
                    const struct kube_request *req)
{
    const struct kube_resource *res = req->resource;
    const char *ns = req->namespace_, *name = req->name;
    bool needs_name = false, collection = false;
    struct buf q, url;
    cJSON *opts = NULL;
    char num[32];
    int r = -ENOMEM;

    *w = (struct kube_wire){0};
    buf_init(&q, 0);
    buf_init(&url, 0);
    switch (req->verb) {
    case KUBE_GET:
        w->method = "GET";
        needs_name = true;
        break;
    case KUBE_LIST:
        w->method = "GET";
        collection = true;
        break;
    case KUBE_CREATE:
        w->method = "POST";
        collection = !req->subresource;
        needs_name = !!req->subresource;
        if (!ns)
            ns = body_namespace(req->body);
        if (!req->body)
            return -EINVAL;
        break;
    case KUBE_UPDATE:
        w->method = "PUT";
        needs_name = true;
        if (!req->body)
            return -EINVAL;
        break;
    case KUBE_PATCH:
        w->method = "PATCH";
        needs_name = true;
        if (!req->body || (req->patch_type == KUBE_PATCH_APPLY && !req->field_manager))
            return -EINVAL;
        break;
    case KUBE_DELETE:
        w->method = "DELETE";
        needs_name = true;
        break;
    default:
        return -EINVAL;
    }
    if (!res || (needs_name && (!name || !name[0])))
        return -EINVAL;
    if (res->namespaced && !collection && (!ns || !ns[0]))
        return -EINVAL;
    if (collection)
        name = NULL;

    if (req->verb == KUBE_LIST) {
        if ((req->label_selector && kube_query_add(&q, "labelSelector", req->label_selector)) ||
            (req->field_selector && kube_query_add(&q, "fieldSelector", req->field_selector)))
            goto out;
        if (req->limit > 0) {
            snprintf(num, sizeof(num), "%ld", req->limit);
            if (kube_query_add(&q, "limit", num) < 0)
                goto out;
        }
        if (req->continue_token && req->continue_token[0] &&
            kube_query_add(&q, "continue", req->continue_token) < 0)
            goto out;
    }
    if ((req->verb == KUBE_LIST || req->verb == KUBE_GET) && req->resource_version &&
        kube_query_add(&q, "resourceVersion", req->resource_version) < 0)
        goto out;
    if (req->verb == KUBE_LIST && req->resource_version && req->resource_version_match &&
        !req->continue_token &&
        kube_query_add(&q, "resourceVersionMatch", req->resource_version_match) < 0)
        goto out;
    if (req->field_manager && req->verb != KUBE_GET && req->verb != KUBE_LIST &&
        req->verb != KUBE_DELETE && kube_query_add(&q, "fieldManager", req->field_manager) < 0)
        goto out;
    if (req->verb == KUBE_PATCH && req->patch_type == KUBE_PATCH_APPLY && req->force &&
        kube_query_add(&q, "force", "true") < 0)
        goto out;
    if (req->dry_run && kube_query_add(&q, "dryRun", "All") < 0)
        goto out;
    if (kube_server_url(s, res, ns, name, req->subresource, &q, &url) < 0)
        goto out;
    w->url = buf_steal(&url);
    if (!w->url)
        goto out;

    if (req->verb == KUBE_DELETE) {
        opts = delete_options(req);
        if (!opts)
            goto out;
        w->body = cJSON_PrintUnformatted(opts);
        w->content_type = "application/json";
    } else if (req->verb == KUBE_CREATE || req->verb == KUBE_UPDATE || req->verb == KUBE_PATCH) {
        w->body = cJSON_PrintUnformatted(req->body);
        w->content_type =
            req->verb == KUBE_PATCH ? patch_content_type(req->patch_type) : "application/json";
    }
    if ((w->content_type && !w->body))
        goto out;
    if (w->body)
        w->body_len = strlen(w->body);
    r = 0;
out:
    if (r < 0)
        kube_wire_done(w);
    cJSON_Delete(opts);
    buf_done(&q);
    buf_done(&url);
    return r;
}

void kube_wire_done(struct kube_wire *w)
{
    free(w->url);
    free(w->body);
    *w = (struct kube_wire){0};
}
