#include "controllers/controllers.h"

#include <errno.h>
#include <stdlib.h>

#include "controllers/admissionparams.h"
#include "controllers/caches.h"
#include "controllers/clustermetrics.h"
#include "controllers/keypool.h"
#include "controllers/nested.h"
#include "lib/render/catalog.h"

/*
 * Where the five reconcilers (nestedcluster, nestedcontrolplane, nestedetcd, nestedapiserver,
 * nestedcontrollermanager) are added to the manager, with what they share: the package
 * catalog, loaded once, and the pool that makes RSA keys off the event loop; and the metrics
 * about the managed clusters (controllers/clustermetrics.h).
 */

struct controllers {
    /* The manager borrows them: they live as long as the controllers. */
    struct reconciler_def defs[2 + RENDER_PART__COUNT];
    struct reconciler_def admission_def;
    struct render_catalog *cat;
    struct keypool *keys;
    struct nested_ctx ctx;
    struct clustermetrics *metrics;
    struct admissionparams admission;
};

void controllers_free(struct controllers *ctl)
{
    if (!ctl)
        return;
    clustermetrics_free(ctl->metrics);
    admissionparams_done(&ctl->admission);
    nested_ctx_done(&ctl->ctx);
    keypool_free(ctl->keys);
    render_catalog_free(ctl->cat);
    free(ctl);
}

int controllers_register(struct manager *m, const struct controllers_opts *opts,
                         struct controllers **ret_ctl, struct err *e)
{
    struct controllers *ctl = calloc(1, sizeof(*ctl));
    struct reconciler_def *defs;
    size_t n_defs = sizeof(ctl->defs) / sizeof(ctl->defs[0]);
    int r;

    if (!ctl)
        return err_set(e, -ENOMEM, "out of memory");
    defs = ctl->defs;
    if ((r = render_catalog_open(opts->templates_dir, &ctl->cat, e)) < 0) {
        err_prefix(e, "--templates %s: ", opts->templates_dir);
        goto fail;
    }
    if ((r = keypool_new(opts->loop, &ctl->keys, e)) < 0)
        goto fail;
    nested_ctx_init(&ctl->ctx, ctl->cat, ctl->keys, opts->cert_renew_before);
    ctl->ctx.allow_privileged = opts->allow_privileged;
    ctl->ctx.cert_validity = opts->cert_validity;
    ctl->ctx.manager_namespace = opts->manager_namespace;
    ctl->ctx.max_rollouts = opts->max_rollouts;
    nestedcontrolplane_def(&ctl->ctx, &defs[0]);
    for (int i = 0; i < RENDER_PART__COUNT; i++)
        nestedcomponent_def(&ctl->ctx, (enum render_part)i, &defs[1 + i]);
    nestedcluster_def(&ctl->ctx, &defs[1 + RENDER_PART__COUNT]);
    for (size_t i = 0; i < n_defs; i++)
        if ((r = caches_add_reconciler(m, &defs[i], e)) < 0)
            goto fail;
    if (opts->admission_params_name) {
        if ((r = admissionparams_init(&ctl->admission, ctl->cat, opts->admission_params_namespace,
                                      opts->admission_params_name, e)) < 0)
            goto fail;
        admissionparams_def(&ctl->admission, &ctl->admission_def);
        if ((r = caches_add_reconciler(m, &ctl->admission_def, e)) < 0)
            goto fail;
    }
    /* Last, so that a failure never leaves the manager's registry a collector to freed
     * memory. */
    if ((r = clustermetrics_new(manager_metrics(m), &ctl->metrics)) < 0 ||
        (r = clustermetrics_attach(ctl->metrics, m)) < 0) {
        err_set(e, r, "cluster metrics: %s", err_code_name(r));
        goto fail;
    }
    *ret_ctl = ctl;
    return 0;
fail:
    controllers_free(ctl);
    return r;
}
