/* The component's status (controllers/comp.h): replicas, version, etcd's addresses, the API
 * server's Service, and the Ready and Progressing conditions, from the live StatefulSet and
 * the control plane's target. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/conditions.h"
#include "controllers/comp.h"
#include "controllers/status.h"
#include "lib/kube/store.h"

static int set_addresses(struct comp *x, const struct render_cluster *rc)
{
    const char *cname = render_cluster_name(rc);
    int n = x->c->spec.replicas > 0 ? x->c->spec.replicas : 1;
    struct api_etcd_address *a;
    char host[RENDER_CLUSTER_NAME_MAX * 3];

    if (x->part != RENDER_PART_ETCD)
        return 0;
    a = calloc((size_t)n, sizeof(*a));
    if (!a)
        return -ENOMEM;
    for (int i = 0; i < n; i++) {
        snprintf(host, sizeof(host), "%s-etcd-%d.%s-etcd.%s.svc", cname, i, cname, x->ns);
        a[i].hostname = strdup(host);
        a[i].port = 2379;
        if (!a[i].hostname) { /* the status keeps its old addresses */
            while (i-- > 0)
                free(a[i].hostname);
            free(a);
            return -ENOMEM;
        }
    }
    for (size_t i = 0; i < x->st->n_addresses; i++) {
        free(x->st->addresses[i].ip);
        free(x->st->addresses[i].hostname);
    }
    free(x->st->addresses);
    x->st->addresses = a;
    x->st->n_addresses = (size_t)n;
    return 0;
}

static int set_service_ref(struct comp *x, const struct render_cluster *rc)
{
    struct api_object_ref *ref = &x->st->apiserver_service;
    char name[RENDER_CLUSTER_NAME_MAX];
    const cJSON *svc;

    if (x->part != RENDER_PART_APISERVER)
        return 0;
    snprintf(name, sizeof(name), "%s-apiserver", render_cluster_name(rc));
    svc = kube_store_get(x->view->services, x->ns, name);
    api_object_ref_done(ref);
    if (!svc)
        return 0;
    ref->api_version = strdup("v1");
    ref->kind = strdup("Service");
    ref->name = strdup(name);
    ref->namespace = strdup(x->ns);
    ref->uid = kube_obj_uid(svc) ? strdup(kube_obj_uid(svc)) : NULL;
    return ref->api_version && ref->kind && ref->name && ref->namespace ? 0 : -ENOMEM;
}

/* Replicas, version, Ready and Progressing from the live StatefulSet and the target. */
int comp_observe(struct comp *x, const struct render_cluster *rc, const char *hash)
{
    char name[RENDER_CLUSTER_NAME_MAX], msg[512];
    struct status_sts ss;
    int r;

    snprintf(name, sizeof(name), "%s-%s", render_cluster_name(rc), render_part_short(x->part));
    status_statefulset(kube_store_get(x->view->statefulsets, x->ns, name), x->target_hash, &ss);
    x->st->replicas = ss.exists ? ss.status_replicas : 0;
    x->st->ready_replicas = ss.ready;
    x->st->updated_replicas = ss.updated;
    x->st->healthy = ss.exists && ss.ready >= ss.replicas && ss.replicas > 0;
    if (ss.complete && x->target_version) {
        free(x->st->version);
        if (!(x->st->version = strdup(x->target_version)))
            return -ENOMEM;
    }
    if ((r = set_addresses(x, rc)) < 0 || (r = set_service_ref(x, rc)) < 0)
        return r;
    if (!x->target_hash) {
        snprintf(msg, sizeof(msg),
                 "waiting for NestedControlPlane %s to roll it out (components start in the "
                 "order etcd, kube-apiserver, kube-controller-manager)",
                 kube_obj_name(x->ncp));
        r = comp_not_ready(x, STATUS_SEVERITY_INFO, "WaitingForRollout", "%s", msg);
    } else if (x->restoring[0]) {
        r = comp_not_ready(x, STATUS_SEVERITY_INFO, "Restoring", "%s", x->restoring);
    } else if (ss.complete) {
        snprintf(msg, sizeof(msg), "%d/%d replicas ready", ss.ready, ss.replicas);
        r = comp_cond(x, "Ready", API_CONDITION_TRUE, NULL, "Ready", msg);
    } else if (!ss.exists) {
        r = comp_not_ready(x, STATUS_SEVERITY_INFO, "Creating", "StatefulSet %s is being created",
                           name);
    } else if (x->rolled_back && x->part != RENDER_PART_ETCD) {
        snprintf(msg, sizeof(msg), "%d/%d replicas ready at the last good revision", ss.ready,
                 ss.replicas);
        r = ss.ready >= ss.replicas
                ? comp_cond(x, "Ready", API_CONDITION_TRUE, NULL, "RolledBack", msg)
                : comp_not_ready(x, STATUS_SEVERITY_INFO, "RollingBack", "%s", msg);
    } else {
        r = comp_not_ready(x, STATUS_SEVERITY_INFO, "RollingOut", "%d/%d updated, %d/%d ready",
                           ss.updated, ss.replicas, ss.ready, ss.replicas);
    }
    if (r < 0)
        return r;
    if (ss.complete && hash && strcmp(hash, x->target_hash) == 0)
        return comp_cond(x, "Progressing", API_CONDITION_FALSE, NULL, "RolledOut",
                         "the StatefulSet runs the rendered configuration");
    if (!x->target_hash || (hash && strcmp(hash, x->target_hash) != 0))
        return comp_cond(
            x, "Progressing", API_CONDITION_TRUE, NULL, "WaitingForRollout",
            "a changed configuration waits for its turn in the control plane's rollout");
    if (x->rolled_back && x->part != RENDER_PART_ETCD) {
        snprintf(msg, sizeof(msg), "the roll to this configuration failed and is held back: %s",
                 x->rolled_back);
        return comp_cond(x, "Progressing", API_CONDITION_FALSE, STATUS_SEVERITY_WARNING,
                         "RolledBack", msg);
    }
    return comp_cond(x, "Progressing", API_CONDITION_TRUE, NULL, "RollingOut",
                     "the StatefulSet is rolling out");
}
