#ifndef NESTCP_CONTROLLERS_BRAKE_H
#define NESTCP_CONTROLLERS_BRAKE_H

/*
 * The fleet-wide brake on rollouts (`nestcp manager --max-concurrent-rollouts`): how many
 * control planes may roll at once, and which waiting one goes next. A pure function of what
 * the caches show of every control plane, so that the count is the same after a restart or on
 * a new leader (docs/upgrades.md, "The brake").
 *
 *   - A control plane rolls from the moment a target of an initialized control plane moves
 *     until every component has completed at its target: its Upgrading condition is True with
 *     reason RollingOut. It holds its slot through every wave of that roll.
 *   - One that would start a roll while as many roll as the limit allows waits: Upgrading True,
 *     reason RolloutQueued, set when it started to wait (lastTransitionTime).
 *   - The waiting ones go oldest request first: by the time they started to wait, then
 *     namespace and name. One that is paused or being deleted keeps nobody waiting.
 *   - Never wait: the creation of a control plane (not a roll), and a roll that renews a
 *     certificate expiring within BRAKE_URGENT_SECONDS (it takes a slot, even past the limit).
 */

#include <stdbool.h>
#include <stddef.h>

/* A roll that renews a certificate expiring within this never waits: 7 days. */
#define BRAKE_URGENT_SECONDS (7 * 24 * 3600.0)

/* The Upgrading condition's reasons the brake reads and sets. */
#define BRAKE_REASON_ROLLING "RollingOut"
#define BRAKE_REASON_QUEUED "RolloutQueued"

/* --max-concurrent-rollouts: a count ("10") or a percentage of the control planes ("10%"). */
struct brake_limit {
    int value;
    bool percent;
};

/* Parses "N" (1 or more) or "P%" (1 to 100). Returns 0, or -EINVAL. */
int brake_limit_parse(const char *s, struct brake_limit *ret_limit);

/* The number of control planes that may roll at once out of total: the count, or the
 * percentage of total rounded down; at least 1. */
int brake_limit_resolve(const struct brake_limit *limit, size_t total);

/* Another control plane, as the caches show it. */
struct brake_peer {
    const char *ns, *name;
    bool rolling;        /* holds a slot */
    bool queued;         /* waits (and is neither paused nor being deleted) */
    double queued_since; /* when it started to wait, seconds since the epoch */
};

struct brake_input {
    const char *ns, *name;          /* the control plane that would start a roll */
    bool rolling;                   /* it holds a slot already (a later wave of its roll) */
    bool urgent;                    /* the roll renews a certificate expiring within BRAKE_URGENT */
    double queued_since;            /* when it started to wait; now when it does not wait yet */
    const struct brake_peer *peers; /* every other control plane */
    size_t n_peers;
    int limit; /* brake_limit_resolve */
};

struct brake_output {
    bool go;     /* the roll may start */
    int rolling; /* peers holding a slot */
    int ahead;   /* peers waiting ahead of this one */
    /* "waiting for a rollout slot: 1 control plane rolling (ns/a), 1 allowed at once ...":
     * the first BRAKE_NAMES_SHOWN rolling ones are named. */
    char message[448];
};

#define BRAKE_NAMES_SHOWN 3

/* Decides whether the roll may start now. Never fails. */
void brake_decide(const struct brake_input *in, struct brake_output *out);

#endif
