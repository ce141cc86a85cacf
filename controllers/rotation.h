#ifndef NESTCP_CONTROLLERS_ROTATION_H
#define NESTCP_CONTROLLERS_ROTATION_H

/* What the rotations of the service-account key (controllers/sakeyrotation.h) and of the CAs
 * (controllers/carotation.h) decide alike. */

#include <stdbool.h>
#include <string.h>

/* The phase every rotation ends in. */
#define ROTATION_PHASE_COMPLETE "Complete"

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

#endif
