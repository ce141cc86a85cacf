#include "controllers/rotation.h"

#include <stdio.h>

#include "lib/util/strutil.h"

/* "cluster CA rotation \"r1\"": the longest kind's name, the words and a request of 63. */
#define NAME_SIZE 128

static void name_of(const struct rotation_subject *who, const char *request, char out[NAME_SIZE])
{
    str_printf(out, NAME_SIZE, "%s%srotation \"%.63s\"", who->what ? who->what : "",
               who->what ? " " : "", request ? request : "");
}

bool rotation_gate(const struct rotation_subject *who, const struct rotation_request *rq,
                   char *message, size_t size, struct rotation_hold *ret_hold)
{
    char name[NAME_SIZE];

    name_of(who, rq->requested, name);
    if (rq->upgrading) {
        str_printf(message, size,
                   "%s is refused while a version change rolls out; it starts when every "
                   "component runs its desired version",
                   name);
        *ret_hold = (struct rotation_hold){"UpgradeInProgress", "UpgradeInProgress"};
        return true;
    }
    if (rq->busy) {
        str_printf(message, size,
                   "%s%s%s is refused while the rotation of %s runs; it starts when that one is "
                   "complete",
                   name, who->of ? " of " : "", who->of ? who->of : "", rq->busy);
        *ret_hold = (struct rotation_hold){"RotationInProgress", "RotationInProgress"};
        return true;
    }
    if (!rq->rolled) {
        str_printf(message, size, "%s waits for the rollout in progress to complete", name);
        *ret_hold = (struct rotation_hold){"WaitingForRollout", NULL};
        return true;
    }
    return false;
}

bool rotation_refuse_second(const struct rotation_subject *who, const struct rotation_request *rq,
                            char message[static ROTATION_MESSAGE_MAX],
                            struct rotation_hold *ret_hold)
{
    char name[NAME_SIZE], progress[ROTATION_MESSAGE_MAX];

    if (!rotation_pending(rq->requested, rq->taken))
        return false;
    name_of(who, rq->requested, name);
    snprintf(progress, sizeof(progress), "%s", message);
    str_printf(message, ROTATION_MESSAGE_MAX,
               "%s is refused while rotation \"%.63s\" runs; it starts when that one is "
               "complete. %s",
               name, rq->taken ? rq->taken : "", progress);
    *ret_hold = (struct rotation_hold){"RotationInProgress", "RotationInProgress"};
    return true;
}
