#include "api/defaults.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/version.h"

static int set_str(char **dst, const char *src)
{
    char *d = strdup(src);

    if (!d)
        return -ENOMEM;
    free(*dst);
    *dst = d;
    return 0;
}

static int copy_list(struct api_strlist *dst, const struct api_strlist *src)
{
    for (size_t i = 0; i < src->n; i++)
        if (api_strlist_add(dst, src->items[i]) < 0)
            return -ENOMEM;
    return 0;
}

int api_control_plane_default(struct api_control_plane *ncp, const struct api_capi_cluster *cl,
                              const struct api_catalog *cat)
{
    struct api_control_plane_spec *s = &ncp->spec;
    struct api_cluster_network *net = &s->cluster_network;
    const struct api_cluster_network *cnet = cl ? &cl->cluster_network : NULL;
    struct api_certificates *cert = &s->certificates;

    if (!s->version && cat && cat->default_version) {
        const char *v = cat->default_version(cat->ctx);
        if (v && set_str(&s->version, v) < 0)
            return -ENOMEM;
    }
    if (!s->control_plane_endpoint.host) {
        if (cl && cl->control_plane_endpoint.host && *cl->control_plane_endpoint.host &&
            cl->control_plane_endpoint.port > 0) {
            if (set_str(&s->control_plane_endpoint.host, cl->control_plane_endpoint.host) < 0)
                return -ENOMEM;
            s->control_plane_endpoint.port = cl->control_plane_endpoint.port;
        } else {
            const char *cluster =
                cl && cl->meta.name ? cl->meta.name : api_meta_cluster_name(&ncp->meta);
            char host[512];
            snprintf(host, sizeof(host), "%s-apiserver.%s.svc", cluster ? cluster : "",
                     ncp->meta.namespace ? ncp->meta.namespace : "default");
            if (set_str(&s->control_plane_endpoint.host, host) < 0)
                return -ENOMEM;
            s->control_plane_endpoint.port = API_DEFAULT_APISERVER_PORT;
        }
    }
    if (net->services.n == 0) {
        if (cnet && cnet->services.n > 0) {
            if (copy_list(&net->services, &cnet->services) < 0)
                return -ENOMEM;
        } else if (api_strlist_add(&net->services, API_DEFAULT_SERVICE_CIDR) < 0) {
            return -ENOMEM;
        }
    }
    if (net->pods.n == 0 && cnet && copy_list(&net->pods, &cnet->pods) < 0)
        return -ENOMEM;
    if (!net->service_domain && set_str(&net->service_domain, cnet && cnet->service_domain
                                                                  ? cnet->service_domain
                                                                  : API_DEFAULT_SERVICE_DOMAIN) < 0)
        return -ENOMEM;
    if (cert->validity_days == 0)
        cert->validity_days = 365;
    if (cert->ca_validity_days == 0)
        cert->ca_validity_days = 3650;
    if (cert->renew_before_days == 0)
        cert->renew_before_days = 30;
    return 0;
}

int api_component_default(struct api_component *c, const struct api_control_plane *ncp,
                          const struct api_catalog *cat)
{
    char canon[API_VERSION_MAX_LEN];
    const char *k8s = ncp ? ncp->spec.version : NULL;

    if (c->spec.replicas == 0)
        c->spec.replicas = 1;
    if (c->spec.version || !k8s || api_version_canonical(k8s, canon, sizeof(canon)) < 0)
        return 0;
    if (c->kind == API_KIND_NESTED_ETCD) {
        const char *etcd =
            cat && cat->etcd_version_for ? cat->etcd_version_for(cat->ctx, canon) : NULL;
        if (etcd && set_str(&c->spec.version, etcd) < 0)
            return -ENOMEM;
        return 0;
    }
    return set_str(&c->spec.version, canon);
}

int api_nested_cluster_default(struct api_nested_cluster *nc, const struct api_capi_cluster *cl)
{
    if (nc->control_plane_endpoint.host || !cl || !cl->control_plane_endpoint.host)
        return 0;
    if (set_str(&nc->control_plane_endpoint.host, cl->control_plane_endpoint.host) < 0)
        return -ENOMEM;
    nc->control_plane_endpoint.port = cl->control_plane_endpoint.port;
    return 0;
}

int api_component_effective_gates(const struct api_component *c,
                                  const struct api_control_plane *ncp, struct api_gates *ret)
{
    const struct api_gates *g;

    for (int pass = 0; pass < 2; pass++) {
        g = pass == 0 ? (ncp ? &ncp->spec.feature_gates : NULL) : &c->spec.feature_gates;
        for (size_t i = 0; g && i < g->n; i++) {
            if (api_gates_set(ret, g->items[i].name, g->items[i].enabled) < 0) {
                api_gates_done(ret);
                return -ENOMEM;
            }
        }
    }
    return 0;
}
