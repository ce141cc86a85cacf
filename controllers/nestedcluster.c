/*
 * NestedCluster: the infrastructure side of the Cluster API contract. It owns nothing; it
 * reports `ready` (and `initialization.provisioned`) once its control plane is ready and
 * initialized, and keeps spec.controlPlaneEndpoint consistent with the control plane's: an
 * empty one is filled in, a different one is reported.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/conditions.h"
#include "api/status.h"
#include "api/types.h"
#include "api/validate.h"
#include "controllers/lookup.h"
#include "controllers/nested.h"
#include "controllers/status.h"
#include "lib/kube/store.h"

static const cJSON *get(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* The host and port of obj's spec.controlPlaneEndpoint; false when not set. */
static bool endpoint_of(const cJSON *obj, const char **ret_host, int *ret_port)
{
    const cJSON *ep = get(get(obj, "spec"), "controlPlaneEndpoint");
    const cJSON *host = get(ep, "host"), *port = get(ep, "port");

    if (!cJSON_IsString(host) || !host->valuestring[0] || !cJSON_IsNumber(port) ||
        port->valueint <= 0)
        return false;
    *ret_host = host->valuestring;
    *ret_port = port->valueint;
    return true;
}

/* The message of the control plane's Ready condition, or "". */
static const char *ready_message(const cJSON *ncp)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, get(get(ncp, "status"), "conditions")) {
        const cJSON *type = get(c, "type"), *msg = get(c, "message");
        if (cJSON_IsString(type) && strcmp(type->valuestring, "Ready") == 0)
            return cJSON_IsString(msg) ? msg->valuestring : "";
    }
    return "";
}

static int plan_endpoint(struct plan *p, const cJSON *nc, const char *host, int port)
{
    cJSON *patch = cJSON_CreateObject(), *ep;

    ep = cJSON_AddObjectToObject(cJSON_AddObjectToObject(patch, "spec"), "controlPlaneEndpoint");
    if (!ep || !cJSON_AddStringToObject(ep, "host", host) ||
        !cJSON_AddNumberToObject(ep, "port", port)) {
        cJSON_Delete(patch);
        return -ENOMEM;
    }
    return plan_merge_patch(p, &NESTCP_NESTED_CLUSTERS, kube_obj_namespace(nc), kube_obj_name(nc),
                            NULL, patch, "NestedCluster %s/%s: controlPlaneEndpoint %s:%d",
                            kube_obj_namespace(nc), kube_obj_name(nc), host, port);
}

/* Sets the conditions and readiness of st from the control plane, and plans the endpoint. */
static int observe(const struct cache_view *view, const cJSON *obj,
                   const struct api_nested_cluster *nc, struct api_nested_cluster_status *st,
                   struct plan *p)
{
    int64_t gen = nc->meta.generation;
    const cJSON *ncp = lookup_control_plane_of_nested_cluster(view, obj);
    const cJSON *cl = lookup_capi_cluster(view, obj, API_KIND_NESTED_CLUSTER, NULL);
    const char *host = NULL, *cl_host = NULL;
    int port = 0, cl_port = 0, r;
    bool ncp_ready;

    r = status_condition(&st->conditions, "Paused", API_CONDITION_FALSE, NULL, "NotPaused", gen,
                         view->now, "%s", "");
    if (r < 0)
        return r;
    if (!ncp) {
        st->ready = false;
        r = status_condition(&st->conditions, "Ready", API_CONDITION_FALSE, STATUS_SEVERITY_INFO,
                             "WaitingForControlPlane", gen, view->now,
                             "no NestedControlPlane of cluster %s in namespace %s",
                             lookup_cluster_name(view, obj, API_KIND_NESTED_CLUSTER),
                             nc->meta.namespace);
        return r < 0 ? r : 0;
    }

    /* The endpoint: the control plane's, else the Cluster's. */
    if (!endpoint_of(ncp, &host, &port) && cl && endpoint_of(cl, &cl_host, &cl_port)) {
        host = cl_host;
        port = cl_port;
    }
    if (host && !nc->control_plane_endpoint.host) {
        r = plan_endpoint(p, obj, host, port);
    } else if (host && (strcmp(host, nc->control_plane_endpoint.host) != 0 ||
                        port != nc->control_plane_endpoint.port)) {
        r = status_condition(&st->conditions, "EndpointConsistent", API_CONDITION_FALSE,
                             STATUS_SEVERITY_WARNING, "EndpointMismatch", gen, view->now,
                             "spec.controlPlaneEndpoint %s:%d differs from %s:%d, the endpoint "
                             "of NestedControlPlane %s",
                             nc->control_plane_endpoint.host, nc->control_plane_endpoint.port, host,
                             port, kube_obj_name(ncp));
        if (r > 0 && plan_event(p, KUBE_EVENT_WARNING, "EndpointMismatch",
                                "spec.controlPlaneEndpoint %s:%d differs from the control "
                                "plane's %s:%d",
                                nc->control_plane_endpoint.host, nc->control_plane_endpoint.port,
                                host, port) < 0)
            r = -ENOMEM;
    } else {
        r = api_conditions_remove(&st->conditions, "EndpointConsistent") >= 0 ? 0 : -ENOMEM;
    }
    if (r < 0)
        return r;

