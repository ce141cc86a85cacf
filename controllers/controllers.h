#ifndef NESTCP_CONTROLLERS_CONTROLLERS_H
#define NESTCP_CONTROLLERS_CONTROLLERS_H

/*
 * The registration point of nestcp's reconcilers: `nestcp manager` builds a manager
 * (lib/ctrl/manager.h, made of nestcp's caches by caches_manager_opts()) and calls
 * controllers_register() once, before manager_start(), to add every controller with
 * caches_add_reconciler() (and any metrics families they export, through manager_metrics()).
 */

#include <stdbool.h>
#include <stdint.h>

#include "controllers/brake.h"
#include "lib/util/err.h"

struct controllers;
struct ev_loop;
struct manager;

struct controllers_opts {
    const char *templates_dir;     /* the package catalog (lib/render) */
    int64_t cert_renew_before;     /* seconds: renew a certificate with less validity left */
    int64_t cert_validity;         /* seconds: leaves' validity; 0: each validityDays */
    bool allow_privileged;         /* patches may pass the gate's privilege rules (admin only) */
    const char *manager_namespace; /* the manager's pods' namespace (NetworkPolicies); NULL:
                                      RENDER_CLUSTER_MANAGER_NAMESPACE */
    struct ev_loop *loop;          /* the manager's loop, for RSA keys made off it; NULL: inline */
    /* The admission policy's parameters ConfigMap the manager keeps equal to the catalog
     * (controllers/admissionparams.h); NULL name: none. */
    const char *admission_params_namespace, *admission_params_name;
    /* How many control planes may roll at once (controllers/brake.h); a value of 0: no
     * limit. */
    struct brake_limit max_rollouts;
};

/* Adds nestcp's controllers to m; opts and its strings are borrowed for m's lifetime. What
 * the controllers share (the package catalog, the key pool) is handed back in *ret_ctl, to be
 * freed with controllers_free() after manager_free(). Returns 0 or a negative code with
 * detail in e. */
int controllers_register(struct manager *m, const struct controllers_opts *opts,
                         struct controllers **ret_ctl, struct err *e);

/* Frees what controllers_register() made. Accepts NULL. */
void controllers_free(struct controllers *ctl);

#endif
