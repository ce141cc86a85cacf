#include "cmd/nestcp/mgmt.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <ev.h>

#include "api/kinds.h"
#include "controllers/caches.h"
#include "lib/kube/client.h"
#include "lib/kube/config.h"
#include "lib/pki/secret.h"

int mgmt_open(struct mgmt *m, const char *path, const char *ns, struct err *e)
{
    int r;

    memset(m, 0, sizeof(*m));
    /* libcurl writes on connections a peer may have closed (see lib/kube/client.h). */
    signal(SIGPIPE, SIG_IGN);
    m->loop = ev_loop_new(EVFLAG_AUTO);
    if (!m->loop)
        return err_set(e, -ENOMEM, "cannot create the event loop");
    r = kube_config_load(path && path[0] ? path : NULL, &m->cfg, e);
    if (r < 0) {
        if (r == -ENOENT && !(path && path[0]) && !e->msg[0])
            err_set(e, r,
                    "no kubeconfig: give --kubeconfig, set $KUBECONFIG, or create "
                    "~/.kube/config");
        return r;
    }
    r = kube_client_new(m->loop, m->cfg, &m->client, e);
    if (r < 0)
        return err_prefix(e, "%s: ", m->cfg->origin);
    kube_client_set_timeout(m->client, MGMT_REQUEST_TIMEOUT_MS);
    m->namespace_ = ns && ns[0] ? ns : kube_client_namespace(m->client);
    return 0;
}

void mgmt_close(struct mgmt *m)
{
    free(m->clusters);
    kube_client_free(m->client);
    kube_config_free(m->cfg);
    if (m->loop)
        ev_loop_destroy(m->loop);
    memset(m, 0, sizeof(*m));
}

int mgmt_resource(struct mgmt *m, const struct kube_resource *res, const char *ns,
                  const struct kube_resource **ret_res, struct err *e)
{
    struct kube_request req = {.verb = KUBE_LIST, .namespace_ = ns, .limit = 1};
    int r = -ENOENT;

    if (strcmp(res->group, CAPI_CLUSTERS.group) != 0 ||
        strcmp(res->resource, CAPI_CLUSTERS.resource) != 0) {
        *ret_res = res;
        return 0;
    }
    if (m->clusters_found == 0) {
        if (!m->clusters && !(m->clusters = malloc(sizeof(*m->clusters))))
            return err_set(e, -ENOMEM, "out of memory");
        *m->clusters = CAPI_CLUSTERS;
        req.resource = m->clusters;
        for (const char *const *v = api_capi_cluster_versions; *v && r == -ENOENT; v++) {
            m->clusters->version = *v;
            r = kube_request_sync(m->client, &req, NULL, e);
        }
        if (r < 0 && r != -ENOENT)
            return r;
        m->clusters_found = r == 0 ? 1 : -ENOENT;
    }
    if (m->clusters_found < 0)
        return err_set(e, -ENOENT, "the server serves no version of %s.%s (%s)",
                       CAPI_CLUSTERS.resource, CAPI_CLUSTERS.group,
                       "Cluster API's CRD is not installed");
    *ret_res = m->clusters;
    return 0;
}

int mgmt_get(struct mgmt *m, const struct kube_resource *res, const char *ns, const char *name,
             cJSON **ret_obj, struct err *e)
{
    struct kube_request req = {
        .verb = KUBE_GET, .namespace_ = res->namespaced ? ns : NULL, .name = name};
    int r = mgmt_resource(m, res, req.namespace_, &req.resource, e);

    return r < 0 ? r : kube_request_sync(m->client, &req, ret_obj, e);
}

int mgmt_list(struct mgmt *m, const struct kube_resource *res, const char *ns,
              const char *label_selector, cJSON **ret_list, struct err *e)
{
    struct kube_request req = {.verb = KUBE_LIST,
                               .namespace_ = res->namespaced ? ns : NULL,
                               .label_selector = label_selector};
    int r = mgmt_resource(m, res, req.namespace_, &req.resource, e);

    return r < 0 ? r : kube_request_sync(m->client, &req, ret_list, e);
}

static const char *ref_field(const cJSON *obj, const char *a, const char *b, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, a), b), key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

int mgmt_cluster_of(struct mgmt *m, const cJSON *ncp, cJSON **ret_cluster, struct err *e)
{
    const char *ns = kube_obj_namespace(ncp), *name = kube_obj_name(ncp);
    const cJSON *refs = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(ncp, "metadata"), "ownerReferences");
    const cJSON *ref, *item;
    cJSON *list = NULL, *found = NULL;
    int r;

    cJSON_ArrayForEach(ref, refs) {
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(ref, "kind");
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(ref, "name");
        if (cJSON_IsString(kind) && strcmp(kind->valuestring, "Cluster") == 0 &&
            cJSON_IsString(n)) {
            r = mgmt_get(m, &CAPI_CLUSTERS, ns, n->valuestring, &found, e);
            if (r < 0 && r != -ENOENT)
                return r;
            *ret_cluster = found;
            return 0;
        }
    }
    r = mgmt_list(m, &CAPI_CLUSTERS, ns, NULL, &list, e);
    if (r == -ENOENT) {
        *ret_cluster = NULL;
        return 0;
    }
    if (r < 0)
        return r;
    cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(list, "items")) {
        const char *kind = ref_field(item, "spec", "controlPlaneRef", "kind");
        const char *n = ref_field(item, "spec", "controlPlaneRef", "name");
        if (kind && n && name && strcmp(kind, "NestedControlPlane") == 0 && strcmp(n, name) == 0) {
            found = cJSON_DetachItemViaPointer(cJSON_GetObjectItemCaseSensitive(list, "items"),
                                               (cJSON *)item);
            break;
        }
    }
    cJSON_Delete(list);
    *ret_cluster = found;
    return 0;
}

const char *mgmt_cluster_name(const cJSON *ncp, const cJSON *cluster)
{
    const char *label = kube_obj_label(ncp, PKI_CLUSTER_NAME_LABEL);

    if (cluster && kube_obj_name(cluster))
        return kube_obj_name(cluster);
    return label && label[0] ? label : kube_obj_name(ncp);
}
