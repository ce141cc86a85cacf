#include "cmd/nestcp/mgmt.h"

#include <errno.h>
#include <signal.h>
#include <string.h>

#include <ev.h>

#include "lib/kube/client.h"
#include "lib/kube/config.h"

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
            err_set(e, r, "no kubeconfig: give --kubeconfig, set $KUBECONFIG, or create "
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
    kube_client_free(m->client);
    kube_config_free(m->cfg);
    if (m->loop)
        ev_loop_destroy(m->loop);
    memset(m, 0, sizeof(*m));
}

int mgmt_get(struct mgmt *m, const struct kube_resource *res, const char *ns, const char *name,
             cJSON **ret_obj, struct err *e)
{
    struct kube_request req = {
        .verb = KUBE_GET, .resource = res, .namespace_ = res->namespaced ? ns : NULL, .name = name};

    return kube_request_sync(m->client, &req, ret_obj, e);
}

int mgmt_list(struct mgmt *m, const struct kube_resource *res, const char *ns,
              const char *label_selector, cJSON **ret_list, struct err *e)
{
    struct kube_request req = {.verb = KUBE_LIST,
                               .resource = res,
                               .namespace_ = res->namespaced ? ns : NULL,
                               .label_selector = label_selector};

    return kube_request_sync(m->client, &req, ret_list, e);
}
