#include "controllers/controllers.h"

#include "controllers/runtime.h"

/*
 * Where the five reconcilers (nestedcluster, nestedcontrolplane, nestedetcd, nestedapiserver,
 * nestedcontrollermanager) are added to the manager. Until they are, the manager runs with
 * none: its caches sync and its health and metrics endpoints answer, and nothing is
 * reconciled.
 */
int controllers_register(struct manager *m, const struct controllers_opts *opts, struct err *e)
{
    return 0;
}
