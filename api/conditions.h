#ifndef NESTCP_API_CONDITIONS_H
#define NESTCP_API_CONDITIONS_H

/*
 * Status conditions (type, status, reason, message, lastTransitionTime, observedGeneration),
 * kept in one order so status JSON is deterministic: Ready first, then by type.
 */

#include <stdbool.h>
#include <stdint.h>

#include "api/types.h"

#define API_CONDITION_TRUE "True"
#define API_CONDITION_FALSE "False"
#define API_CONDITION_UNKNOWN "Unknown"

/* The condition of that type, or NULL. */
const struct api_condition *api_conditions_get(const struct api_conditions *cs, const char *type);

/* True when the condition exists with status True. */
bool api_conditions_is_true(const struct api_conditions *cs, const char *type);

/* Sets a condition. lastTransitionTime becomes `now` (seconds since the epoch) only when the
 * condition is new or its status changes, so setting the same values again changes nothing.
 * reason and message may be NULL. Returns 1 when anything changed, 0 when nothing did, or
 * -ENOMEM (the list is then unchanged). */
int api_conditions_set(struct api_conditions *cs, const char *type, const char *status,
                       const char *reason, const char *message, int64_t observed_generation,
                       double now);

/* Removes the condition of that type; returns 1 when one was removed, else 0. */
int api_conditions_remove(struct api_conditions *cs, const char *type);

#endif
