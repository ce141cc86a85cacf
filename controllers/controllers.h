#ifndef NESTCP_CONTROLLERS_CONTROLLERS_H
#define NESTCP_CONTROLLERS_CONTROLLERS_H

/*
 * The registration point of nestcp's reconcilers: `nestcp manager` builds a manager
 * (controllers/runtime.h) and calls controllers_register() once, before manager_start(), to
 * add every controller with manager_add_controller() (and any metrics families they export,
 * through manager_metrics()).
 */

#include <stdint.h>

#include "lib/util/err.h"

struct manager;

struct controllers_opts {
    const char *templates_dir; /* the package catalog (lib/render) */
    int64_t cert_renew_before; /* seconds: renew a certificate with less validity left */
};

/* Adds nestcp's controllers to m; opts and its strings are borrowed for m's lifetime.
 * Returns 0 or a negative code with detail in e. */
int controllers_register(struct manager *m, const struct controllers_opts *opts, struct err *e);

#endif
