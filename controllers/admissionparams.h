#ifndef NESTCP_CONTROLLERS_ADMISSIONPARAMS_H
#define NESTCP_CONTROLLERS_ADMISSIONPARAMS_H

/*
 * Keeps the parameters of config/admission's ValidatingAdmissionPolicy, a ConfigMap in the
 * manager's namespace, equal to what the package catalog knows (lib/render/admission.h): one
 * key, reconciled when the manager starts, at every resync, and whenever the ConfigMap changes
 * or goes away; server-side applied when its labels or data differ. It writes no other object.
 */

#include "controllers/caches.h"

struct render_catalog;

struct admissionparams {
    char ns[256], name[256];
    cJSON *desired; /* the ConfigMap as render_admission_params makes it */
};

/* Builds what the controller applies: the ConfigMap ns/name of cat. Returns 0, -EINVAL (an
 * empty namespace or name; e names it), -ENOMEM. */
int admissionparams_init(struct admissionparams *ap, const struct render_catalog *cat,
                         const char *ns, const char *name, struct err *e);
void admissionparams_done(struct admissionparams *ap);

/* The controller "admissionparams" (primary: ConfigMaps); ap is borrowed. */
void admissionparams_def(struct admissionparams *ap, struct reconciler_def *ret_def);

#endif
