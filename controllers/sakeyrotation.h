#ifndef NESTCP_CONTROLLERS_SAKEYROTATION_H
#define NESTCP_CONTROLLERS_SAKEYROTATION_H

/*
 * The rotation of a control plane's service-account signing key: a pure function from what
 * the Secret <c>-sa holds, what the control plane's status recorded and whether the
 * components run what the Secrets imply, to the one next step (docs/certificates.md).
 *
 *   request   spec.certificates.rotate.serviceAccountKey changes (status records the value
 *             last taken up); refused while a version change rolls out, while another
 *             rotation runs, and for a <c>-sa that nestcp did not make; taken up once that
 *             has passed
 *   start     next.pub/next.key are added to <c>-sa
 *   phase 1   TrustingNewKey: the API servers roll to verify tokens with both public keys
 *             (sa.pub holds both), still signing with the old key
 *   switch    once that roll is complete: in one write, tls.crt/tls.key become the new
 *             pair, previous.pub the old public key, next.* go
 *   phase 2   SigningWithNewKey: the API servers, then the controller manager, roll to sign
 *             with the new key (a normal ordered roll: controllers/rollout.h)
 *   overlap   once that roll is complete status records signingSince; tokens signed by the
 *             old key stay valid until signingSince + rotationOverlapSeconds
 *   phase 3   DroppingOldKey: previous.pub goes; the API servers roll without it
 *   complete  once that roll is complete
 *
 * Each transition is one write of <c>-sa (resourceVersion-conditional) or of the status, so
 * nothing is half done, and `nestcp render` given the Secrets renders the current phase.
 */

#include <stdbool.h>
#include <stdint.h>

#include "controllers/rotation.h"

/* status.certificates.serviceAccountKey.phase values. */
#define SAKEY_PHASE_TRUSTING "TrustingNewKey"
#define SAKEY_PHASE_SIGNING "SigningWithNewKey"
#define SAKEY_PHASE_OVERLAP "Overlap"
#define SAKEY_PHASE_DROPPING "DroppingOldKey"
#define SAKEY_PHASE_COMPLETE ROTATION_PHASE_COMPLETE

/* The condition this machine sets on the control plane. */
#define SAKEY_CONDITION "CertificatesRotating"

struct sakey_input {
    const char *requested; /* spec.certificates.rotate.serviceAccountKey; NULL or "": none */
    const char *taken;     /* status ... .rotation: the request last taken up; NULL: none */
    const char *phase;     /* status ... .phase; NULL: none */
    int64_t signing_since; /* status ... .signingSince, seconds since the epoch; 0: unset */
    bool has_next;         /* <c>-sa holds next.pub and next.key */
    bool has_previous;     /* <c>-sa holds previous.pub */
    bool owned;            /* <c>-sa is the control plane's (nestcp made it) */
    bool initialized;      /* the control plane was complete once */
    bool rolled;           /* every component runs the configuration the Secrets imply, all ready */
    bool upgrading;        /* a version change is rolling out or held back */
    const char *busy;      /* another rotation runs: what it rotates ("the etcd CA"); NULL: none */
    int64_t overlap;       /* spec ... .rotationOverlapSeconds */
    int64_t now;           /* seconds since the epoch */
};

enum sakey_action {
    SAKEY_NONE,
    SAKEY_TAKE,     /* record the request as taken up without a rotation (the key is new) */
    SAKEY_START,    /* add next.pub/next.key to <c>-sa, record the request */
    SAKEY_SWITCH,   /* <c>-sa: tls.* := next.*, previous.pub := the old tls.crt, no next.* */
    SAKEY_SIGNED,   /* record signingSince = now */
    SAKEY_DROP,     /* remove previous.pub from <c>-sa */
    SAKEY_COMPLETE, /* record the phase Complete */
};

struct sakey_output {
    enum sakey_action action;
    const char *phase; /* the status phase after the action; NULL: leave it */
    /* The CertificatesRotating condition; none when reason is NULL (never asked for). */
    bool rotating;       /* status True */
    const char *reason;  /* the phase, "Complete", or a refusal */
    const char *refusal; /* "UpgradeInProgress", "RotationInProgress",
                            "ServiceAccountKeySupplied", or NULL */
    char message[ROTATION_MESSAGE_MAX];
    /* An Event of what the action did (recorded after it succeeded); NULL: none. */
    const char *event_reason;
    char event_message[512];
    int64_t drop_after;   /* signingSince + overlap once known, else 0 */
    double requeue_after; /* seconds; 0: none (a roll's progress brings the next reconcile) */
};

/* True when the rotation state says a rotation of the key runs. */
bool sakey_running(const struct sakey_input *in);

/* Decides the next step. Never fails. */
void sakey_rotation_step(const struct sakey_input *in, struct sakey_output *out);

#endif
