#ifndef NESTCP_CONTROLLERS_ROTATION_H
#define NESTCP_CONTROLLERS_ROTATION_H

/* What the rotations of the service-account key (controllers/sakeyrotation.h) and of the CAs
 * (controllers/carotation.h) decide alike. */

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* The phase every rotation ends in. */
#define ROTATION_PHASE_COMPLETE "Complete"

/* The size of a rotation's condition message. */
#define ROTATION_MESSAGE_MAX 512

/* A request not yet taken up: set, and not the one taken up last. */
static inline bool rotation_pending(const char *requested, const char *taken)
{
    return requested && requested[0] && (!taken || strcmp(requested, taken) != 0);
}

/* A recorded phase that says a rotation runs: set, and not Complete. */
static inline bool rotation_phase_running(const char *phase)
{
    return phase && phase[0] && strcmp(phase, ROTATION_PHASE_COMPLETE) != 0;
}

/* How the messages name a rotation: "<what> rotation \"<request>\"" ("cluster CA rotation
 * \"r1\""), or "rotation \"<request>\"" when what is NULL; where a rotation of something else is
 * named beside it, followed by " of <of>" unless of is NULL ("rotation \"r1\" of the
 * service-account key is refused while the rotation of the etcd CA runs"). */
struct rotation_subject {
    const char *what; /* "cluster CA", or NULL */
    const char *of;   /* "the service-account key", or NULL */
};

/* A request and what may hold it back. */
struct rotation_request {
    const char *requested; /* the request; NULL or "": none */
    const char *taken;     /* the request last taken up; NULL: none */
    bool upgrading;        /* a version change is rolling out or held back */
    const char *busy;      /* another rotation runs: what it rotates ("the etcd CA"); NULL: none */
    bool rolled;           /* every component runs what the Secrets imply, all ready */
};

/* Why a request does not start now, for the CertificatesRotating condition. */
struct rotation_hold {
    const char *reason;  /* "UpgradeInProgress", "RotationInProgress" or "WaitingForRollout" */
    const char *refusal; /* the reason when the request is refused; NULL when it only waits */
};

/* The gate before a pending request starts a rotation, when none of this kind runs: one
 * change at a time. The request is refused while a version change rolls out
 * (UpgradeInProgress) or another rotation runs (RotationInProgress), and waits while any
 * other rollout runs (WaitingForRollout). Returns false when it may start now; true when it
 * is held, with *ret_hold and message (size bytes) saying why. */
bool rotation_gate(const struct rotation_subject *who, const struct rotation_request *rq,
                   char *message, size_t size, struct rotation_hold *ret_hold);

/* A request made while a rotation of the same kind runs waits for it. message holds the
 * running rotation's progress (ROTATION_MESSAGE_MAX bytes). Returns false when no request is
 * pending; true when one is refused (RotationInProgress), with *ret_hold set and the refusal
 * put before the progress in message. */
bool rotation_refuse_second(const struct rotation_subject *who, const struct rotation_request *rq,
                            char message[static ROTATION_MESSAGE_MAX],
                            struct rotation_hold *ret_hold);

#endif
