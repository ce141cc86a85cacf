#include "api/conditions.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util/strutil.h"

/* Ready first, then by type. */
static int order(const char *a, const char *b)
{
    bool ra = strcmp(a, "Ready") == 0, rb = strcmp(b, "Ready") == 0;

    if (ra || rb)
        return rb - ra;
    return strcmp(a, b);
}

static void condition_done(struct api_condition *c)
{
    free(c->type);
    free(c->status);
    free(c->severity);
    free(c->reason);
    free(c->message);
    free(c->last_transition_time);
    memset(c, 0, sizeof(*c));
}

static bool same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

const struct api_condition *api_conditions_get(const struct api_conditions *cs, const char *type)
{
    for (size_t i = 0; i < cs->n; i++)
        if (cs->items[i].type && strcmp(cs->items[i].type, type) == 0)
            return &cs->items[i];
    return NULL;
}

bool api_conditions_is_true(const struct api_conditions *cs, const char *type)
{
    const struct api_condition *c = api_conditions_get(cs, type);

    return c && c->status && strcmp(c->status, API_CONDITION_TRUE) == 0;
}

int api_conditions_set(struct api_conditions *cs, const char *type, const char *status,
                       const char *reason, const char *message, int64_t observed_generation,
                       double now)
{
    struct api_condition *c = (struct api_condition *)api_conditions_get(cs, type);
    struct api_condition n = {0};
    bool transition;
    char ts[32];
    size_t at;

    if (c && same(c->status, status) && same(c->reason, reason) && same(c->message, message) &&
        c->observed_generation == observed_generation)
        return 0;
    transition = !c || !same(c->status, status) || !c->last_transition_time;
    time_format_rfc3339(now, ts);
    n.type = str_dup(type);
    n.status = str_dup(status);
    n.reason = str_dup(reason);
    n.message = str_dup(message);
    n.severity = transition || !c ? NULL : str_dup(c->severity);
    n.last_transition_time = str_dup(transition ? ts : c->last_transition_time);
    n.observed_generation = observed_generation;
    if (!n.type || !n.status || (reason && !n.reason) || (message && !n.message) ||
        !n.last_transition_time || (!transition && c->severity && !n.severity)) {
        condition_done(&n);
        return -ENOMEM;
    }
    if (c) {
        condition_done(c);
        *c = n;
        return 1;
    }
    struct api_condition *grown = realloc(cs->items, (cs->n + 1) * sizeof(*grown));
    if (!grown) {
        condition_done(&n);
        return -ENOMEM;
    }
    cs->items = grown;
    for (at = 0; at < cs->n; at++)
        if (cs->items[at].type && order(type, cs->items[at].type) < 0)
            break;
    memmove(&cs->items[at + 1], &cs->items[at], (cs->n - at) * sizeof(*cs->items));
    cs->items[at] = n;
    cs->n++;
    return 1;
}

int api_conditions_remove(struct api_conditions *cs, const char *type)
{
    struct api_condition *c = (struct api_condition *)api_conditions_get(cs, type);
    size_t i;

    if (!c)
        return 0;
    i = (size_t)(c - cs->items);
    condition_done(c);
    memmove(c, c + 1, (cs->n - i - 1) * sizeof(*c));
    cs->n--;
    return 1;
}
