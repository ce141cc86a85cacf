#include "test/nodeagent/hosts.h"

#include <string.h>

#include "test/nodeagent/podobj.h"

static bool same_ns(const struct hosts_pod *a, const char *ns)
{
    return a->namespace_ && ns && strcmp(a->namespace_, ns) == 0;
}

/* The endpoint a Service name resolves to: the ready selected pod with the smallest name, or,
 * with publishNotReadyAddresses, any selected pod with an IP. */
static const struct hosts_pod *service_endpoint(const cJSON *svc, const struct hosts_pod *pods,
                                                size_t npods)
{
    const char *ns = podobj_str(svc, "metadata", "namespace", NULL);
    const cJSON *selector = podobj_get(svc, "spec", "selector", NULL);
    bool not_ready_ok =
        podobj_bool(podobj_get(svc, "spec", NULL), "publishNotReadyAddresses", false);
    const struct hosts_pod *best = NULL;

    for (size_t i = 0; i < npods; i++) {
        const struct hosts_pod *p = &pods[i];

        if (!p->ip || !same_ns(p, ns) || (!p->ready && !not_ready_ok) ||
            !podobj_selector_matches(selector, p->labels))
            continue;
        if (!best || (p->ready && !best->ready) ||
            (p->ready == best->ready && strcmp(p->name, best->name) < 0))
            best = p;
    }
    return best;
}

static int pod_line(const struct hosts_pod *self, const struct hosts_pod *p, const char *domain,
                    struct buf *out)
{
    const char *ns = p->namespace_;
    int r;

    if (!p->ip || !p->subdomain || !p->hostname || !ns)
        return 0;
    r = buf_printf(out, "%s\t%s.%s.%s.svc.%s %s.%s.%s.svc %s.%s.%s", p->ip, p->hostname,
                   p->subdomain, ns, domain, p->hostname, p->subdomain, ns, p->hostname,
                   p->subdomain, ns);
    if (r == 0 && same_ns(self, ns))
        r = buf_printf(out, " %s.%s", p->hostname, p->subdomain);
    if (r == 0 && p == self)
        r = buf_printf(out, " %s", p->hostname);
    return r ? r : buf_puts(out, "\n");
}

int hosts_render(const struct hosts_pod *self, const struct hosts_pod *pods, size_t npods,
                 const cJSON *services, const char *domain, struct buf *out)
{
    const cJSON *svc;
    int r;

    r = buf_puts(out, "# Kubernetes-managed hosts file (nestcp-nodeagent).\n"
                      "127.0.0.1\tlocalhost\n"
                      "::1\tlocalhost ip6-localhost ip6-loopback\n");
    if (r < 0)
        return r;
    if (self->ip && !self->subdomain)
        r = buf_printf(out, "%s\t%s\n", self->ip, self->hostname);
    else if (self->ip)
        r = pod_line(self, self, domain, out);
    for (size_t i = 0; r == 0 && i < npods; i++) {
        const struct hosts_pod *p = &pods[i];

        if (same_ns(p, self->namespace_) && p->name && self->name &&
            strcmp(p->name, self->name) == 0)
            continue; /* self comes first, above */
        r = pod_line(self, p, domain, out);
    }
    cJSON_ArrayForEach(svc, services) {
        const char *name = podobj_str(svc, "metadata", "name", NULL);
        const char *ns = podobj_str(svc, "metadata", "namespace", NULL);
        const struct hosts_pod *ep;

        if (r < 0)
            break;
        if (!name || !ns || !(ep = service_endpoint(svc, pods, npods)))
            continue;
        r = buf_printf(out, "%s\t%s.%s.svc.%s %s.%s.svc %s.%s", ep->ip, name, ns, domain, name, ns,
                       name, ns);
        if (r == 0 && same_ns(self, ns))
            r = buf_printf(out, " %s", name);
        if (r == 0)
            r = buf_puts(out, "\n");
    }
    return r;
}
