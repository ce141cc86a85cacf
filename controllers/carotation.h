#ifndef NESTCP_CONTROLLERS_CAROTATION_H
#define NESTCP_CONTROLLERS_CAROTATION_H

/*
 * The rotation of one of a control plane's CAs (the cluster CA, the etcd CA, the front-proxy
 * CA) with dual trust: a pure function from what the CA Secret holds, what the control
 * plane's status recorded and whether the components run what the Secrets imply, to the one
 * next step (docs/certificates.md, "Rotating a CA").
 *
 *   request   spec.certificates.rotate.<ca> changes (status records the value last taken
 *             up); refused while a version change rolls out, while another rotation runs
 *             (of any CA or of the service-account key), and for a CA nestcp did not make
 *   start     next.crt/next.key (a new CA) are added to the Secret
 *   phase 1   TrustingNewCA: every component rolls to trust the old and the new CA; every
 *             certificate is still issued from the old one
 *   switch    in one write: tls.* become the new CA, previous.crt/previous.key the old one
 *   phase 2   IssuingFromNewCA: client certificates and kubeconfigs are issued from the new
 *             CA, serving certificates still from the old one (kept by previous.key), so a
 *             client that trusts only the old CA still verifies every server
 *   serve     previous.key goes
 *   phase 3   ServingFromNewCA: serving certificates are issued from the new CA
 *   drop      previous.crt goes
 *   phase 4   DroppingOldCA: every component rolls to trust only the new CA
 *   complete  once that roll is complete
 *
 * Every phase ends when every component runs it (etcd, then the API servers, then the
 * controller manager: the normal ordered roll). Each transition is one write of the Secret
 * (resourceVersion-conditional) or of the status, and `nestcp render` given the Secrets
 * renders the current phase.
 */

#include <stdbool.h>

#include "controllers/rotation.h"

#define CAROT_PHASE_TRUSTING "TrustingNewCA"
#define CAROT_PHASE_ISSUING "IssuingFromNewCA"
#define CAROT_PHASE_SERVING "ServingFromNewCA"
#define CAROT_PHASE_DROPPING "DroppingOldCA"
#define CAROT_PHASE_COMPLETE ROTATION_PHASE_COMPLETE

/* Which CA: its name in messages and the prefix of its Events and refusals. */
struct carot_kind {
    const char *what;         /* "cluster CA" */
    const char *event_prefix; /* "ClusterCA": ClusterCARotationStarted, ... */
};

struct carot_input {
    const struct carot_kind *kind;
    const char *requested; /* spec.certificates.rotate.<ca>; NULL or "": none */
    const char *taken;     /* the request last taken up; NULL: none */
    const char *phase;     /* status phase; NULL: none */
    bool has_next;         /* the Secret holds next.crt and next.key */
    bool has_previous;     /* previous.crt */
    bool has_previous_key; /* previous.key */
    bool owned;            /* the Secret is the control plane's (nestcp made it) */
    bool initialized;      /* the control plane was complete once */
    bool rolled;           /* every component runs what the Secrets imply, all ready */
    bool upgrading;        /* a version change is rolling out or held back */
    const char *busy;      /* another rotation runs: what it is ("the etcd CA"); NULL: none */
};

enum carot_action {
    CAROT_NONE,
    CAROT_TAKE,     /* record the request as taken up without a rotation (the CA is new) */
    CAROT_START,    /* add next.crt/next.key to the Secret, record the request */
    CAROT_SWITCH,   /* tls.* := next.*, previous.* := the old tls.*, no next.* */
    CAROT_SERVE,    /* remove previous.key */
    CAROT_DROP,     /* remove previous.crt */
    CAROT_COMPLETE, /* record the phase Complete */
};

struct carot_output {
    enum carot_action action;
    const char *phase; /* the status phase after the action; NULL: leave it */
    /* For the CertificatesRotating condition; nothing to say when reason is NULL. */
    bool rotating;       /* a rotation of this CA runs */
    const char *reason;  /* the phase, "Complete", "WaitingForRollout" or a refusal */
    const char *refusal; /* "UpgradeInProgress", "RotationInProgress",
                            "CertificateAuthoritySupplied", or NULL */
    char message[ROTATION_MESSAGE_MAX];
    /* An Event of what the action did (recorded after it succeeded); NULL: none. */
    char event_reason[64];
    char event_message[512];
};

/* True when the rotation state says a rotation of this CA runs. */
bool carot_running(const struct carot_input *in);

/* Decides the next step. Never fails. */
void carot_step(const struct carot_input *in, struct carot_output *out);

#endif