    ncp_ready = cJSON_IsTrue(get(get(ncp, "status"), "ready")) &&
                cJSON_IsTrue(get(get(ncp, "status"), "initialized"));
    st->ready = ncp_ready;
    st->provisioned = st->provisioned || ncp_ready;
    if (ncp_ready)
        r = status_condition(&st->conditions, "Ready", API_CONDITION_TRUE, NULL,
                             "ControlPlaneReady", gen, view->now, "NestedControlPlane %s is ready",
                             kube_obj_name(ncp));
    else
        r = status_condition(&st->conditions, "Ready", API_CONDITION_FALSE, STATUS_SEVERITY_INFO,
                             "ControlPlaneNotReady", gen, view->now, "NestedControlPlane %s: %s",
                             kube_obj_name(ncp), ready_message(ncp));
    return r < 0 ? r : 0;
}

/* The errors of a parse or validation as one message. */
static void errors_message(const struct api_errors *errs, struct err *out)
{
    err_clear(out);
    api_errors_to_err(errs, NULL, out);
}

int nestedcluster_reconcile(void *ctx, const struct cache_view *view, const char *ns,
                            const char *name, struct plan *plan, struct err *e)
{
    const cJSON *obj = kube_store_get(view->nested_clusters, ns, name), *cl;
    struct api_errors errs = API_ERRORS_INIT;
    struct api_nested_cluster *nc = NULL;
    struct api_nested_cluster_status *st;
    struct err msg;
    cJSON *old = NULL;
    int r;

    if (!obj || status_deleting(obj))
        return 0;
    r = api_nested_cluster_from_json(obj, &nc, &errs);
    if (r == -EINVAL) {
        errors_message(&errs, &msg);
        r = status_plan_invalid(plan, &NESTCP_NESTED_CLUSTERS, obj, "InvalidSpec", msg.msg, NULL,
                                view->now);
        goto out;
    }
    if (r < 0)
        goto out;
    old = api_nested_cluster_status_to_json(&nc->status);
    if (!old) {
        r = -ENOMEM;
        goto out;
    }
    st = &nc->status;
    st->observed_generation = nc->meta.generation;
    cl = lookup_capi_cluster(view, obj, API_KIND_NESTED_CLUSTER, NULL);
    r = api_nested_cluster_validate(nc, &errs);
    if (r == -EINVAL) {
        errors_message(&errs, &msg);
        r = status_condition(&st->conditions, "Ready", API_CONDITION_FALSE, STATUS_SEVERITY_ERROR,
                             "InvalidSpec", nc->meta.generation, view->now, "%s", msg.msg);
        st->ready = false;
        if (r > 0 && plan_event(plan, KUBE_EVENT_WARNING, "InvalidSpec", "%s", msg.msg) < 0)
            r = -ENOMEM;
    } else if (r < 0) {
        goto out;
    } else if (status_paused(obj, cl))
        r = status_condition(&st->conditions, "Paused", API_CONDITION_TRUE, NULL, "Paused",
                             nc->meta.generation, view->now,
                             "reconciliation is paused (annotation cluster.x-k8s.io/paused or "
                             "Cluster spec.paused)");
    else
        r = observe(view, obj, nc, st, plan);
    if (r >= 0)
        r = status_plan_write(plan, &NESTCP_NESTED_CLUSTERS, obj,
                              api_nested_cluster_status_to_json(st), old);
out:
    if (r > 0)
        r = 0;
    if (r == -ENOMEM)
        err_set(e, r, "NestedCluster %s/%s: out of memory", ns, name);
    cJSON_Delete(old);
    api_nested_cluster_free(nc);
    api_errors_done(&errs);
    return r;
}

static void enqueue_nested_cluster(const struct cache_view *view, const cJSON *ncp,
                                   enqueue_fn enqueue, void *q)
{
    const cJSON *nc = lookup_nested_cluster_of_control_plane(view, ncp);

    if (nc)
        enqueue(q, kube_obj_namespace(nc), kube_obj_name(nc));
}

void nestedcluster_map(void *ctx, const struct cache_view *view, const struct kube_resource *res,
                       const cJSON *obj, enqueue_fn enqueue, void *q)
{
    const char *ns = kube_obj_namespace(obj);
    const cJSON *spec = get(obj, "spec"), *ref;

    if (res == &NESTCP_NESTED_CLUSTERS ||
        (strcmp(res->group, NESTCP_NESTED_CLUSTERS.group) == 0 &&
         strcmp(res->resource, NESTCP_NESTED_CLUSTERS.resource) == 0)) {
        enqueue(q, ns, kube_obj_name(obj));
    } else if (strcmp(res->resource, NESTCP_CONTROL_PLANES.resource) == 0 &&
               strcmp(res->group, NESTCP_CONTROL_PLANES.group) == 0) {
        enqueue_nested_cluster(view, obj, enqueue, q);
    } else if (strcmp(res->resource, CAPI_CLUSTERS.resource) == 0 &&
               strcmp(res->group, CAPI_CLUSTERS.group) == 0) {
        ref = get(spec, "infrastructureRef");
        if (cJSON_IsString(get(ref, "name")))
            enqueue(q, ns, get(ref, "name")->valuestring);
    }
}

void nestedcluster_def(struct nested_ctx *ctx, struct reconciler_def *ret_def)
{
    *ret_def = (struct reconciler_def){
        .name = "nestedcluster",
        .primary = &NESTCP_NESTED_CLUSTERS,
        .reconcile = nestedcluster_reconcile,
        .map = nestedcluster_map,
        .ctx = ctx,
    };
}
